"""Who may see and do what: roles, the access helper every view calls, API tokens, login
throttling.
"""
