"""queues.locks: one holder at a time, and a lock that frees itself."""

from __future__ import annotations

import time

import pytest
import redis

from queues.locks import Busy, going_on, key, lock, only_one


def test_it_lets_one_holder_at_a_time_without_waiting(r: redis.Redis) -> None:
    first, second = lock(r, "test", "job-a", timeout=5), lock(r, "test", "job-a", timeout=5)
    assert first.acquire()
    started = time.monotonic()
    assert not second.acquire()
    assert time.monotonic() - started < 0.1
    first.release()
    assert second.acquire()
    second.release()


def test_it_locks_each_job_apart(r: redis.Redis) -> None:
    a, b = lock(r, "test", "job-b", timeout=5), lock(r, "test", "job-c", timeout=5)
    assert a.acquire() and b.acquire()
    assert r.exists(key("test", "job-b"), key("test", "job-c")) == 2
    a.release()
    b.release()


def test_it_frees_itself_after_its_timeout(r: redis.Redis) -> None:
    assert lock(r, "test", "job-d", timeout=0.2).acquire()  # and its holder died
    assert not lock(r, "test", "job-d", timeout=0.2).acquire()
    time.sleep(0.3)
    later = lock(r, "test", "job-d", timeout=5)
    assert later.acquire()
    later.release()


def test_only_one_holds_it_for_a_block_and_refuses_a_second(r: redis.Redis) -> None:
    with only_one(r, "test", "job-e", timeout=5):
        with pytest.raises(Busy), only_one(r, "test", "job-e", timeout=5):
            pytest.fail("a second holder ran")
        assert going_on(r, "test", "job-e")
    assert not going_on(r, "test", "job-e")


def test_only_one_says_when_a_block_outlived_its_lock(r: redis.Redis, logged) -> None:
    messages = logged("queues.locks")
    with only_one(r, "test", "job-f", timeout=5):
        r.delete(key("test", "job-f"))  # it expired, and maybe another holder took it
    assert messages == ["job-f took longer than its lock (5 s)"]
