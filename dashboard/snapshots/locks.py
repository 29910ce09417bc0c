"""The console's jobs that run one at a time (the snapshot run, each pipeline job): their
lock names, in the broker's Redis that every worker shares (queues/locks.py holds them)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import lru_cache

import redis
from django.conf import settings

from queues import locks

NAMESPACE = ("rsmq-console", "lock")


@lru_cache(maxsize=4)
def _broker(url: str) -> redis.Redis:
    # One client (and its connections) per worker process, not a new handshake per run.
    return redis.Redis.from_url(url, socket_timeout=5)


def broker() -> redis.Redis:
    return _broker(settings.CELERY_BROKER_URL)


def only_one(job: str, timeout: float) -> AbstractContextManager[None]:
    """Hold ``job``'s lock for a block, or raise ``queues.locks.Busy``."""
    return locks.only_one(broker(), *NAMESPACE, job, timeout=timeout)


def going_on(job: str) -> bool:
    return locks.going_on(broker(), *NAMESPACE, job)


def key(job: str) -> str:
    """The lock's key in the broker's Redis (what an operator looks for)."""
    return locks.key(*NAMESPACE, job)
