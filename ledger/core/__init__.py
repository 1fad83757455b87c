"""The ground floor: the event vocabulary and its inventory of text, canonical JSON, the hash chain, the mapper,
the clock, errors, limits, the credential scan, signing keys and the event store. Nothing here imports a higher
layer.
"""
