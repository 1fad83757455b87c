"""Workflow tasks with DNA gates: the transition table and its pure decisions (decisions), the table's file
(table) and the task commands (handlers).
"""
