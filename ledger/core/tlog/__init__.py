"""The transparency log: an RFC 6962 / RFC 9162 Merkle tree over the event log, C2SP signed notes and checkpoints,
cosignatures and proof bundles (c2sp.org/tlog-checkpoint, signed-note, tlog-cosignature, tlog-proof).

Pure code: bytes in, bytes out, no database and no clock. The store keeps the tree's hashes
(:mod:`ledger.core.tlog.merkle`'s stored-hash layout) and the audit capability signs and serves checkpoints.
"""
