"""The soak test's worker: ``rsmq worker support.workers.soak:worker``.

One trivial handler on ``WORKER_QUEUE`` that fails at random (``WORKER_FAIL_RATE``) and
writes what it does to a file of its own process in ``WORKER_RECORD_DIR``, one
unbuffered write per line, so that a SIGKILL loses nothing already written:

    S <id> <rc> <time>         as it starts
    E <id> <rc> <time> <ok>    as it ends (ok 1 or 0), before the message is deleted

``WORKER_CONCURRENCY`` handler threads (received in batches of as many);
failures are retried at once (backoff 0).
"""

from __future__ import annotations

import os
import random
import time

from queues.models import Message
from queues.worker import Worker

env = os.environ
FAIL_RATE = float(env.get("WORKER_FAIL_RATE", "0.1"))
CONCURRENCY = int(env.get("WORKER_CONCURRENCY", "8"))
RECORDS = os.path.join(env.get("WORKER_RECORD_DIR", "."), f"{os.getpid()}.log")

worker = Worker(poll_interval=float(env.get("WORKER_POLL", "0.05")))
_fd: int | None = None


class Failed(Exception):
    pass


def write(line: str) -> None:
    global _fd
    if _fd is None:
        _fd = os.open(RECORDS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(_fd, line.encode())


@worker.handler(
    env.get("WORKER_QUEUE", "soak"), concurrency=CONCURRENCY, batch=CONCURRENCY, backoff=0
)
def handle(msg: Message) -> None:
    write(f"S {msg.id} {msg.rc} {time.time():.6f}\n")
    ok = random.random() >= FAIL_RATE
    write(f"E {msg.id} {msg.rc} {time.time():.6f} {int(ok)}\n")
    if not ok:
        raise Failed(msg.id)
