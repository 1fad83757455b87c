"""The shared brain: thought decisions (decisions) and the brain commands with their co-retrieval traffic (handlers)."""
