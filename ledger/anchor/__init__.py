"""Odyssean Anchor proofs: the pure proof validator (proof), the anchor decisions over a session (decisions) and
the authoritative project context (project).
"""
