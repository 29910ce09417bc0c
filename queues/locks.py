""" "Only one at a time": a Redis lock held for a block, for jobs that must never run
twice at once. The caller names the lock (its namespace and job, as key parts); the key
is made here, as every key the project writes is made in ``queues/``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.lock import Lock

log = logging.getLogger(__name__)


class Busy(Exception):
    """Another holder has the lock."""


def key(*parts: str) -> str:
    """The lock's key: its parts joined by ":" (``key("console", "lock", "snapshot")``)."""
    return ":".join(parts)


def lock(client: redis.Redis, *parts: str, timeout: float) -> Lock:
    """The lock named by ``parts``, taken without waiting (``acquire()`` is False while
    another holder has it). It frees itself ``timeout`` seconds after it was taken, so a
    holder that died stops nobody for longer than that."""
    found: Lock = client.lock(key(*parts), timeout=timeout, blocking=False)
    return found


@contextmanager
def only_one(client: redis.Redis, *parts: str, timeout: float) -> Iterator[None]:
    """Hold the lock named by ``parts`` for the block, or raise ``Busy`` at once when
    another holder has it. A block that outlives ``timeout`` (the lock freed itself, and
    another run may have taken it) ends normally, with a warning."""
    held = lock(client, *parts, timeout=timeout)
    if not held.acquire():
        raise Busy(key(*parts))
    try:
        yield
    finally:
        try:
            held.release()
        except redis.exceptions.LockNotOwnedError:
            log.warning("%s took longer than its lock (%.0f s)", parts[-1], timeout)


def going_on(client: redis.Redis, *parts: str) -> bool:
    """Does someone hold the lock named by ``parts``?"""
    return bool(client.exists(key(*parts)))
