"""Helpers and fixtures that more than one test folder uses: plain modules, imported as
``support.<module>`` (tests/ is on the path, as for ``workers``). The fixture modules
(console_fixtures, snapshot_fixtures, pipeline_fixtures) are loaded once for the whole
session by tests/conftest.py; everything else is imported where it is used."""
