"""queues.locks: one holder at a time, and a lock that frees itself."""

from __future__ import annotations

import time

import redis

from queues.locks import PREFIX, job_lock


def test_it_lets_one_holder_at_a_time_without_waiting(r: redis.Redis) -> None:
    first, second = job_lock(r, "job-a", timeout=5), job_lock(r, "job-a", timeout=5)
    assert first.acquire()
    started = time.monotonic()
    assert not second.acquire()
    assert time.monotonic() - started < 0.1
    first.release()
    assert second.acquire()
    second.release()


def test_it_locks_each_job_apart(r: redis.Redis) -> None:
    a, b = job_lock(r, "job-b", timeout=5), job_lock(r, "job-c", timeout=5)
    assert a.acquire() and b.acquire()
    assert r.exists(PREFIX + "job-b", PREFIX + "job-c") == 2
    a.release()
    b.release()


def test_it_frees_itself_after_its_timeout(r: redis.Redis) -> None:
    assert job_lock(r, "job-d", timeout=0.2).acquire()  # and its holder died
    assert not job_lock(r, "job-d", timeout=0.2).acquire()
    time.sleep(0.3)
    later = job_lock(r, "job-d", timeout=5)
    assert later.acquire()
    later.release()
