"""What every web request meets: the one error table, the error pages' middleware, secrets kept
out of reports, htmx's request type.
"""
