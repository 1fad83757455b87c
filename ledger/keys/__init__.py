"""API keys: the key ring's pure decisions (decisions) and the key commands (handlers). Who may do what with each
role is a ground-floor rule (``ledger.core.access``): the kernel's append door applies it too.
"""
