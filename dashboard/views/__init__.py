"""The console's pages, one module per page; every Redis access goes through the queues
core, every view through ``access.guard.place_for``."""
