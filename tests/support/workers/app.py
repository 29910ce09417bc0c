"""The worker app of tests/core/test_worker.py: ``rsmq worker support.workers.app:worker``.

Set up by environment variables, so that each test starts the processes it needs:

* ``WORKER_QUEUES``: the queues to handle, comma-separated, each ``name[:option=value]...``
  with the options of ``Worker.handler`` (concurrency, batch, vt, timeout, backoff,
  max_backoff), ``async=1`` for an ``async def`` handler and ``noop=1`` for one that
  does nothing at all (no record either);
* ``WORKER_RESULTS``: the queue every handler attempt sends its record to;
* ``WORKER_POLL``, ``WORKER_GRACE``, ``WORKER_REALTIME``, ``WORKER_ACK_LINGER``,
  ``WORKER_ACK_BATCH``, ``WORKER_REGISTRY_TTL``: the Worker's poll_interval, grace,
  realtime, ack_linger, ack_batch and registry_ttl.

What a handler does is said by the message's body, a JSON object (all keys optional):

* ``sleep``: seconds to work; a list gives the seconds of receive 1, 2, ... (the last
  one repeats);
* ``fail``: raise instead of returning; a list per receive like ``sleep``;
* ``wait_for``: a path (or a list per receive like ``sleep``): work until that file
  exists, so that the test says when a handler returns;
* ``fixed_when``: a path: raise unless that file exists (a bug that gets fixed);
* ``exit``: raise SystemExit instead (as ``sys.exit()`` in a handler would);
* ``record_start``: also send a record as the handler starts.

A record is a JSON object: id, rc, fr, pid, queue, start and end (time.time() of this
machine), ok, and event ("start" or "end").
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from queues import RedisSMQ
from queues.models import Message
from queues.worker import Worker

OPTIONS = {
    "concurrency": int,
    "batch": int,
    "vt": int,
    "timeout": float,
    "backoff": float,
    "max_backoff": float,
}


class Failed(Exception):
    """What a handler raises when its message says so."""


def per_rc(value: Any, rc: int) -> Any:
    if isinstance(value, list):
        return value[min(rc, len(value)) - 1]
    return value


def build(url: str | None = None, ns: str | None = None, client: bool = False) -> Worker:
    env = os.environ
    worker = Worker(
        RedisSMQ(url=url, ns=ns or "rsmq") if client else None,
        url=url,
        ns=ns,
        poll_interval=float(env.get("WORKER_POLL", "0.1")),
        grace=float(env.get("WORKER_GRACE", "10")),
        realtime=env.get("WORKER_REALTIME", "1") == "1",
        ack_linger=float(env.get("WORKER_ACK_LINGER", "0.005")),
        ack_batch=int(env.get("WORKER_ACK_BATCH", "100")),
        registry_ttl=float(env.get("WORKER_REGISTRY_TTL", "30")),
    )
    results = env.get("WORKER_RESULTS", "results")

    def record(queue: str, msg: Message, event: str, start: float, ok: bool | None) -> None:
        rec = {
            "id": msg.id, "rc": msg.rc, "fr": msg.fr, "pid": os.getpid(), "queue": queue,
            "event": event, "start": start, "end": time.time(), "ok": ok,
        }  # fmt: skip
        worker.rsmq.send_message(results, json.dumps(rec))

    def begin(queue: str, msg: Message, start: float) -> tuple[dict[str, Any], float]:
        spec = json.loads(msg.message)
        if spec.get("record_start"):
            record(queue, msg, "start", start, None)
        return spec, float(per_rc(spec.get("sleep", 0), msg.rc))

    def waited(spec: dict[str, Any], msg: Message) -> bool:
        """False while the file the message says to wait for is missing."""
        path = per_rc(spec.get("wait_for"), msg.rc)
        return not path or os.path.exists(path)

    def finish(queue: str, msg: Message, spec: dict[str, Any], start: float) -> None:
        fixed = spec.get("fixed_when")
        failed = per_rc(spec.get("fail", False), msg.rc) or (fixed and not os.path.exists(fixed))
        record(queue, msg, "end", start, not failed)
        if per_rc(spec.get("exit", False), msg.rc):
            raise SystemExit(3)
        if failed:
            raise Failed(f"{msg.id} rc {msg.rc}")

    def register(queue: str, options: dict[str, Any], kind: str) -> None:
        if kind == "noop":
            worker.handler(queue, **options)(lambda msg: None)
        elif kind == "async":

            async def handle_async(msg: Message) -> None:
                start = time.time()
                spec, seconds = begin(queue, msg, start)
                await asyncio.sleep(seconds)
                while not waited(spec, msg):
                    await asyncio.sleep(0.01)
                finish(queue, msg, spec, start)

            worker.handler(queue, **options)(handle_async)
        else:

            def handle(msg: Message) -> None:
                start = time.time()
                spec, seconds = begin(queue, msg, start)
                time.sleep(seconds)
                while not waited(spec, msg):
                    time.sleep(0.01)
                finish(queue, msg, spec, start)

            worker.handler(queue, **options)(handle)

    for item in filter(None, env.get("WORKER_QUEUES", "").split(",")):
        name, *opts = item.split(":")
        flags = {"async=1": "async", "noop=1": "noop"}
        kind = next((flags[o] for o in opts if o in flags), "sync")
        options = {k: OPTIONS[k](v) for k, v in (o.split("=") for o in opts if o not in flags)}
        register(name, options, kind)
    return worker


worker = build()
# Made with its own url and ns, for running `rsmq worker` without --url / --ns.
configured = build(os.environ.get("WORKER_URL"), os.environ.get("WORKER_NS"))
# Made with a RedisSMQ client of its own.
with_client = build(os.environ.get("WORKER_URL"), os.environ.get("WORKER_NS"), client=True)
