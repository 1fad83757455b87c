"""Database driver errors translated into the ledger's own (STYLE 7), by SQLSTATE on PostgreSQL and result code
on SQLite."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from ledger.core.errors import (
    Conflict,
    InvalidInput,
    LedgerError,
    NotInitialised,
    StoreBusy,
    StoreRefused,
    StoreUnavailable,
)


def _psycopg() -> Any:
    """The psycopg module if this process loaded it (it has, whenever a PostgreSQL error exists), else ``None``:
    the SQLite path never imports PostgreSQL's driver."""
    return sys.modules.get("psycopg")


# SQLSTATE classes and codes (PostgreSQL), see https://www.postgresql.org/docs/current/errcodes-appendix.html.
_PG_BUSY = {"55P03", "57014", "40001", "40P01"}  # lock_not_available, query_canceled (statement_timeout), ...
_PG_REFUSED = {"42501", "25006"}  # insufficient_privilege, read_only_sql_transaction
_PG_REFUSED_CLASSES = {"28"}  # invalid authorization
_PG_UNAVAILABLE_CLASSES = {"08", "53", "57", "58"}  # connection, resources, operator intervention, system
_PG_NOT_INITIALISED = {"42P01", "3F000"}  # undefined_table, invalid_schema_name
_OLDER_HINT = "run `compliance-ledger init` (or `compliance-ledger migrate`) once, with the same --db / --home"
# SQLite primary result codes (the low byte of ``sqlite_errorcode``).
_SQLITE_BUSY = {5, 6}  # SQLITE_BUSY "database is locked", SQLITE_LOCKED
_SQLITE_REFUSED = {3, 8, 23}  # SQLITE_PERM, SQLITE_READONLY "attempt to write a readonly database", SQLITE_AUTH
_SQLITE_DATA = {18, 20, 25}  # SQLITE_TOOBIG, SQLITE_MISMATCH, SQLITE_RANGE

_BUSY_HINT = "the ledger is busy (its write lock is held); nothing was recorded: send the same request again"
_REFUSED_HINT = (
    "the database refused the ledger's user (a read-only database or a role without the privilege); nothing "
    "was recorded: give the ledger's database user read and write access"
)


def classify_driver_error(exc: BaseException, dialect: str) -> LedgerError | None:
    """THE mapping from a database driver's error to the ledger's own (STYLE 7); ``None`` when ``exc`` is not a
    driver error this store knows how to read (it is then re-raised as it is).

    PostgreSQL by SQLSTATE: a lock or statement timeout is :class:`StoreBusy`; connection, resource and
    operator-intervention classes are :class:`StoreUnavailable`; privilege and read-only refusals are
    :class:`StoreRefused` (all 503: the gates fail closed); data exceptions (class 22) are :class:`InvalidInput`;
    integrity violations :class:`Conflict`. SQLite by its result code, the same way.
    """
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc).strip()
        if code in _SQLITE_BUSY:
            return StoreBusy(f"SQLite store busy: {text}", _BUSY_HINT)
        if code in _SQLITE_REFUSED:
            return StoreRefused(f"SQLite store refused the operation: {text}", _REFUSED_HINT)
        if isinstance(exc, sqlite3.IntegrityError):
            return Conflict(f"the store rejected the write: {text}", "re-load and retry")
        if code in _SQLITE_DATA or isinstance(exc, sqlite3.DataError):
            return InvalidInput(f"the store cannot hold this value: {text}", "send a smaller or simpler value")
        if isinstance(exc, sqlite3.OperationalError):
            if "no such table" in text:
                return NotInitialised("the database has no ledger schema", "run `compliance-ledger init`")
            if "no such column" in text:
                return NotInitialised(f"the ledger's schema is older than this program ({text})", _OLDER_HINT)
            return StoreUnavailable(f"SQLite store unavailable: {text}", "check the database file and disk")
        return None
    psycopg = _psycopg()
    if psycopg is None or not isinstance(exc, psycopg.Error):
        return None
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip()
    if state in _PG_BUSY:
        return StoreBusy(f"PostgreSQL store busy: {text}", _BUSY_HINT)
    if state in _PG_REFUSED or state[:2] in _PG_REFUSED_CLASSES:
        return StoreRefused(f"PostgreSQL refused the operation: {text}", _REFUSED_HINT)
    if state in _PG_NOT_INITIALISED:
        return NotInitialised("the database has no ledger schema", "run `compliance-ledger init`")
    if state == "42703":  # undefined_column
        return NotInitialised(f"the ledger's schema is older than this program ({text})", _OLDER_HINT)
    if state[:2] == "22":
        return InvalidInput(f"the store cannot hold this value: {text}", "send a smaller or simpler value")
    if state[:2] == "23":
        # Appends check versions under a lock, so this means a writer bypassed it (or the schema changed).
        return Conflict(f"the store rejected the write: {text}", "re-load and retry")
    if state[:2] in _PG_UNAVAILABLE_CLASSES or isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(f"PostgreSQL store unavailable: {text}", "check that the server is reachable")
    return None


@contextlib.contextmanager
def translate_errors(dialect: str) -> Iterator[None]:
    """Re-raise driver and SQLAlchemy errors as the ledger's own, through :func:`classify_driver_error`."""
    try:
        yield
    except LedgerError:
        raise
    except OverflowError as exc:
        # The interfaces bound integers to 64 bits (ledger.limits); this is the backstop behind them.
        raise InvalidInput(
            f"a number is beyond the 64-bit range the store holds: {exc}", "send a position or count below 2**63"
        ) from exc
    except sa.exc.SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        mapped = classify_driver_error(orig, dialect) if isinstance(orig, BaseException) else None
        if mapped is not None:
            raise mapped from exc
        if isinstance(orig, BaseException):
            raise orig from exc
        raise StoreUnavailable(f"event store error: {exc}", "check the database URL and server") from exc
    except Exception as exc:
        mapped = classify_driver_error(exc, dialect)
        if mapped is None:
            raise
        raise mapped from exc
