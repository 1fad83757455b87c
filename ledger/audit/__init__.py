"""Audit of the log itself: signed checkpoints of the chain head (checkpoints), the commands that initialise,
verify, page and replay the log (handlers) and what they return (report).
"""
