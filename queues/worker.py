"""The worker runtime: receive, run a handler, delete; retry with backoff; dead-letter.

    from queues.worker import Worker

    worker = Worker(url="redis://localhost:6379/0")

    @worker.handler("emails", concurrency=8)
    def send_email(msg):
        deliver(json.loads(msg.message))   # return: done (deleted); raise: retried later

    worker.run()            # or: rsmq worker myapp.jobs:worker --processes 4

How it behaves, per queue:

* It receives in batches, never more messages than it has free handler threads for
  (``concurrency``), so a message never waits in the worker while its vt runs out.
* While a handler runs, a heartbeat extends the message's visibility timeout, so a long
  job is never handed to a second worker; a worker that dies (even by SIGKILL) simply
  stops extending, and the message comes back after vt for another worker.
* A handler that raises makes the message visible again after an exponential backoff
  (``backoff`` × 2^(rc-1) s, at most ``max_backoff``): it comes back with rc + 1. With a
  dead-letter policy on the queue (``set_dead_letter_policy``), the receive that would
  hand it out for the (maxrc+1)-th time moves it to the dead-letter queue instead.
* ``timeout``: a handler still running after this many seconds is given up on: the
  message is released as if the handler had raised. (A Python thread can't be killed,
  so it goes on in the background and its result is ignored; its slot stays taken
  until it returns.)
* New messages wake the receiver at once through the queue's realtime channel (senders
  with ``realtime=True``); polling every ``poll_interval`` s is the fallback.
* SIGTERM / SIGINT / ``stop()``: stop receiving, let running handlers finish for up to
  ``grace`` s, then release what is still running (visible again at once) and return.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.client import PubSub

from . import validation as v
from .client import RedisSMQ
from .errors import InvalidArgument, RsmqError
from .models import Message

log = logging.getLogger("queues.worker")

HandlerFn = Callable[[Message], Any]


@dataclass
class Handler:
    queue: str
    fn: HandlerFn
    concurrency: int = 1
    batch: int = 10
    vt: int | None = None  # None: the queue's own vt
    timeout: float | None = None
    backoff: float = 1.0
    max_backoff: float = 300.0

    def retry_delay(self, rc: int) -> int:
        """Seconds until a failed message is visible again: exponential in its rc."""
        # The exponent is capped: 2 ** 1024 overflows a float (a message received that
        # often is rare, not impossible), and 2 ** 60 s is past any max_backoff.
        delay = math.ldexp(self.backoff, min(max(rc - 1, 0), 60))
        return min(math.ceil(delay), math.ceil(self.max_backoff), v.MAX_SECONDS)


@dataclass(eq=False)
class _Job:
    """One attempt at a message: a message that comes back while a timed-out attempt
    still runs is a different job (jobs are keyed by attempt, not by message id)."""

    msg: Message
    started: float
    extended: float
    given_up: bool = False  # timed out or released: its handler's outcome is ignored
    finishing: bool = False  # its handler returned: being deleted or released
    # Held while the heartbeat extends this attempt's vt and while its handler's end is
    # recorded: an extension can't land after the handler's retry delay or delete.
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Counts:
    received: int = 0
    succeeded: int = 0
    failed: int = 0
    timed_out: int = 0
    released: int = 0
    lost: int = 0  # gone from the queue while its handler ran (deleted by someone else)


@dataclass
class _Runner:
    """One queue's receive loop, handler threads and running jobs."""

    handler: Handler
    vt: int
    pool: ThreadPoolExecutor
    wake: threading.Event = field(default_factory=threading.Event)
    jobs: set[_Job] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy: int = 0  # handler threads running, given-up ones included
    counts: Counts = field(default_factory=Counts)


