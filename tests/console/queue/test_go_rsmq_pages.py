"""A queue made and fed by go-rsmq (its writes replayed, tests/support/go_rsmq.py) in the
console: on the overview with its counts and readable times, its messages with no
made-up sent time on the queue page, the message page's neighbours, the read API and the
snapshot; what its deletes leave behind shown on the queue page and cleaned up there
(admins, the name typed, audited, nothing a live message owns touched)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import redis
from django.test import Client
from support.go_rsmq import GoRsmq

from dashboard.models import AuditEntry, Snapshot
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ
from queues.server import EmbeddedRedis

pytestmark = pytest.mark.django_db


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def go(console, raw: redis.Redis, ns: str) -> GoRsmq:
    g = GoRsmq(raw, ns)
    g.create_queue("go")
    g.ids = [g.send_message("go", f"job {i}") for i in range(3)]  # type: ignore[attr-defined]
    g.receive_message("go", vt=600)
    return g


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_overview_shows_it_with_its_counts(console, go: GoRsmq, viewer: Client) -> None:
    page = viewer.get(console.overview())
    assert page.status_code == 200
    body = page.content.decode()
    assert "unreadable" not in body.lower()
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*q/go/(?:(?!</tr>).)*</tr>", body, re.S)
    assert row, "no row for the go queue"
    cells = text(type("R", (), {"content": row.group(0).encode()})())
    assert re.search(r"\b3\b", cells)  # its messages counted


def test_its_queue_page_says_sent_unknown(console, go: GoRsmq, viewer: Client) -> None:
    page = viewer.get(console.queue("go", "?leftovers=1"))
    assert page.status_code == 200
    shown = text(page)
    assert shown.count("unknown") >= 3
    assert not re.search(r"\b19[67]\d\b", shown)  # no 1970s dates


def test_the_read_api_counts_it(console, go: GoRsmq, settings) -> None:
    settings.RSMQ_METRICS_TOKEN = "tok"
    got = Client().get(
        f"/api/c/{console.conn}/{console.ns}/queues/go/", HTTP_AUTHORIZATION="Bearer tok"
    )
    assert got.status_code == 200
    d = got.json()
    assert d["unreadable"] is None and d["counts"]["msgs"] == 3
    assert d["counts"]["inflight"] == 1 and d["counts"].get("oldest_age") is None


def test_the_snapshot_counts_it_with_no_made_up_age(console, lake, go: GoRsmq) -> None:
    take_snapshot()
    row = Snapshot.objects.get(queue="go")
    assert (row.msgs, row.inflight, row.visible) == (3, 1, 2)
    assert row.oldest_age is None and row.created > 1_600_000_000


def test_an_admin_cleans_up_its_orphans(
    console, go: GoRsmq, admin: Client, viewer: Client, raw: redis.Redis, ns: str
) -> None:
    go.delete_message("go", go.ids[0])  # type: ignore[attr-defined]
    shown = text(viewer.get(console.queue("go", "?leftovers=1")))
    assert "1 orphaned message field" in shown and "Clean up" not in shown
    assert "Clean up" in text(admin.get(console.queue("go", "?leftovers=1")))
    live = {k for k in raw.hkeys(f"{ns}:go:Q") if k != go.ids[0].encode()}  # type: ignore[attr-defined]
    wrong = admin.post(console.act("go"), {"action": "clean_orphans", "orphans-confirm": "g"})
    assert wrong.status_code == 422 and raw.hexists(f"{ns}:go:Q", go.ids[0])  # type: ignore[attr-defined]
    done = admin.post(
        console.act("go"), {"action": "clean_orphans", "orphans-confirm": "go"}, follow=True
    )
    assert console.flashes(done) == ["Deleted 1 orphaned message field (5 bytes) from go."]
    assert set(raw.hkeys(f"{ns}:go:Q")) == live
    row = AuditEntry.objects.filter(outcome="ok").get()
    assert (row.queue, row.action, row.count) == ("go", "clean_orphans", 1)
    assert "Nothing left behind" in text(viewer.get(console.queue("go", "?leftovers=1")))
    assert "Look for what other clients left behind" in text(viewer.get(console.queue("go")))


def test_an_operator_may_not_clean_up(console, go: GoRsmq, operator: Client, raw, ns) -> None:
    go.delete_message("go", go.ids[0])  # type: ignore[attr-defined]
    got = operator.post(console.act("go"), {"action": "clean_orphans", "orphans-confirm": "go"})
    assert got.status_code == 403 and raw.hexists(f"{ns}:go:Q", go.ids[0])  # type: ignore[attr-defined]


def test_an_admin_deletes_a_left_over_hash(
    console, go: GoRsmq, admin: Client, raw: redis.Redis, ns: str, rsmq: RedisSMQ
) -> None:
    go.delete_queue("go")
    shown = text(admin.get(console.queue("go", "?leftovers=1")))
    assert "left over" in shown
    done = admin.post(
        console.act("go"), {"action": "clean_leftover", "leftover-confirm": "go"}, follow=True
    )
    assert "Deleted the left-over hash of go." in console.flashes(done)
    assert not raw.exists(f"{ns}:go:Q")
    assert AuditEntry.objects.filter(outcome="ok").get().action == "clean_leftover"


@pytest.fixture
def own_redis(tmp_path, settings, console) -> Iterator[EmbeddedRedis]:
    """The console on a redis-server of this test's own: the look for left-over hashes
    SCANs the whole database, which the session's shared one fills with every test's keys
    (past LEFTOVER_SCAN_STEPS the look stops at its bound)."""
    with EmbeddedRedis(tmp_path / "redis") as s:
        settings.RSMQ_CONNECTIONS = [
            {"name": "default", "url": s.url, "namespaces": [console.ns], "environment": "test"}
        ]
        yield s


def test_the_overview_links_a_left_over_hash(
    console, own_redis: EmbeddedRedis, admin: Client
) -> None:
    raw = redis.Redis.from_url(own_redis.url)
    go = GoRsmq(raw, console.ns)
    go.create_queue("go")
    assert "Look for left-over queue hashes" in admin.get(console.overview()).content.decode()
    assert "No left-over" in admin.get(console.overview("?leftovers=1")).content.decode()
    go.delete_queue("go")
    assert "Left-over queue hash" not in admin.get(console.overview()).content.decode()
    body = admin.get(console.overview("?leftovers=1")).content.decode()
    assert "Left-over queue hash" in body
    assert f'href="{console.queue("go")}?leftovers=1#leftovers"' in body


MESSAGE_LINK = re.compile(r'<a href="([^"]*/q/go/m/member:([0-9a-f]+)/)">([^<]+)</a>')


def test_its_messages_open_from_the_list_read_only_but_deletable(
    console, go: GoRsmq, operator: Client, admin: Client, raw: redis.Redis, ns: str
) -> None:
    """go-rsmq's 22-character ids are no RSMQ ids: the list links each to its page (the
    member's hex in the URL), which shows its body and counts and offers Delete only."""
    links = MESSAGE_LINK.findall(operator.get(console.queue("go")).content.decode())
    assert sorted(shown for _, _, shown in links) == sorted(go.ids)  # type: ignore[attr-defined]
    url, hexed, mid = next(link for link in links if link[2] == go.ids[1])  # type: ignore[attr-defined]
    assert bytes.fromhex(hexed).decode() == mid

    page = operator.get(url)

    assert page.status_code == 200
    shown = text(page)
    assert "job 1" in shown and mid in shown and "unknown" in shown
    assert "it can be read and deleted here, not requeued" in shown
    body = page.content.decode()
    assert 'value="delete"' in body
    assert not re.search(r'value="(requeue|visibility|move|resend)"', body)

    refused = operator.post(url + "act/", {"action": "requeue"}, follow=True)
    assert "id: this message's id is no RSMQ id" in " ".join(console.flashes(refused))
    assert raw.zscore(f"{ns}:go", mid) is not None
    done = operator.post(url + "act/", {"action": "delete"}, follow=True)

    assert console.flashes(done)[-1] == f"Deleted message {mid}."
    assert raw.zscore(f"{ns}:go", mid) is None and not raw.hexists(f"{ns}:go:Q", mid)
    assert operator.get(url).status_code == 404
    rows = AuditEntry.objects.order_by("id")
    assert [(r.action, r.outcome) for r in rows] == [("requeue", "invalid"), ("delete", "ok")]
    # its Undo (an admin's) puts it back under the same member
    action, token = console.undo_button(done)
    data = {"action": "undo", "undo-token": token, "undo-confirm": "yes"}
    assert console.flashes(admin.post(action, data, follow=True))[-1] == (
        "Undid the delete of go: put back 1 message."
    )
    assert "job 1" in text(operator.get(url))


def test_a_member_url_past_the_bound_or_not_hex_is_a_404(console, go: GoRsmq, viewer) -> None:
    assert viewer.get(console.queue("go", "m/member:zz/")).status_code == 404
    assert viewer.get(console.queue("go", "m/member:" + "ab" * 1025 + "/")).status_code == 404
    assert viewer.get(console.queue("go", "m/member:" + b"nope".hex() + "/")).status_code == 404
