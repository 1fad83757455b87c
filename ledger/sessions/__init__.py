"""Sessions and the gate: session decisions, the search-then-assert gate, one-time stamps and their receipts, and
the session commands.
"""
