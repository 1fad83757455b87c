"""The ledger's own errors. Adapters map them to MCP tool errors, HTTP statuses and CLI exit codes."""


class LedgerError(Exception):
    """Base class: a machine-readable ``code``, a message for people and a ``hint`` saying what to do."""

    code = "ledger_error"
    status = 500
    retry_after: int | None = None  # seconds after which the same request may succeed (REST ``Retry-After``)

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


class InvalidInput(LedgerError):
    """The caller sent something malformed or out of bounds; nothing was recorded."""

    code = "invalid_input"
    status = 422


class NotFound(LedgerError):
    """The named thing (session, event, ...) is not in the ledger."""

    code = "not_found"
    status = 404


class Forbidden(LedgerError):
    """The caller may not act on the named thing (e.g. another agent's session)."""

    code = "forbidden"
    status = 403


class Unauthorized(LedgerError):
    """No credential, or a credential the ledger does not know."""

    code = "unauthorized"
    status = 401


class Conflict(LedgerError):
    """The request is well formed but contradicts the ledger's state (e.g. a closed session)."""

    code = "conflict"
    status = 409


class SessionLocked(Conflict):
    """The session's anchor is locked after too many failed attempts: nothing more is done in it until a person
    unlocks it (seed 001: "block further action (human intervention required)")."""

    code = "anchor_locked"


class ConcurrencyError(Conflict):
    """Another writer appended to the stream first: ``expected_version`` no longer holds."""

    code = "concurrency_conflict"

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r} is at version {actual}, not the expected {expected}",
            "re-load the stream, decide again and retry",
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class StoreUnavailable(LedgerError):
    """The event store cannot be reached; every gate stays closed."""

    code = "store_unavailable"
    status = 503


class NotInitialised(LedgerError):
    """The database has no ledger schema or the receipt key is missing."""

    code = "not_initialised"
    status = 503


class StoreBusy(StoreUnavailable):
    """The ledger's write lock (or a statement) did not come free within the configured timeout; nothing was
    recorded, so the same request can simply be sent again."""

    code = "store_busy"
    status = 503
    retry_after = 1  # seconds: what REST sends as ``Retry-After``


class StoreRefused(StoreUnavailable):
    """The database refused the ledger's write or read (no privilege, a read-only database or transaction); the
    gates stay closed and nothing was recorded."""

    code = "store_refused"
    status = 503


class IntegrityViolation(LedgerError):
    """The log holds something the ledger did not write: a row whose authenticator is missing or wrong, or a
    transparency-log tree that does not match the log. Nothing is decided on it and nothing is chained after it
    (every gate fails closed); ``position`` names the first bad event when there is one."""

    code = "integrity_violation"
    status = 500

    def __init__(self, message: str, hint: str = "", position: int | None = None) -> None:
        super().__init__(message, hint)
        self.position = position


class SecretInText(InvalidInput):
    """A text the caller sent holds a credential (``LEDGER_SECRET_SCAN=refuse``): nothing was recorded. ``found``
    says where, as ``(path, kind, line, column)`` — never the secret itself."""

    code = "secret_in_text"
    status = 422

    def __init__(self, message: str, hint: str, found: tuple[tuple[str, str, int, int], ...]) -> None:
        super().__init__(message, hint)
        self.found = found


class Erased(LedgerError):
    """The named thing (a memory block) was erased: its text is gone for good. The message says by whom, when and
    why; REST answers 410 Gone."""

    code = "erased"
    status = 410

    def __init__(self, message: str, hint: str, *, by: str, at: str, reason: str) -> None:
        super().__init__(message, hint)
        self.by = by
        self.at = at
        self.reason = reason
