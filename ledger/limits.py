"""Bounds every interface applies to integers before they reach the store.

Positions, versions and counts are 64-bit signed integers in both stores (SQLite INTEGER, PostgreSQL BIGINT);
a larger number given as a query, body or command-line parameter is refused as invalid input naming the
parameter, never passed on to a driver that cannot bind it.
"""

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
