"""REST adapter (FastAPI): ``app`` composes one router module per capability; ``context`` is what they share."""
