"""The ground floor: the event vocabulary and its inventory of text, canonical JSON, the hash chain, the mapper, the
clock, errors, limits, the role rules, the credential scan, the signing and receipt keys, the YAML resource loader
and the event store. Nothing here imports a higher layer.
"""