class Worker:
    def __init__(
        self,
        rsmq: RedisSMQ | None = None,
        *,
        url: str | None = None,
        ns: str | None = None,
        poll_interval: float = 1.0,
        realtime: bool = True,
        grace: float = 30.0,
    ) -> None:
        self._rsmq = rsmq
        self._url, self._ns = url, ns
        self.poll_interval = poll_interval
        self.realtime = realtime
        self.grace = grace
        self.handlers: dict[str, Handler] = {}
        self._runners: dict[str, _Runner] = {}
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def client(self) -> RedisSMQ | None:
        """The RSMQ client it was made with or has made (see ``rsmq``); None before."""
        return self._rsmq

    @property
    def rsmq(self) -> RedisSMQ:
        if self._rsmq is None:
            url = self._url or os.environ.get("RSMQ_REDIS_URL", "redis://127.0.0.1:6379/0")
            ns = self._ns or os.environ.get("RSMQ_NAMESPACE", "rsmq")
            self._rsmq = RedisSMQ(url=url, ns=ns, socket_timeout=30)
        return self._rsmq

    def configure(self, url: str | None = None, ns: str | None = None) -> None:
        """Point a worker made without a client at a Redis (the CLI's --url / --ns);
        what is not given stays as the worker was made."""
        if url is None and ns is None:
            return
        if self._rsmq is not None:
            raise RuntimeError("configure() must come before the worker has connected")
        self._url = url or self._url
        self._ns = ns or self._ns

    def handler(
        self,
        queue: str,
        *,
        concurrency: int = 1,
        batch: int = 10,
        vt: int | None = None,
        timeout: float | None = None,
        backoff: float = 1.0,
        max_backoff: float = 300.0,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Register the decorated function for a queue's messages."""
        v.qname(queue, "queue")
        v.integer("concurrency", concurrency, 1, 1000)
        v.integer("batch", batch, 1, v.MAX_BATCH)
        if vt is not None:
            v.integer("vt", vt, 1, v.MAX_SECONDS)  # 0 would leave nothing to extend
        for name, value in (
            ("timeout", timeout),
            ("backoff", backoff),
            ("max_backoff", max_backoff),
        ):
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value < math.inf
            ):
                raise InvalidArgument(name, f"{name} must be a finite number of seconds, 0 or more")
        if queue in self.handlers:
            raise ValueError(f"a handler for queue {queue!r} is already registered")

        def register(fn: HandlerFn) -> HandlerFn:
            self.handlers[queue] = Handler(
                queue, fn, concurrency, batch, vt, timeout, backoff, max_backoff
            )
            return fn

        return register

    # -- running -------------------------------------------------------------------

    def run(self) -> dict[str, Counts]:
        """Work until stop() (or SIGTERM / SIGINT in the main thread); returns the counts."""
        if not self.handlers:
            raise ValueError("no handlers registered")
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        self._stopping.clear()
        for h in self.handlers.values():
            vt = h.vt if h.vt is not None else self.rsmq.get_queue_attributes(h.queue).vt
            if vt == 0:
                # Nothing would keep a running message from other workers.
                raise InvalidArgument(
                    "vt", f"queue {h.queue} has vt 0: give its handler a vt of 1 s or more"
                )
            pool = ThreadPoolExecutor(h.concurrency, thread_name_prefix=f"rsmq-{h.queue}")
            self._runners[h.queue] = _Runner(h, vt, pool)
        self._start(self._heartbeat, "rsmq-heartbeat")
        if self.realtime:
            self._start(self._listen, "rsmq-realtime")
        for runner in self._runners.values():
            self._start(
                functools.partial(self._receive_loop, runner), f"rsmq-recv-{runner.handler.queue}"
            )
        log.info(
            "worker started",
            extra={"event": "start", "queues": sorted(self._runners), "pid": os.getpid()},
        )
        self._stopping.wait()
        self._drain()
        return {q: r.counts for q, r in self._runners.items()}

    def stop(self) -> None:
        self._stopping.set()
        for runner in self._runners.values():
            runner.wake.set()

    def _start(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _receive_loop(self, runner: _Runner) -> None:
        h = runner.handler
        while not self._stopping.is_set():
            with runner.lock:
                free = h.concurrency - runner.busy
            if free <= 0:
                runner.wake.wait(self.poll_interval)
                runner.wake.clear()
                continue
            try:
                msgs = self.rsmq.receive_messages(h.queue, min(free, h.batch), vt=runner.vt)
            except (redis.RedisError, RsmqError) as e:
                log.warning(
                    "receive failed: %s", e, extra={"event": "receive_error", "queue": h.queue}
                )
                self._stopping.wait(self.poll_interval)
                continue
            if not msgs:
                runner.wake.wait(self.poll_interval)
                runner.wake.clear()
                continue
            now = time.monotonic()
            jobs = [_Job(m, now, now) for m in msgs]
            with runner.lock:
                runner.busy += len(jobs)
                runner.counts.received += len(jobs)
                runner.jobs.update(jobs)
            for job in jobs:
                # The pool lives until _drain, which first waits for this loop to end.
                runner.pool.submit(self._run_job, runner, job)

    def _run_job(self, runner: _Runner, job: _Job) -> None:
        h, msg = runner.handler, job.msg
        extra = {"queue": h.queue, "msg_id": msg.id, "rc": msg.rc}
        t0 = time.monotonic()
        error: BaseException | None = None
        try:
            try:
                result = h.fn(msg)
                if inspect.isawaitable(result):
                    asyncio.run(_awaited(result))
            except BaseException as e:  # SystemExit too: a handler's end is never the worker's
                error = e
            with job.lock, runner.lock:
                if job.given_up:
                    return
                # Still registered while it is deleted or released, so that a drain
                # waits for it and the heartbeat leaves it alone.
                job.finishing = True
            if error is not None:
                delay = h.retry_delay(msg.rc)
                runner.counts.failed += 1
                log.warning(
                    "handler failed: %r; visible again in %d s",
                    error,
                    delay,
                    extra={**extra, "event": "failed", "retry_in": delay},
                )
                self._set_visibility(runner, msg, delay)
                return
            try:
                if self.rsmq.delete_message(h.queue, msg.id):
                    runner.counts.succeeded += 1
                    log.debug(
                        "done in %.3f s", time.monotonic() - t0, extra={**extra, "event": "done"}
                    )
                else:
                    runner.counts.lost += 1
                    log.warning(
                        "message left the queue while its handler ran",
                        extra={**extra, "event": "lost"},
                    )
            except (redis.RedisError, RsmqError) as e:
                # Not deleted: it comes back after vt and runs again (at least once).
                log.error("delete failed: %s", e, extra={**extra, "event": "delete_error"})
        finally:
            with runner.lock:
                runner.jobs.discard(job)
                runner.busy -= 1
            runner.wake.set()

    def _set_visibility(self, runner: _Runner, msg: Message, seconds: int) -> None:
        try:
            if not self.rsmq.change_message_visibility(runner.handler.queue, msg.id, seconds):
                runner.counts.lost += 1
        except (redis.RedisError, RsmqError) as e:
            # It comes back by itself when its vt runs out.
            log.error(
                "could not change visibility: %s",
                e,
                extra={"queue": runner.handler.queue, "msg_id": msg.id, "event": "vis_error"},
            )

    def _heartbeat(self) -> None:
        """Extend running messages' vt before it runs out; give up on timed-out ones."""
        while not self._stopping.wait(0.2):
            try:
                self._beat()
            except Exception:
                # Never let one bad beat end the heartbeat: every running message would
                # then lose its vt extension.
                log.exception("heartbeat failed", extra={"event": "heartbeat_error"})

    def _beat(self) -> None:
        now = time.monotonic()
        for runner in list(self._runners.values()):
            h = runner.handler
            timed_out, due = [], []
            with runner.lock:
                for job in runner.jobs:
                    if job.given_up or job.finishing:
                        continue
                    if h.timeout is not None and now - job.started > h.timeout:
                        job.given_up = True
                        timed_out.append(job)
                    elif runner.vt and now - job.extended >= runner.vt / 3:
                        job.extended = now
                        due.append(job)
            for job in timed_out:
                runner.counts.timed_out += 1
                delay = h.retry_delay(job.msg.rc)
                log.warning(
                    "handler timed out after %.1f s; visible again in %d s",
                    h.timeout,
                    delay,
                    extra={"queue": h.queue, "msg_id": job.msg.id, "event": "timeout"},
                )
                self._set_visibility(runner, job.msg, delay)
            for job in due:
                with job.lock:
                    if not (job.given_up or job.finishing):
                        self._set_visibility(runner, job.msg, runner.vt)

    def _listen(self) -> None:
        """Wake a queue's receiver as soon as a realtime send announces a message."""
        channels = {self.rsmq.realtime_channel(q): r for q, r in self._runners.items()}
        # redis-py leaves Redis.pubsub untyped: this is what it returns.
        open_pubsub: Callable[..., PubSub] = self.rsmq.redis.pubsub
        while not self._stopping.is_set():
            pubsub = open_pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(*channels)
                while not self._stopping.is_set():
                    event = pubsub.get_message(timeout=0.5)
                    if event:
                        name = event["channel"]
                        name = name.decode() if isinstance(name, bytes) else name
                        channels[name].wake.set()
            except redis.RedisError as e:
                # Polling goes on meanwhile; subscribe again in a moment.
                log.warning("realtime channel lost: %s", e, extra={"event": "realtime_error"})
                self._stopping.wait(self.poll_interval)
            finally:
                pubsub.close()

    def _drain(self) -> None:
        """Stop receiving, let running handlers finish for up to `grace` s, release the rest."""
        deadline = time.monotonic() + self.grace
        for t in self._threads:
            if t.name.startswith("rsmq-recv-"):
                # A receive already on its way registers its messages before the loop ends.
                t.join(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline:
            with_jobs = False
            for runner in self._runners.values():
                with runner.lock:
                    with_jobs = with_jobs or any(not j.given_up for j in runner.jobs)
            if not with_jobs:
                break
            time.sleep(0.05)
        for runner in self._runners.values():
            with runner.lock:
                left = [j for j in runner.jobs if not j.given_up and not j.finishing]
                for j in left:
                    j.given_up = True
            for job in left:
                runner.counts.released += 1
                self._set_visibility(runner, job.msg, 0)
            runner.pool.shutdown(wait=False, cancel_futures=True)
        log.info("worker stopped", extra={"event": "stop", "pid": os.getpid()})


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


class TextFormatter(logging.Formatter):
    """The usual text line, then the structured fields as key=value."""

    FIELDS = ("event", "queue", "msg_id", "rc", "retry_in")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(
            f"{name}={getattr(record, name)}" for name in self.FIELDS if hasattr(record, name)
        )
        return f"{line} [{fields}]" if fields else line


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the structured fields the worker logs."""

    FIELDS = ("event", "queue", "msg_id", "rc", "retry_in", "queues", "pid")

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in self.FIELDS:
            if hasattr(record, name):
                out[name] = getattr(record, name)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)
