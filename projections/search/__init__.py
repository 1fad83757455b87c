"""Memory search: the derived full-text index of the log's memory blocks (``index``), its tables (``schema``),
the ranking of a query against it (``ranking``) and its fusion with the embeddings' ranking (``fusion``,
``hybrid``)."""

from projections.search.index import SearchIndex
from projections.search.ranking import Hit
from projections.search.schema import CHECKPOINT, TOKENIZE, TS_CONFIG

__all__ = ["CHECKPOINT", "TOKENIZE", "TS_CONFIG", "Hit", "SearchIndex"]
