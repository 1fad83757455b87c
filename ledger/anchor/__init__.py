"""Odyssean Anchor proofs: the pure proof validator (proof), the anchor decisions over a session (decisions), the
challenges (challenge) and the anchor commands (handlers); the project context they check against is read by
``ledger.sessions.project``, below.
"""
