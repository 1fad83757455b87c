"""``python -m api`` runs the ``compliance-ledger`` command."""

from api.cli import main

main()
