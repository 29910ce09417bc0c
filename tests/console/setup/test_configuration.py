"""The configuration is checked at start: one line per problem, and nothing starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.serving.checks import problems

ROOT = Path(__file__).resolve().parents[3]
GOOD = {"name": "prod-eu_1", "url": "redis://:pw@h:6379/0", "namespaces": ["rsmq", "{shop}"]}


@pytest.fixture
def conns(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"

    def set_(*entries):
        settings.RSMQ_CONNECTIONS = list(entries)
        return problems()

    return set_


def test_a_good_configuration_has_no_problem(conns) -> None:
    assert conns(GOOD, {"name": "b", "url": "unix:///r.sock", "namespaces": ["q"]}) == []


def test_sentinel_and_cluster_urls_are_accepted(conns) -> None:
    sentinel = "redis+sentinel://:pw@s1:26379,s2:26379,[::1]:26380/mymaster/2?wait_replicas=1"
    cluster = "redis+cluster://:pw@n1:7000,n2:7001"
    assert (
        conns(
            {"name": "ha", "url": sentinel},
            {"name": "big", "url": cluster, "namespaces": ["{shop}:orders", "{billing}"]},
        )
        == []
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "Prod EU"}, "name 'Prod EU' must be 1 to 100 letters, digits, '_' or '-'"),
        ({"name": "a/b"}, "name 'a/b' must be"),
        ({"url": "http://h/0"}, "url 'http://h/0' must start with redis://, rediss://, unix://"),
        ({"url": "redis+sentinel://:pw@h:1"}, "url 'redis+sentinel://:***@h:1' must be"),
        ({"url": "redis+cluster://:pw@h:x"}, "url 'redis+cluster://:***@h:x': 'h:x' must be"),
        ({"url": "redis+cluster://:pw@h:1/0"}, "(a Cluster has only db 0)"),
        ({"url": "redis+cluster://:pw@h:1"}, "namespace 'rsmq' has no hash tag"),
        ({"url": "redis://:pw@h/0?wait_replicas=x"}, "wait_replicas must be between 0 and 100"),
        ({"namespaces": []}, "namespaces must be a non-empty list"),
        ({"namespaces": ["a b"]}, "namespace 'a b' must be"),
        ({"namespaces": ["x/y"]}, "namespace 'x/y' must be"),
    ],
)
def test_it_names_each_problem_in_one_line(conns, entry: dict, problem: str) -> None:
    (found,) = conns(GOOD | entry)
    assert problem in found and "\n" not in found
    assert "pw" not in found


def test_it_refuses_a_name_used_twice(conns) -> None:
    assert conns(GOOD, GOOD) == ["RSMQ_CONNECTIONS[2]: name 'prod-eu_1' is used twice"]


def test_it_refuses_an_empty_list(conns) -> None:
    assert conns() == ["RSMQ_CONNECTIONS must be a non-empty JSON list of connections"]


def test_it_creates_a_missing_data_dir(settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path / "a" / "b"
    assert problems() == []
    assert settings.DATA_DIR.is_dir()


def test_it_says_when_the_data_dir_cannot_be_made(settings, tmp_path) -> None:
    (tmp_path / "file").write_text("")
    settings.DATA_DIR = tmp_path / "file" / "data"
    (found,) = problems()
    assert found.startswith(f"RSMQ_DATA_DIR {settings.DATA_DIR} can't be created")


@pytest.mark.parametrize(
    ("environment", "line"),
    [
        ({"RSMQ_CONNECTIONS": '[{"name": "Prod EU", "url": "redis://h/0"}]'},
         "name 'Prod EU' must be"),
        ({"RSMQ_CONNECTIONS": "[{"}, "RSMQ_CONNECTIONS is not JSON"),
        ({"DATABASE_URL": "mysql://u:s3cret@db/rsmq"},
         "DATABASE_URL must start with one of sqlite://, postgres://, postgresql://"
         " (it starts with 'mysql')"),
        ({"RSMQ_UNDO_HOURS": "a day"},
         "RSMQ_UNDO_HOURS is 'a day': it must be a number more than 0 up to 720"),
        ({"RSMQ_UNDO_MAX_MB": "-1"},
         "RSMQ_UNDO_MAX_MB is -1.0: it must be a number from 0 up to 1e+06"),
        ({"RSMQ_SSO_GROUPS": "{ops: admin}"}, "RSMQ_SSO_GROUPS is not JSON"),
    ],
)  # fmt: skip
def test_manage_py_check_fails_with_one_line_per_problem(
    tmp_path, environment: dict[str, str], line: str
) -> None:
    env = dict(os.environ, **environment, RSMQ_DATA_DIR=str(tmp_path / "d"))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "s3cret" not in proc.stderr + proc.stdout  # a URL's password is never shown
    (reported,) = [x for x in proc.stderr.splitlines() if "rsmq.E001" in x]
    assert line in reported
