"""Issue 21's first "done when": `./run` served for real, 300+ queues and live traffic —
the incidents (no consumer on a big growing backlog, a crash loop, consumers falling
behind) lead the default order of the overview, worst first, with their reasons in
words; the quiet, the healthy, the scheduled (delayed only) and the small ones whose few
messages are old do not. Snapshots come from ./run's own Celery worker and beat."""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.served import Served, start
from support.workers.harness import WorkerProcess, wait_for

from queues import RedisSMQ

pytestmark = pytest.mark.slow

SMALL_OLD = 170  # small queues whose 2 messages pass the SLO: nothing consumes them
QUIET = 130  # empty queues
HEALTHY = 5
NS = "triage"


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    console = start(
        clone,
        RSMQ_SNAPSHOT_INTERVAL="2",
        RSMQ_BACKLOG_WINDOW="6",
        RSMQ_NO_CONSUMER_AFTER="6",
        RSMQ_OLDEST_AGE_SLO="3",
        RSMQ_BACKLOG_GROWTH_MIN="50",
        RSMQ_REFRESH_SECONDS="0",
        RSMQ_NAMESPACE=f"rsmq,{NS}",  # the demo queues stay in rsmq
    )
    try:
        console.wait_ready()
        console.login()
        yield console
    finally:
        console.stop()


class Traffic:
    """Senders at a steady rate, each a thread with its own connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def send(self, queue: str, per_second: float, body: str = "x", delay: int = 0) -> None:
        def run() -> None:
            rsmq = RedisSMQ(url=self.url, ns=NS)
            while not self.stop.wait(1 / per_second):
                rsmq.send_message(queue, body, delay=delay)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(5)


def rows(page: str) -> list[tuple[str, str, str]]:
    """(queue, consumer state, reasons) of each row of the overview's table, in order."""
    out = []
    for tr in re.findall(r"<tr[^>]*data-state=\"[^\"]*\">.*?</tr>", page, re.S):
        name = re.search(r'<td class="qname"><a href="[^"]*">([^<]+)</a>', tr)[1]
        state = re.search(r'data-state="([^"]*)"', tr)[1]
        reasons = " · ".join(
            html.unescape(r) for r in re.findall(r'<span class="reason">([^<]*)<', tr)
        )
        out.append((name, state, reasons))
    return out


def test_the_incidents_lead_the_default_order_with_their_reasons(
    served: Served, tmp_path: Path
) -> None:
    url = f"redis://127.0.0.1:{served.redis_port}/0"
    rsmq = RedisSMQ(url=url, ns=NS)
    names = [
        "payments",
        "mail",
        "reports",
        "scheduled",
        *(f"healthy-{i}" for i in range(HEALTHY)),
        *(f"old-{i:03d}" for i in range(SMALL_OLD)),
        *(f"quiet-{i:03d}" for i in range(QUIET)),
    ]
    for name in names:
        rsmq.create_queue(name)
    assert len(names) >= 300
    for i in range(SMALL_OLD):
        rsmq.send_messages(f"old-{i:03d}", ["a", "b"])
    for _ in range(20):
        rsmq.send_messages("payments", ["order"] * 1000)
    rsmq.send_messages("mail", [json.dumps({"to": "x"})] * 30)
    rsmq.send_messages("scheduled", ["later"] * 50, delay=3600)
    worker = WorkerProcess(tmp_path / "worker.log", "support.workers.triage:worker", url, NS,
                           env={"TRIAGE_HEALTHY": str(HEALTHY)})  # fmt: skip
    traffic = Traffic(url)
    try:
        worker.wait_started()
        traffic.send("payments", 20)  # nobody consumes it
        traffic.send("mail", 2)  # every one fails
        traffic.send("reports", 15)  # 5/s taken
        for i in range(HEALTHY):
            traffic.send(f"healthy-{i}", 5)
        traffic.send("scheduled", 2, delay=3600)

        named = {("payments", "no_consumers"), ("mail", "crash_looping"),
                 ("reports", "falling_behind")}  # fmt: skip

        def led() -> list[tuple[str, str, str]] | None:
            # Once each incident is named (a few snapshots: its window, its quiet time).
            top = rows(served.get(f"/c/default/{NS}/").text)
            return top if {(r[0], r[1]) for r in top[:3]} == named else None

        top = wait_for(led, 120, "the incidents to lead the overview", every=1)
    finally:
        traffic.close()
        worker.stop()

    by_name = {name: (state, reasons) for name, state, reasons in top}
    # Worst first: the big growing backlog nobody consumes.
    assert top[0][0] == "payments", top[:5]
    state, reasons = by_name["payments"]
    assert state == "no_consumers"
    assert re.search(r"no consumer for \d+ s", reasons), reasons
    assert re.search(r"backlog \+[\d,]+ in \d+ s \([\d,]+\)", reasons), reasons
    assert by_name["mail"][0] == "crash_looping"
    assert (
        "crash-looping:" in by_name["mail"][1] and "messages received up to" in by_name["mail"][1]
    )
    assert by_name["reports"][0] == "falling_behind"
    assert "falling behind:" in by_name["reports"][1]
    # The rest follow: never the healthy, the scheduled or a small old one before them.
    rest = [n for n, _, _ in top[3:]]
    assert set(rest) & {f"old-{i:03d}" for i in range(SMALL_OLD)}  # they come next
    for name in ("scheduled", *(f"healthy-{i}" for i in range(HEALTHY))):
        assert by_name.get(name, ("", ""))[0] in ("", "healthy", "idle"), by_name.get(name)
