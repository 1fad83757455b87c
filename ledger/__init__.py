"""The write side of the Compliance Ledger: event vocabulary, store, hash chain, clock and decisions."""
