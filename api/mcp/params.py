"""Arguments as MCP tools describe them where the transport changes what to send: a session id may be left out
over stdio, where the server opened a session for its agent at start (the rest are in :mod:`api.fields`)."""

from __future__ import annotations

from api.fields import SESSION_ID_FORM, session_id_field

SESSION_ID = session_id_field(
    f"the session_id clock_in returned ({SESSION_ID_FORM}); over stdio omit it to act in the session the server "
    "opened for you at start"
)
OPTIONAL_SESSION_ID = session_id_field(
    f"the session_id clock_in returned ({SESSION_ID_FORM}), to record this in that session; omitted: the session "
    "the server opened for you at start (stdio), else none"
)
BRAIN_SESSION_ID = session_id_field(
    "a session_id from an earlier answer (trace.session_id) to continue the conversation; "
    "omitted: your default session over stdio, else a new session is opened"
)
