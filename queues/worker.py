"""The worker runtime: receive, run a handler, delete; retry with backoff; dead-letter.

    from queues.worker import Worker

    worker = Worker(url="redis://localhost:6379/0")

    @worker.handler("emails", concurrency=8)
    def send_email(msg):
        deliver(json.loads(msg.message))   # return: done (deleted); raise: retried later

    worker.run()            # or: rsmq worker myapp.jobs:worker --processes 4

How it behaves, per queue:

* It receives in batches, never more messages than it has free handler threads for
  (``concurrency``), so a message never waits in the worker while its vt runs out. When
  only a few threads are free it waits a moment (``SLOT_WAIT``) for more to free up, so
  that fast handlers get batches, not a receive per message.
* A finished message is acknowledged (deleted) in a batch with the others that finished
  about then, by the receive loop: one ``delete_messages`` call per ``ack_batch`` (100)
  messages or per ``ack_linger`` (5 ms), whichever comes first. An ack is never held
  while its message's vt runs low: it goes while a third of its vt is left at least (at
  once by its handler thread if less is). A worker that dies holding acks (even by
  SIGKILL) loses nothing: those messages come back after vt and run again, as with any
  ack that fails (at least once).
* While a handler runs, a heartbeat extends the message's visibility timeout, so a long
  job is never handed to a second worker; a worker that dies simply stops extending, and
  the message comes back after vt for another worker.
* A handler that raises makes the message visible again after an exponential backoff
  (``backoff`` × 2^(rc-1) s, at most ``max_backoff``): it comes back with rc + 1. With a
  dead-letter policy on the queue (``set_dead_letter_policy``), the receive that would
  hand it out for the (maxrc+1)-th time moves it to the dead-letter queue instead.
  Why it failed is recorded with the message (``record_failure``: the exception's type,
  message and first lines of its traceback, the attempt), in the same script call that
  sets its backoff: a failure costs no extra round trip. A timeout is recorded as a
  ``HandlerTimeout``.
* ``timeout``: a handler still running after this many seconds is given up on: the
  message is released as if the handler had raised. (A Python thread can't be killed,
  so it goes on in the background and its result is ignored; its slot stays taken
  until it returns.)
* New messages wake the receiver at once through the queue's realtime channel (senders
  with ``realtime=True``); polling every ``poll_interval`` s is the fallback.
* A queue's pause and throttle (queues/ops/flow.py) hold it: its receives go through the
  receive script that honours them. Paused, it gets nothing and looks again every
  ``poll_interval`` s (a realtime announcement does not wake it); throttled, it gets what
  the queue's rate allows, shared with every other consumer that honours it, and asks
  again when the throttle says the next receive may go.
* It registers itself in Redis (host, pid, queues and their concurrency, when it
  started: ``RedisSMQ.live_workers``), renewed every ``REGISTRY_BEAT`` s and kept for
  ``registry_ttl`` s after the last renewal, so a worker that dies disappears from the
  console's list of live workers; one that stops removes itself.
* Each message it deletes is timed: its wait (send → first receive, from its id and
  ``fr``) and its processing (first receive → delete), recorded in the queue's timings
  key (``record_timings``: the newest ``TIMINGS_MAX`` kept) by the heartbeat thread,
  at most one call per queue every 0.2 s, off the receive path. The console's snapshots
  read them (``timings=False``: none recorded).
* SIGTERM / SIGINT / ``stop()``: stop receiving, let running handlers finish for up to
  ``grace`` s, delete what finished, then release what is still running (visible again
  at once) and return.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.client import PubSub

from . import validation as v
from .client import RedisSMQ
from .errors import InvalidArgument, RsmqError
from .limits import TIMINGS_MAX
from .models import Message

log = logging.getLogger("queues.worker")

HandlerFn = Callable[[Message], Any]

#: s a receive waits for more handler threads to free up once fewer than half are free
SLOT_WAIT = 0.002
#: s received jobs wait for the one handler thread woken for them before more are woken
#: (fast handlers: one thread runs the batch, without a wake-up per job)
HELP_AFTER = 0.001
#: s between renewals of the worker's registration (registry_ttl is its lifetime)
REGISTRY_BEAT = 5.0


class HandlerTimeout(Exception):
    """Recorded as the failure of a message whose handler ran past its ``timeout``."""


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
    started: float  # time.monotonic() just before the receive that handed it out
    extended: float  # ... before the heartbeat's last extension was asked for
    deadline: float  # its vt runs out then at the earliest (as the last success set it)
    given_up: bool = False  # timed out or released: its handler's outcome is ignored
    finishing: bool = False  # its handler returned: being deleted or released
    wall: float = 0.0  # time.time() just before the receive (for the first receive's time)
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
    """One queue's receive loop, handler threads, acks and running jobs."""

    handler: Handler
    vt: int
    # Received jobs not yet started (None: a handler thread's end), under ``lock``; one
    # idle handler thread is woken for a batch, the others once it waited HELP_AFTER.
    work: deque[_Job | None] = field(default_factory=deque)
    queued_at: float = 0.0
    # Wakes the receive loop while it waits for the next poll: a realtime announcement
    # (``announced``), a stop, or a first finished job to delete.
    wake: threading.Event = field(default_factory=threading.Event)
    announced: bool = False
    jobs: set[_Job] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy: int = 0  # handler threads running, given-up ones included
    counts: Counts = field(default_factory=Counts)
    # Deleted messages' (time.monotonic() of the delete, fr, wait ms, processing ms), to
    # record (under ``lock``); the newest TIMINGS_MAX if the records can't keep up.
    timings: deque[tuple[float, int, float, float]] = field(
        default_factory=lambda: deque(maxlen=TIMINGS_MAX)
    )
    acks: list[_Job] = field(default_factory=list)  # finished, to delete (under ``lock``)
    acks_since: float = 0.0  # when the oldest of them finished
    acks_deadline: float = math.inf  # the earliest deadline of theirs
    # Notified (under ``lock``) when the first handler thread frees up, and when enough
    # of them have for a batch: the receive loop waits on it while they are busy.
    slots: threading.Condition = field(init=False)
    ready: threading.Condition = field(init=False)  # idle handler threads wait on it
    enough: int = field(init=False)  # free handler threads worth a receive at once

    def __post_init__(self) -> None:
        self.slots = threading.Condition(self.lock)
        self.ready = threading.Condition(self.lock)
        self.enough = max(1, min(self.handler.batch, self.handler.concurrency) // 2)


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
        ack_batch: int = 100,
        ack_linger: float = 0.005,
        registry_ttl: float = 30.0,
        timings: bool = True,
    ) -> None:
        v.integer("ack_batch", ack_batch, 1, v.MAX_BATCH)
        _seconds("ack_linger", ack_linger)
        _seconds("registry_ttl", registry_ttl)
        self.registry_ttl = registry_ttl
        self._registered: tuple[str, int] | None = None  # (id, started ms)
        self._rsmq = rsmq
        self._url, self._ns = url, ns
        self.poll_interval = poll_interval
        self.realtime = realtime
        self.grace = grace
        self.ack_batch = ack_batch
        self.ack_linger = ack_linger
        self.timings = timings
        self.handlers: dict[str, Handler] = {}
        self._runners: dict[str, _Runner] = {}
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def client(self) -> RedisSMQ | None:
        """The RSMQ client it was made with or has made (see ``rsmq``); None before."""
        return self._rsmq

    @property
    def url(self) -> str | None:
        """The Redis URL it was made or configured with; None: RSMQ_REDIS_URL decides."""
        return self._url

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
            if value is not None:
                _seconds(name, value)
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
            self._runners[h.queue] = _Runner(h, vt)
        self._register()
        self._start(self._heartbeat, "rsmq-heartbeat")
        if self.realtime:
            self._start(self._listen, "rsmq-realtime")
        for q, runner in self._runners.items():
            for i in range(runner.handler.concurrency):
                self._start(self._handle_loop, f"rsmq-{q}-{i}", runner)
            self._start(self._receive_loop, f"rsmq-recv-{q}", runner)
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

    def _start(self, target: Callable[..., None], name: str, *args: Any) -> threading.Thread:
        t = threading.Thread(target=target, name=name, args=args, daemon=True)
        t.start()
        self._threads.append(t)
        return t

    def _free_slots(self, runner: _Runner) -> int:
        """Free handler threads to receive for: once ``enough`` are, or after SLOT_WAIT
        with fewer; 0 when stopping or when finished jobs are due to be deleted.
        Meanwhile, wakes more handler threads for jobs that wait (slow handlers)."""
        first_free: float | None = None
        with runner.slots:
            while True:
                now = time.monotonic()
                due = self._acks_due(runner)
                if now >= due or self._stopping.is_set():
                    return 0
                help_at = math.inf
                if runner.work:
                    help_at = runner.queued_at + HELP_AFTER
                    if now >= help_at:
                        runner.ready.notify(len(runner.work))
                        help_at = math.inf
                free = runner.handler.concurrency - runner.busy
                if free >= runner.enough:
                    return free
                if free <= 0:
                    # Notified as a thread frees up; the timeout notices a stop.
                    runner.slots.wait(min(now + 0.1, due, help_at) - now)
                    continue
                if first_free is None:
                    first_free = now
                elif now - first_free >= SLOT_WAIT:
                    return free
                runner.slots.wait(min(first_free + SLOT_WAIT, due, help_at) - now)

    def _receive_loop(self, runner: _Runner) -> None:
        """Receive for the free handler threads; delete what finished, in batches."""
        h = runner.handler
        next_poll = 0.0  # after an empty receive: when to look again (unless announced)
        held = ""  # what the queue's flow flag said last: "paused", "throttled" or ""
        while True:
            now = time.monotonic()
            with runner.lock:
                due = self._acks_due(runner)
            if now >= due:
                self._flush(runner)
                due = math.inf
            if self._stopping.is_set():
                with runner.lock:
                    runner.ready.notify_all()  # no more help from this loop: all hands
                return
            # A queue held back by its flow flag waits for its poll (a pause) or for its
            # throttle's next token: a realtime announcement would only be held again.
            if now < next_poll and (held or not runner.announced):
                runner.wake.wait(max(0.0, min(next_poll, due) - now))
                runner.wake.clear()
                continue
            runner.announced = False
            free = self._free_slots(runner)
            if not free:
                continue
            before, wall = time.monotonic(), time.time()
            try:
                got = self.rsmq.receive_flow(h.queue, min(free, h.batch), vt=runner.vt)
            except (redis.RedisError, RsmqError) as e:
                log.warning(
                    "receive failed: %s", e, extra={"event": "receive_error", "queue": h.queue}
                )
                next_poll = time.monotonic() + self.poll_interval
                continue
            msgs = got.messages
            if got.held != held:
                _said(h.queue, got.held, held, self.poll_interval)
                held = got.held
            if got.held == "paused" or (not msgs and not got.held):
                next_poll = time.monotonic() + self.poll_interval
            elif got.held:  # throttled: the next receive may go once its bucket refills
                next_poll = time.monotonic() + min(self.poll_interval, got.wait)
            else:
                next_poll = 0.0
            if not msgs:
                continue
            deadline = before + runner.vt
            jobs = [_Job(m, before, before, deadline, wall=wall) for m in msgs]
            with runner.lock:
                runner.busy += len(jobs)
                runner.counts.received += len(jobs)
                runner.jobs.update(jobs)
                if not runner.work:
                    runner.queued_at = time.monotonic()
                runner.work.extend(jobs)
                runner.ready.notify()

    def _handle_loop(self, runner: _Runner) -> None:
        """One handler thread: run the jobs the receive loop hands out, until a None."""
        while True:
            with runner.lock:
                while not runner.work:
                    runner.ready.wait()
                job = runner.work.popleft()
                if runner.work:
                    runner.queued_at = time.monotonic()  # the next one waits for help
            if job is None:
                return
            try:
                self._run_job(runner, job)
            except Exception:
                # Never lose a handler thread: the queue's concurrency would shrink.
                log.exception("worker error", extra={"queue": runner.handler.queue})

    def _run_job(self, runner: _Runner, job: _Job) -> None:
        h, msg = runner.handler, job.msg
        error: BaseException | None = None
        try:
            result = h.fn(msg)
            if result is not None and inspect.isawaitable(result):
                asyncio.run(_awaited(result))
        except BaseException as e:  # SystemExit too: a handler's end is never the worker's
            error = e
        urgent = False
        with job.lock, runner.lock:
            done = error is None or job.given_up  # nothing more for this thread to do
            if job.given_up:
                runner.jobs.discard(job)
            else:
                # Still registered while it is deleted or released, so that a drain
                # waits for it and the heartbeat leaves it alone.
                job.finishing = True
                if error is None:
                    urgent = self._add_ack(runner, job)
            if done:
                self._free_slot(runner)
        if urgent:
            self._flush(runner)
        if done or error is None:
            return
        try:
            delay = h.retry_delay(msg.rc)
            runner.counts.failed += 1
            log.warning(
                "handler failed: %r; visible again in %d s",
                error,
                delay,
                extra={
                    "queue": h.queue, "msg_id": msg.id, "rc": msg.rc, "event": "failed",
                    "retry_in": delay,
                },
            )  # fmt: skip
            self._fail(runner, msg, error, delay)
        finally:
            with runner.lock:
                runner.jobs.discard(job)
                self._free_slot(runner)

    def _free_slot(self, runner: _Runner) -> None:
        """A handler thread is free again (called under ``runner.lock``)."""
        runner.busy -= 1
        free = runner.handler.concurrency - runner.busy
        if free == 1 or free == runner.enough:
            runner.slots.notify()

    # -- acks ------------------------------------------------------------------------

    def _acks_due(self, runner: _Runner) -> float:
        """When the finished jobs must be deleted (math.inf: none); under ``runner.lock``.

        After ``ack_linger``, and while each still has a third of its vt left at least.
        """
        if not runner.acks:
            return math.inf
        if len(runner.acks) >= self.ack_batch or self._stopping.is_set():
            return 0.0
        return min(runner.acks_since + self.ack_linger, runner.acks_deadline - runner.vt / 3)

    def _add_ack(self, runner: _Runner, job: _Job) -> bool:
        """Queue a finished job for deletion (under ``runner.lock``); True: delete now."""
        now = time.monotonic()
        acks = runner.acks
        acks.append(job)
        wake = len(acks) == 1 or len(acks) == self.ack_batch
        if len(acks) == 1:
            runner.acks_since, runner.acks_deadline = now, job.deadline
        elif job.deadline < runner.acks_deadline:
            runner.acks_deadline, wake = job.deadline, True
        if wake:  # due sooner: the receive loop may be waiting for a poll or for threads
            runner.wake.set()
            runner.slots.notify()
        return runner.acks_deadline - runner.vt / 3 <= now

    def _flush(self, runner: _Runner) -> None:
        """Delete the finished jobs, ``ack_batch`` per delete_messages call (at least
        once: if a call fails, its messages come back after vt and run again)."""
        with runner.lock:
            jobs, runner.acks = runner.acks, []
            runner.acks_deadline = math.inf
        for i in range(0, len(jobs), self.ack_batch):
            self._delete(runner, jobs[i : i + self.ack_batch])

    def _delete(self, runner: _Runner, jobs: list[_Job]) -> None:
        q = runner.handler.queue
        try:
            deleted: int | None = self.rsmq.delete_messages(q, [j.msg.id for j in jobs])
        except (redis.RedisError, RsmqError) as e:
            deleted = None
            log.error(
                "delete of %d message(s) failed: %s",
                len(jobs),
                e,
                extra={"queue": q, "event": "delete_error"},
            )
        done = time.monotonic()
        with runner.lock:
            runner.jobs.difference_update(jobs)
            if deleted is not None:
                runner.counts.succeeded += deleted
                runner.counts.lost += len(jobs) - deleted
            # Timed only when every one was deleted here (which one was not is unknown).
            if self.timings and deleted == len(jobs):
                runner.timings.extend(_timing(j, done) for j in jobs if j.msg.sent is not None)
        if deleted is not None and deleted < len(jobs):
            log.warning(
                "%d of %d message(s) left the queue while their handlers ran",
                len(jobs) - deleted,
                len(jobs),
                extra={"queue": q, "event": "lost"},
            )
        if deleted is not None and log.isEnabledFor(logging.DEBUG):
            now = time.monotonic()
            for j in jobs:
                log.debug(
                    "done in %.3f s",
                    now - j.started,
                    extra={"queue": q, "msg_id": j.msg.id, "rc": j.msg.rc, "event": "done"},
                )

    def _fail(self, runner: _Runner, msg: Message, error: BaseException, seconds: int) -> None:
        """Record why the message failed and make it visible again in ``seconds``, in one
        script call (the visibility change every failure makes anyway)."""
        q = runner.handler.queue
        try:
            if not self.rsmq.record_failure(q, msg.id, error, vt=seconds):
                runner.counts.lost += 1
        except redis.RedisError as e:
            # It comes back by itself when its vt runs out.
            log.error(
                "could not record the failure: %s",
                e,
                extra={"queue": q, "msg_id": msg.id, "event": "vis_error"},
            )
        except RsmqError as e:  # never a retry lost for want of a record
            log.error("could not record the failure: %s", e, extra={"queue": q, "msg_id": msg.id})
            self._set_visibility(runner, msg, seconds)

    def _set_visibility(self, runner: _Runner, msg: Message, seconds: int) -> bool:
        """Whether the message's vt is now ``seconds`` from now."""
        try:
            if self.rsmq.change_message_visibility(runner.handler.queue, msg.id, seconds):
                return True
            runner.counts.lost += 1
        except (redis.RedisError, RsmqError) as e:
            # It comes back by itself when its vt runs out.
            log.error(
                "could not change visibility: %s",
                e,
                extra={"queue": runner.handler.queue, "msg_id": msg.id, "event": "vis_error"},
            )
        return False

    # -- heartbeat -------------------------------------------------------------------

    def _register(self, ttl: float | None = None) -> None:
        """Register (or renew, or with ttl 0 remove) this worker in the live-worker
        registry; a failure is logged, never fatal: the work goes on without it."""
        if self._registered is None:
            started = round(time.time() * 1000)
            self._registered = (f"{socket.gethostname()}:{os.getpid()}:{started}", started)
        wid, started = self._registered
        try:
            self.rsmq.register_worker(
                wid,
                socket.gethostname(),
                os.getpid(),
                {q: r.handler.concurrency for q, r in self._runners.items()},
                started,
                self.registry_ttl if ttl is None else ttl,
            )
        except (redis.RedisError, RsmqError) as e:
            log.warning("worker registry not renewed: %s", e, extra={"event": "registry_error"})

    def _heartbeat(self) -> None:
        """Extend running messages' vt before it runs out; give up on timed-out ones;
        renew the worker's registration."""
        renewed = time.monotonic()
        while not self._stopping.wait(0.2):
            if time.monotonic() - renewed >= min(REGISTRY_BEAT, self.registry_ttl / 3):
                renewed = time.monotonic()
                self._register()
            try:
                self._beat()
                self._record_timings()
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
                    elif now - job.extended >= runner.vt / 3:
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
                timeout = HandlerTimeout(f"handler still running after {h.timeout} s")
                self._fail(runner, job.msg, timeout, delay)
            for job in due:
                before = time.monotonic()
                with job.lock:
                    if job.given_up or job.finishing:
                        continue
                    if self._set_visibility(runner, job.msg, runner.vt):
                        job.deadline = before + runner.vt

    def _record_timings(self) -> None:
        """Record the deleted messages' times, one call per queue that has some."""
        for runner in list(self._runners.values()):
            with runner.lock:
                if not runner.timings:
                    continue
                taken = list(runner.timings)
                runner.timings.clear()
            now = time.monotonic()
            entries = [((now - at) * 1000, fr, wait, took) for at, fr, wait, took in taken]
            try:
                self.rsmq.record_timings(runner.handler.queue, entries)
            except (redis.RedisError, RsmqError) as e:
                # Only the statistics lose them: nothing about the messages changes.
                log.warning(
                    "could not record %d timing(s): %s",
                    len(entries),
                    e,
                    extra={"queue": runner.handler.queue, "event": "timings_error"},
                )

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
                        runner = channels[name]
                        runner.announced = True
                        runner.wake.set()
            except redis.RedisError as e:
                # Polling goes on meanwhile; subscribe again in a moment.
                log.warning("realtime channel lost: %s", e, extra={"event": "realtime_error"})
                self._stopping.wait(self.poll_interval)
            finally:
                pubsub.close()

    # -- stopping --------------------------------------------------------------------

    def _drain(self) -> None:
        """Stop receiving, let running handlers finish for up to `grace` s, delete what
        finished, release the rest."""
        deadline = time.monotonic() + self.grace
        for t in self._threads:
            if t.name.startswith("rsmq-recv-"):
                # A receive already on its way registers its messages before the loop
                # ends, and the loop deletes what finished before it.
                t.join(max(0.0, deadline - time.monotonic()))
        while True:
            with_jobs = False
            for runner in self._runners.values():
                self._flush(runner)
                with runner.lock:
                    with_jobs = with_jobs or any(not j.given_up for j in runner.jobs)
            if not with_jobs or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        for runner in self._runners.values():
            with runner.lock:
                left = [j for j in runner.jobs if not j.given_up and not j.finishing]
                for j in left:
                    j.given_up = True
            for job in left:
                runner.counts.released += 1
                self._set_visibility(runner, job.msg, 0)
            self._flush(runner)  # what finished since the last look
            # Handler threads still running (given up on) are left behind: their
            # messages were released.
            with runner.lock:
                runner.work.extend([None] * runner.handler.concurrency)
                runner.ready.notify_all()
        try:
            self._record_timings()
        except Exception:
            log.exception("timings not recorded", extra={"event": "timings_error"})
        self._register(ttl=0)
        log.info("worker stopped", extra={"event": "stop", "pid": os.getpid()})


