"""What operators do to queues and messages: the action table, bulk jobs, undo, export and
import, the message filter they act on.
"""
