"""The ground floor: the event vocabulary, canonical JSON, the hash chain, the mapper, the clock, errors, limits,
signing keys and the event store. Nothing here imports a higher layer.
"""
