"""Memory search: the derived full-text index of the log's memory blocks (``index``), its tables (``schema``),
the ranking of a query against it (``ranking``) and its fusion with the embeddings' ranking (``fusion``,
``hybrid``).

:class:`SearchIndex` loads on first use: the index needs SQLAlchemy and the store, and a report model that names a
:class:`Hit` (on the path of ``compliance-ledger mcp``'s ``initialize`` answer) does not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.search.ranking import Hit
from projections.search.schema import CHECKPOINT, TOKENIZE, TS_CONFIG

if TYPE_CHECKING:
    from projections.search.index import SearchIndex

__all__ = ["CHECKPOINT", "TOKENIZE", "TS_CONFIG", "Hit", "SearchIndex"]


def __getattr__(name: str) -> Any:
    if name == "SearchIndex":
        from projections.search.index import SearchIndex

        return SearchIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
