"""Client hooks: the turn a user's prompt starts and the Stop hook's answer, which holds an agent at the gate until
it earned a stamp in that turn (decisions), recorded as events (handlers), with what they return (report).
"""
