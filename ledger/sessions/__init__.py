"""Sessions and the gate: session decisions, the search-then-assert gate, one-time stamps and their receipts, the
session grants every capability above acts through, the anchor lock they enforce (locks), the project context read
at clock-in (project), and the session commands.
"""
