"""The session's fixtures for the client's own tests where only the client is installed.

tests/core/test_lowest_redis.py runs some tests/core files in a virtualenv that holds the
client alone (no Django): with ``pytest --noconftest -p support.client_fixtures``, since
tests/conftest.py loads the console's fixtures too. The fixtures are tests/conftest.py's
own, taken from it (its hooks and plugins are not), so the two runs can't drift apart.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def _session_conftest() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("session_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_conftest = _session_conftest()
redis_server = _conftest.redis_server
redis_url = _conftest.redis_url
r = _conftest.r
ns = _conftest.ns
rsmq = _conftest.rsmq
queue = _conftest.queue
ns_state = _conftest.ns_state
redis_cluster = _conftest.redis_cluster
sentinel_group = _conftest.sentinel_group
logged = _conftest.logged
