"""Worker apps run by real `rsmq worker` processes in the worker tests, and their harness.

Imported as ``support.workers`` (tests/ on the path), not ``tests.support.workers``: PyRSMQ 0.6.1
installs a top-level ``tests`` package of its own in site-packages, which shadows ours.
"""
