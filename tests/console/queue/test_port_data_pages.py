"""Every port's data, read (issue 24 item 4): a queue made and fed by Node rsmq 0.12.4,
PyRSMQ 0.6.1 or go-rsmq (its writes replayed, tests/support/go_rsmq.py) shows on the
overview with its counts, in the read API, the CLI and the snapshot; its messages carry
the sent time their ids hold — and go-rsmq's, whose ids hold none, carry none ("unknown",
null), never a date made up from random characters."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import redis
from django.test import Client
from rsmq import RedisSMQ as PyRSMQ
from support.go_rsmq import GoRsmq
from support.node_rsmq import NodeRsmq

from dashboard.models import Snapshot
from dashboard.triage.conditions import take_snapshot
from queues.cli import main as cli_main
from queues.server import EmbeddedRedis

pytestmark = pytest.mark.django_db

PORTS = ("node", "pyrsmq", "go")


@pytest.fixture
def fed(
    request: pytest.FixtureRequest, console, redis_server: EmbeddedRedis, ns: str
) -> Iterator[tuple[str, list[str]]]:
    """Queue "w" made by the port, 3 messages sent, one received (vt 600)."""
    port = request.param
    if port == "node":
        node = NodeRsmq(request.getfixturevalue("node_driver"), redis_server.port, ns)
        got = node.run(
            ("createQueue", {"qname": "w"}),
            *[("sendMessage", {"qname": "w", "message": f"job {i}"}) for i in range(3)],
            ("receiveMessage", {"qname": "w", "vt": 600}),
        )
        yield port, got[1:4]
    elif port == "pyrsmq":
        py = PyRSMQ(host="127.0.0.1", port=redis_server.port, ns=ns, exceptions=True)
        py.createQueue(qname="w").execute()
        ids = [py.sendMessage(qname="w", message=f"job {i}").execute() for i in range(3)]
        py.receiveMessage(qname="w", vt=600).execute()
        py.client.close()
        yield port, ids
    else:
        raw = redis.Redis.from_url(redis_server.url)
        go = GoRsmq(raw, ns)
        go.create_queue("w")
        ids = [go.send_message("w", f"job {i}") for i in range(3)]
        go.receive_message("w", vt=600)
        raw.close()
        yield port, ids


def shown(html: bytes) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.decode()))


@pytest.mark.parametrize("fed", PORTS, indirect=True)
def test_the_overview_counts_its_queue(console, fed, viewer: Client) -> None:
    body = viewer.get(console.overview()).content.decode()
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*q/w/(?:(?!</tr>).)*</tr>", body, re.S)
    assert row, "no row for the queue"
    assert "unreadable" not in row.group(0).lower()
    assert re.search(r">\s*3\s*<", row.group(0))  # its 3 messages


@pytest.mark.parametrize("fed", PORTS, indirect=True)
def test_its_messages_sent_time_is_theirs_or_unknown(console, fed, viewer: Client) -> None:
    port, ids = fed
    html = viewer.get(console.queue("w")).content.decode()
    cells = [c for c in re.findall(r"<td>(.*?)</td>", html, re.S) if "time" in c or "unknown" in c]
    times = [re.search(r'datetime="([^"]+)"', c) for c in cells]
    assert not re.search(r"\b19[67]\d-", html)  # no 1970s dates
    if port == "go":
        assert sum("unknown" in c for c in cells) >= 3
    else:
        assert "unknown" not in shown(html.encode())
        years = {t.group(1)[:2] for t in times if t}
        assert len([t for t in times if t]) >= 3 and years == {"20"}


@pytest.mark.parametrize("fed", PORTS, indirect=True)
def test_the_read_api_counts_it(console, fed, settings) -> None:
    settings.RSMQ_METRICS_TOKEN = "tok"
    got = Client().get(
        f"/api/c/{console.conn}/{console.ns}/queues/w/", HTTP_AUTHORIZATION="Bearer tok"
    )
    d = got.json()
    assert got.status_code == 200 and d["unreadable"] is None
    assert (d["counts"]["msgs"], d["counts"]["inflight"]) == (3, 1)
    assert d["attributes"]["created"]


@pytest.mark.parametrize("fed", PORTS, indirect=True)
def test_the_cli_reads_it(fed, redis_url: str, ns: str, capsys) -> None:
    port, ids = fed
    base = ["--url", redis_url, "--ns", ns]
    assert cli_main([*base, "queue", "describe", "-n", "w"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["msgs"] == 3 and d["created"] > 1_600_000_000
    assert cli_main([*base, "message", "list", "-n", "w"]) == 0
    out = json.loads(capsys.readouterr().out)
    items = out["items"] if isinstance(out, dict) else out
    sent = {m["id"]: m["sent"] for m in items}
    assert set(sent) == set(ids)
    if port == "go":
        assert all(s is None for s in sent.values())
    else:
        assert all(s and s / 1000 > 1_600_000_000 for s in sent.values())


@pytest.mark.parametrize("fed", PORTS, indirect=True)
def test_the_snapshot_counts_it(console, lake, fed) -> None:
    port, _ = fed
    take_snapshot()
    row = Snapshot.objects.get(queue="w")
    assert (row.msgs, row.inflight, row.visible) == (3, 1, 2)
    assert row.created > 1_600_000_000
    if port == "go":
        assert row.oldest_age is None  # no wait time made up
    else:
        assert row.oldest_age is not None and 0 <= row.oldest_age < 3600
