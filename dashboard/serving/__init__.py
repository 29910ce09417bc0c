"""How the console is served: the ASGI application, the API's fast path, what is refused before
anything runs.
"""
