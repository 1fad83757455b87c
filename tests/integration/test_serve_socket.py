"""The socket ``serve`` binds itself is a TCP socket asyncio turns Nagle off on: without ``IPPROTO_TCP`` every
small answer waited for the client's delayed ACK (about 40 ms a request, measured by scripts/bench_serve.py)."""

from __future__ import annotations

import asyncio
import socket

from api.cli.servers import _bind


def test_connections_on_the_served_socket_have_nagle_off() -> None:
    sock = _bind("127.0.0.1", 0)
    sock.listen(8)
    port = sock.getsockname()[1]
    seen: list[int] = []

    async def scenario() -> None:
        accepted = asyncio.Event()

        def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()
            accepted.set()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            await accepted.wait()
            writer.close()

    asyncio.run(scenario())
    assert seen and seen[0] != 0