def _said(queue: str, held: str, was: str, poll: float) -> None:
    """Log a change of what the queue's flow flag does to this worker."""
    extra = {"event": "flow", "queue": queue}
    if held == "paused":
        log.info("queue paused: receiving nothing, looking again every %g s", poll, extra=extra)
    elif held == "throttled" and was != "throttled":
        log.info("queue throttled: receiving as its rate allows", extra=extra)
    elif not held and was:
        log.info("queue %s no more: receiving as usual", was, extra=extra)


def _timing(job: _Job, done: float) -> tuple[float, int, float, float]:
    """(when deleted, fr, wait ms, processing ms) of a job deleted at ``done``.

    Processing runs from the first receive: this attempt's receive (the monotonic clock),
    and for a message received before (rc > 1), the time from its first receive (``fr``,
    the Redis clock) to this attempt's, by this machine's wall clock. Only for a message
    whose id tells when it was sent (another port's id may not: its wait is unknown)."""
    msg = job.msg
    assert msg.sent is not None
    took = (done - job.started) * 1000
    if msg.rc > 1:
        took += max(0.0, job.wall * 1000 - msg.fr)
    return done, msg.fr, max(0.0, msg.fr - msg.sent), took


def _seconds(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise InvalidArgument(name, f"{name} must be a finite number of seconds, 0 or more")


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
