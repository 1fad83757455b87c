"""API keys and roles: the key ring's pure decisions (decisions), who may do what (access), and the key commands
(handlers).
"""
