"""The ``compliance-ledger`` command: ``root`` builds it from one module per command group; ``context`` and
``output`` are what the commands share."""

from api.cli.root import app, main

__all__ = ["app", "main"]
