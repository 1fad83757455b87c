"""A caller's request id (``X-Request-ID`` on every HTTP call, ``request_id`` of ``assert_compliance``): short and
plain, as it is recorded and looked up by value. Shared by the gate and every adapter."""

from __future__ import annotations

import re

from ledger.core.errors import InvalidInput

MAX_REQUEST_ID_CHARS = 128
REQUEST_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"  # also published in the MCP and REST schemas
_REQUEST_ID = re.compile(REQUEST_ID_PATTERN)
REQUEST_ID_HELP = (
    f"1 to {MAX_REQUEST_ID_CHARS} characters: letters, digits and . _ : - (starting with a letter or digit), "
    "e.g. a UUID; send the same id again only to retry the same request"
)


def check_request_id(request_id: str | None) -> str | None:
    """A caller's request id, if sent, must be short and plain (it is recorded and looked up by value)."""
    if request_id is None:
        return None
    if (
        not isinstance(request_id, str)
        or len(request_id) > MAX_REQUEST_ID_CHARS
        or not _REQUEST_ID.fullmatch(request_id)
    ):
        shown = request_id[:40] + "..." if isinstance(request_id, str) and len(request_id) > 40 else request_id
        raise InvalidInput(f"request_id {shown!r} is not a valid request id", f"send {REQUEST_ID_HELP}")
    return request_id
