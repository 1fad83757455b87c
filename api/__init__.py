"""Adapters only: one package per transport (``mcp``, ``rest``, ``cli``) and the modules they share (settings,
auth, bootstrap, params, render, responses, cors). No decision logic lives here."""
