"""queues/health.py's judgement of a reading (the readings themselves come from real
servers in tests/console/pages/test_redis_health.py): each risk at its threshold, and the
failures a test can't easily make a real server have (a failed BGSAVE, a failing AOF)."""

from __future__ import annotations

import dataclasses

import pytest

from queues.health import RedisHealth, risks

NOW = 1_800_000_000.0

HEALTHY = RedisHealth(
    read_at=NOW, version="7.2.4", mode="standalone", uptime=100, used_memory=1000,
    maxmemory=0, maxmemory_policy="noeviction", evicted_keys=0, aof_enabled=True,
    aof_last_write_status="ok", aof_last_bgrewrite_status="ok", save="3600 1 300 100",
    rdb_last_save_time=int(NOW) - 10, rdb_changes_since_last_save=5,
    rdb_last_bgsave_status="ok", connected_clients=3, blocked_clients=0, role="master",
    master_link="", replicas=(), slowlog=(),
)  # fmt: skip


def codes(**changes: object) -> list[str]:
    return [r.code for r in risks(dataclasses.replace(HEALTHY, **changes), save_age_limit=60)]


def test_a_healthy_reading_has_no_risk() -> None:
    assert codes() == []


def test_a_failed_background_save() -> None:
    assert codes(rdb_last_bgsave_status="err") == ["save_failed"]


@pytest.mark.parametrize("field", ["aof_last_write_status", "aof_last_bgrewrite_status"])
def test_a_failing_aof(field: str) -> None:
    assert codes(**{field: "err"}) == ["aof_failing"]
    assert codes(aof_enabled=False, **{field: "err"}) == []  # no AOF: not its failure


def test_the_last_save_age_counts_only_without_an_aof_and_with_changes() -> None:
    old = {"rdb_last_save_time": int(NOW) - 61}
    assert codes(aof_enabled=False, **old) == ["save_old"]
    assert codes(aof_enabled=False, rdb_last_save_time=int(NOW) - 59) == []
    assert codes(**old) == []  # the AOF has the changes
    assert codes(aof_enabled=False, rdb_changes_since_last_save=0, **old) == []


def test_memory_over_the_share_of_maxmemory() -> None:
    assert codes(maxmemory=1000, used_memory=800) == []
    assert codes(maxmemory=1000, used_memory=801) == ["memory_high"]
    assert codes(maxmemory=0, used_memory=10**12) == []  # no limit


def test_persistence_off_and_unknown() -> None:
    assert codes(aof_enabled=False, save="") == ["persistence_off"]
    assert codes(aof_enabled=False, save=None) == []  # CONFIG refused: judged by age
    assert codes(aof_enabled=False, save=None, rdb_last_save_time=0) == ["save_old"]


def test_every_policy_but_noeviction() -> None:
    for policy in ("allkeys-lru", "volatile-lru", "allkeys-random", "volatile-ttl"):
        assert codes(maxmemory_policy=policy) == ["eviction_policy"]
