"""Parameter enforcement: schemas and placeholders (schemas), size limits (limits), the rules file (rules) and
levels, the decision on a call (decisions), the checks recorded as events (handlers) and the report (report).
"""
