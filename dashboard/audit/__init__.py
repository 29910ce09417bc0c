"""The audit log: its rows (one per action, allowed, failed or denied) and the API's records
drained from Redis into it.
"""
