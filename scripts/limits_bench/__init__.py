"""The parts of ``scripts/bench_limits.py`` (issue 28): the seven measures and the profiles of the rows that miss."""
