"""Nothing audited is lost: the API under load from several clients, a web process killed
with SIGKILL twice (gunicorn starts another), and every call that was answered 2xx has its
audit row once the records are drained — the record is written by the call's own script
in Redis, atomically with the operation, so a process that dies loses none."""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.served import Served, call, make_token, processes_in, request, serving

pytestmark = pytest.mark.slow
QUEUE = "kill-audit"


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    with serving(clone, "--no-celery", log_name="api-kill.log") as console:
        yield console


def web_workers(served: Served) -> list[psutil.Process]:
    """The web server's worker processes: the children of granian's main process (as
    ./run serves the console), or of gunicorn's master."""
    found = []
    for p in processes_in(served.clone):
        try:
            parent = p.parent()
            if parent is None:
                continue
            line, own = " ".join(parent.cmdline()), " ".join(p.cmdline())
            if "resource_tracker" in own:
                continue
            if "granian" in line or ("gunicorn" in line and "gunicorn" in own):
                found.append(p)
        except psutil.NoSuchProcess:
            continue
    return found


class Client:
    """A client on its own keep-alive connection, looping send → receive → delete, that
    notes every call answered 2xx: (action, message id)."""

    def __init__(self, served: Served, token: str) -> None:
        self.port, self.token = served.port, token
        self.answered: list[tuple[str, str]] = []
        self.failed = 0
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def call(self, method: str, path: str, body: object = None) -> object | None:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        try:
            data = json.dumps(body).encode() if body is not None else None
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
            raw = r.read()
            if 200 <= r.status < 300:
                return json.loads(raw)
        except (OSError, http.client.HTTPException):
            self.conn.close()  # its process was killed: a new connection next time
        self.failed += 1
        return None

    def loop(self, until: threading.Event) -> None:
        base = f"/api/queues/{QUEUE}"
        while not until.is_set():
            sent = self.call("POST", f"{base}/messages/", {"message": "m"})
            if isinstance(sent, dict):
                self.answered.append(("send", sent["id"]))
            got = self.call("POST", f"{base}/receive/", {"n": 1, "vt": 60})
            if not isinstance(got, dict) or not got["messages"]:
                continue
            mid = got["messages"][0]["id"]
            self.answered.append(("receive", mid))
            done = self.call("DELETE", f"{base}/messages/{mid}/")
            if isinstance(done, dict) and done["result"]:
                self.answered.append(("delete", mid))


def answers(served: Served) -> bool:
    try:
        return request(served.port, "/healthz", timeout=2).status == 200
    except OSError:
        return False


def test_every_answered_call_has_its_audit_row_after_kill_9(served: Served) -> None:
    admin = make_token(served, "kill-admin", "admin")
    token = make_token(served, "kill-bot", "operator", per_minute=100_000)
    assert call(served, "PUT", f"/api/queues/{QUEUE}/", admin, {}).status == 201
    before = {p.pid for p in web_workers(served)}
    assert len(before) >= 2
    clients = [Client(served, token) for _ in range(6)]
    stop = threading.Event()
    threads = [threading.Thread(target=c.loop, args=(stop,)) for c in clients]
    for t in threads:
        t.start()
    killed = []
    try:
        for _ in range(2):
            time.sleep(1.5)
            victim = web_workers(served)[0]
            victim.send_signal(signal.SIGKILL)
            killed.append(victim.pid)
        time.sleep(1.5)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    answered = [a for c in clients for a in c.answered]
    assert len(answered) > 30, "too little load to mean anything"
    # granian started new workers in place of the killed ones, and they answer: a worker
    # process is there a moment before it listens (a request then is refused).
    deadline = time.monotonic() + 30
    while len(web_workers(served)) < len(before) and time.monotonic() < deadline:
        time.sleep(0.3)
    now = {p.pid for p in web_workers(served)}
    assert not now & set(killed) and len(now) == len(before)
    while not answers(served) and time.monotonic() < deadline:
        time.sleep(0.3)

    # The audit page moves every record left in Redis into the table first.
    page = served.get("/audit/")
    assert page.status == 200 and "audit-pending" not in page.text
    db = sqlite3.connect(served.clone / ".data" / "db.sqlite3")
    rows = db.execute(
        "SELECT action, ids, outcome FROM dashboard_auditentry WHERE username = ?",
        ("token:kill-bot",),
    ).fetchall()
    recorded = {(action, mid) for action, ids, outcome in rows if outcome == "ok"
                for mid in json.loads(ids)}  # fmt: skip
    missing = [a for a in answered if a not in recorded]
    assert not missing, f"{len(missing)} of {len(answered)} answered calls have no audit row"
    # Each record once: no call's row written twice by two drains.
    records = db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT record) FROM dashboard_auditentry"
        " WHERE username = ?", ("token:kill-bot",),
    ).fetchone()  # fmt: skip
    assert records[0] == records[1] >= len(answered)
