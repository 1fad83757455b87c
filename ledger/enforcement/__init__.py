"""Parameter enforcement: schemas and placeholders (schemas), size limits (limits), YAML rules and levels
(decisions), the checks recorded as events (handlers) and the report (report).
"""
