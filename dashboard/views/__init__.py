"""The console's pages, one module per page; every Redis access goes through the queues
core, every view through ``place.place_for``."""
