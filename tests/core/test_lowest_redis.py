"""The client on the lowest redis-py and hiredis its dependencies allow (pyproject.toml's
``redis>=…`` and ``hiredis>=…``): installed alone (no extras) beside exactly those in a
virtualenv of its own, it passes its own tests (CLIENT_TESTS) against real Redis servers
started from the session's redis-server binary: a Redis, a Cluster, a Sentinel group.
The rest of the suite runs on the console's pins, the top of the ranges.

The virtualenv is kept between runs in pytest's cache (.pytest_cache/, keyed by Python
and the versions): a run reinstalls only the client as it is now, from a copy of the
project (so that pip's build leaves nothing in the worktree)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

import pytest
from support.parallel import exclusive

from queues.server import redis_server_binary

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]

#: tests/core files of the client's own that need nothing but the client (no Django,
#: Node or worker harness): the drivers, the async lanes and their pipelining, RESP2,
#: redis-py's internals, Cluster and Sentinel (failover included), and the operations
CLIENT_TESTS = [
    "test_redis_internals.py",
    "test_resp2.py",
    "test_connections.py",
    "test_async_client.py",
    "test_async_pipelining.py",
    "test_queues.py",
    "test_messages.py",
    "test_batches.py",
    "test_stats.py",
    "test_undo.py",
    "test_cluster.py",
    "test_sentinel.py",
    "test_sentinel_failover.py",
]
#: what running them takes besides the client, as pyproject.toml pins it
TOOLS = ("pytest", "pytest-timeout", "uvloop")


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def lowest(name: str) -> str:
    """The lowest version the client's dependencies allow of ``name``."""
    found = (re.fullmatch(rf"{name}>=([\d.]+),.*", r) for r in PROJECT["dependencies"])
    [low] = [m[1] for m in found if m]
    return low


def pinned(name: str) -> str:
    """``name``'s pin in the extras (the console's lock, the test tools)."""
    pins = {
        m[1]: m[2]
        for extra in PROJECT["optional-dependencies"].values()
        for r in extra
        if (m := re.fullmatch(r"([\w-]+)==([\w.]+)", r))
    }
    return pins[name]


@pytest.mark.parametrize("name", ["redis", "hiredis"])
def test_the_client_asks_for_a_range_and_the_console_pins_within_it(name: str) -> None:
    [requirement] = [r for r in PROJECT["dependencies"] if re.match(rf"{name}\b", r)]
    m = re.fullmatch(rf"{name}>=([\d.]+),<(\d+)", requirement)
    assert m, f"{requirement!r}: the client's dependencies are ranges, >=lowest,<next major"
    assert version(m[1]) <= version(pinned(name)) < (int(m[2]),)


def clean_env(**extra: str) -> dict[str, str]:
    """A shell's environment: none of the session's Python, pytest or RSMQ settings."""
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "PYTEST_", "DJANGO_", "CELERY_", "VIRTUAL_ENV"))
        and k not in ("PYTHONPATH", "PYTHONHOME", "REDIS_URL")
    }  # fmt: skip
    env.update(extra)
    return env


def pip(python: Path, *args: str) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", *args, "--quiet", "--disable-pip-version-check"],
        capture_output=True, text=True, timeout=600, env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 0, f"pip {' '.join(args)}:\n{done.stdout}{done.stderr}"[-4000:]


def _install_the_client(python: Path, pins: list[str], source: Path) -> None:
    """The client as it is now, from a copy of the project, alone beside ``pins``."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    for name in files:
        if not name.startswith("tests/") and (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    # (pip reinstalls a project from a folder every time; the pins must fit its ranges)
    pip(python, "install", "--no-build-isolation", str(source), *pins)


@pytest.fixture(scope="module")
def lowest_venv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv (its interpreter) with the lowest redis-py and hiredis, the tools
    the tests run with, and the client as it is now installed alone (no extras)."""
    pins = [f"redis=={lowest('redis')}", f"hiredis=={lowest('hiredis')}"]
    tools = [f"{name}=={pinned(name)}" for name in TOOLS]
    build = PYPROJECT["build-system"]["requires"]  # (the client is built without isolation)
    cache = getattr(request.config, "cache", None)
    where = cache.mkdir("lowest-redis") if cache else tmp_path_factory.mktemp("lowest-redis")
    python_version = ".".join(map(str, sys.version_info[:2]))
    home = where / f"py{python_version}-{'-'.join(pins)}"
    python, stamp = home / "bin" / "python", home / "installed"
    wanted = "\n".join([*pins, *tools, *build])
    started = time.monotonic()
    # One worker at a time: the virtualenv is the cache's, not this worker's.
    with exclusive(home):
        if not (stamp.exists() and stamp.read_text() == wanted):
            shutil.rmtree(home, ignore_errors=True)
            venv.create(home, with_pip=True)
            pip(python, "install", *pins, *tools, *build)
            stamp.write_text(wanted)
        ready = time.monotonic()
        _install_the_client(python, pins, tmp_path_factory.mktemp("source"))
    print(
        f"lowest-redis: virtualenv {'made' if ready - started > 1 else 'cached'} in "
        f"{ready - started:.1f} s, the client installed in {time.monotonic() - ready:.1f} s"
    )
    return python


@pytest.mark.slow
@pytest.mark.lowest_redis
def test_the_client_alone_installs_on_the_lowest_redis_py_and_hiredis(lowest_venv: Path) -> None:
    checked = subprocess.run(
        [str(lowest_venv), "-m", "pip", "check"], capture_output=True, text=True,
        env=clean_env(),
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    probe = (
        "import json, sys, hiredis, redis, queues, queues.aio, queues.topology;"
        "print(json.dumps([redis.__version__, hiredis.__version__, queues.__file__,"
        " sorted({'django', 'celery', 'pyspark', 'pyarrow'} & set(sys.modules))]))"
    )
    out = subprocess.run(
        [str(lowest_venv), "-c", probe], cwd=lowest_venv.parents[1], capture_output=True,
        text=True, env=clean_env(),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    redis_version, hiredis_version, where, heavy = json.loads(out.stdout)
    assert (redis_version, hiredis_version) == (lowest("redis"), lowest("hiredis"))
    assert where.startswith(str(lowest_venv.parents[1])) and heavy == []


@pytest.mark.slow
@pytest.mark.lowest_redis
@pytest.mark.timeout(900)
def test_the_clients_tests_pass_on_the_lowest_redis_py_and_hiredis(
    lowest_venv: Path, tmp_path: Path
) -> None:
    """tests/conftest.py also loads the console's fixtures (Django): the run takes the
    client's from tests/support/client_fixtures.py instead (--noconftest), with tests/ on
    the path for ``support`` and the installed client, not this tree, as ``queues``."""
    binaries = str(Path(redis_server_binary()).parent)
    env = clean_env(
        PATH=os.pathsep.join([binaries, os.environ.get("PATH", "")]),
        PYTHONPATH=str(ROOT / "tests"),
    )
    started = time.monotonic()
    done = subprocess.run(
        [str(lowest_venv), "-m", "pytest", "--noconftest", "-p", "support.client_fixtures",
         "--import-mode=importlib", "-p", "no:cacheprovider", "-W",
         "ignore::pytest.PytestConfigWarning", "-x", "-q",
         *(str(ROOT / "tests" / "core" / name) for name in CLIENT_TESTS)],
        cwd=tmp_path, capture_output=True, text=True, timeout=840, env=env,
    )  # fmt: skip
    print(f"lowest-redis: the client's tests ran in {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert re.search(r"\b\d+ passed\b", done.stdout) and "skipped" not in done.stdout
