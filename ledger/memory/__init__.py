"""Memory blocks: the pure decisions (decisions), recall frames (recall), the constitutional seed (constitution)
and the memory commands (handlers).
"""
