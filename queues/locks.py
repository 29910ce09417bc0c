"""Redis locks for jobs that must never run twice at the same time (the console's
snapshot of every queue). Their key names are made here, as every key the project
writes is made in ``queues/``."""

from __future__ import annotations

import redis
from redis.lock import Lock

PREFIX = "rsmq-console:lock:"


def job_lock(client: redis.Redis, job: str, timeout: float) -> Lock:
    """The lock of one job, taken without waiting (``acquire()`` is False while another
    run holds it). It frees itself ``timeout`` seconds after it was taken, so a run that
    died holding it stops nobody for longer than that."""
    return client.lock(PREFIX + job, timeout=timeout, blocking=False)
