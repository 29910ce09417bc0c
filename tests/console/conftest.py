"""The console's view tests, one folder per surface: overview/, queue/ (the queue page and
its actions), message/ (the message page and its actions), failing/, api/, access/
(logins, roles, audit), bodies/ (who reads which bodies: masking, reveals, the observer),
alerts/, metrics/, snapshots/ (snapshots, charts, rates, the
pipeline's results), pages/ (what every page shares), robustness/ (Redis down, corrupt
records, round trips, secrets), setup/ (configuration, commands, the database, the
console on a Redis Cluster or through Sentinel).

Their fixtures: ``console``, ``login`` and the clients per role (``viewer``,
``operator``, ``admin``, ``outsider``, ``anon``, ``as_role``), ``wire`` and ``token`` are
in tests/support/console_fixtures.py; ``lake``, ``add_snapshot``, ``redis_now`` and
``broker_url`` in tests/support/snapshot_fixtures.py (both loaded by tests/conftest.py,
as the core, pipeline and serve tests use them too); ``redis_url``, ``ns``, ``rsmq`` and
``r`` in tests/conftest.py. A surface's own fixtures are in its folder's conftest.py.
"""
