"""Real `rsmq worker` processes for the tests, and the records their handlers leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import redis

from queues import RedisSMQ

ROOT = Path(__file__).resolve().parents[3]
TESTS = ROOT / "tests"


class WorkerProcess:
    """``python -m queues.cli [--url URL --ns NS] worker TARGET ARGS...``, output to a file."""

    def __init__(
        self,
        log: Path,
        target: str = "support.workers.app:worker",
        url: str | None = None,
        ns: str | None = None,
        args: Iterable[str] = (),
        env: dict[str, str] | None = None,
        cpus: str | None = None,
    ) -> None:
        self.log = log
        command = [sys.executable, "-m", "queues.cli"]
        if url is not None:
            command += ["--url", url]
        if ns is not None:
            command += ["--ns", ns]
        command += ["worker", target, *args]
        if cpus is not None:
            command = ["taskset", "-c", cpus, *command]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("RSMQ_", "WORKER_"))}
        full_env.update(env or {})
        full_env["PYTHONPATH"] = os.pathsep.join((str(ROOT), str(TESTS)))
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                command, cwd=ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT
            )
        self.pid = self.proc.pid

    def children(self) -> list[int]:
        """The pids of this process's children (``--processes N`` starts N of them)."""
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def worker_children(self) -> list[int]:
        """The worker processes of ``--processes N`` (not multiprocessing's resource tracker)."""
        out = []
        for pid in self.children():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline:
                out.append(pid)
        return out

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_started(self, processes: int = 1, timeout: float = 15) -> None:
        """Until ``processes`` workers have logged that they started (text or JSON logs)."""
        wait_for(
            lambda: self.output().count("worker started") >= processes or self.proc.poll(),
            timeout,
            f"{processes} started worker(s)",
        )
        assert self.proc.poll() is None, f"the worker exited: {self.output()}"

    def stop(self) -> None:
        """SIGTERM it and its workers, then SIGKILL whatever of them still runs after 5 s."""
        children = self.children()
        self.signal(signal.SIGTERM)
        for pid in self.worker_children():
            os.kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(5)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_for(condition: Callable[[], Any], timeout: float, what: str, every: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class Records:
    """The records the handlers of workers/app.py send to the results queue, as they come."""

    def __init__(self, rsmq: RedisSMQ, queue: str = "results") -> None:
        self.rsmq = rsmq
        self.queue = queue
        self.items: list[dict[str, Any]] = []
        rsmq.create_queue(queue)

    def fetch(self) -> list[dict[str, Any]]:
        while msgs := self.rsmq.pop_messages(self.queue, 1000):
            self.items += [json.loads(m.message) for m in msgs]
        return self.items

    def ends(self) -> list[dict[str, Any]]:
        return [r for r in self.fetch() if r["event"] == "end"]

    def wait(self, n: int, timeout: float = 15, event: str = "end") -> list[dict[str, Any]]:
        """At least ``n`` records of ``event``; all of them, in the order they were sent."""

        def enough() -> list[dict[str, Any]] | None:
            got = [r for r in self.fetch() if r["event"] == event]
            return got if len(got) >= n else None

        try:
            return wait_for(enough, timeout, f"{n} {event} records")
        except AssertionError as e:
            raise AssertionError(f"{e}; got {self.items}") from None


class Monitor:
    """The commands Redis runs meanwhile, as MONITOR shows them (read by a thread).

    ``with Monitor(url) as m: ...`` then ``m.calls(script, key)``: the EVALSHA calls of
    a script (queues.scripts) on a key, each as its list of arguments after the keys.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.commands: list[dict[str, Any]] = []
        self._last = f"monitor-end-{os.getpid()}-{time.monotonic_ns()}"

    def __enter__(self) -> Monitor:
        self._client = redis.Redis.from_url(self.url, decode_responses=True)
        self._monitor = self._client.monitor()
        self._monitor.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        while True:
            command = self._monitor.next_command()
            if command["command"] == f"ECHO {self._last}":
                return
            self.commands.append(command)

    def __exit__(self, *exc: object) -> None:
        poke = redis.Redis.from_url(self.url)
        poke.echo(self._last)  # the reader reads up to this command: nothing is left out
        self._thread.join(10)
        poke.close()
        self._monitor.__exit__()
        self._client.close()

    def calls(self, sha: str, key: str) -> list[tuple[float, list[str]]]:
        """(Redis time, ARGV) of every EVALSHA of script ``sha`` whose first key is ``key``."""
        out = []
        for c in self.commands:
            words = c["command"].split(" ")
            if words[:2] == ["EVALSHA", sha] and words[3] == key:
                out.append((c["time"], words[3 + int(words[2]) :]))
        return out
