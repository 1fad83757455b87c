"""Audit of the log itself: signed checkpoints of the chain head."""
