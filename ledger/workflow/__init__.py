"""Workflow tasks with DNA gates: the transition table and its pure decisions (decisions) and the task commands
(handlers).
"""
