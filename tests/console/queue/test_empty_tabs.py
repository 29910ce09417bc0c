"""A tab the counts say is empty costs no reading: the delayed tab of a queue whose hidden
messages are all in flight (counted exactly) reads no message, and one whose count is an
estimate of none takes one script call's look (Next goes on), not the time budget and the
patience a page that will find something gets — reading 20,000 in-flight messages for
none took the page past its budget (bench/RESULTS.md, "Dashboard pages")."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from dashboard.places.place import resolve
from dashboard.views import queue as page
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def sends(wire, viewer: Client, url: str) -> int:
    viewer.get(url)  # warm: the connection, the page's own reads
    wire.sends = 0
    viewer.get(url)
    return wire.sends


def test_an_exactly_empty_delayed_tab_reads_no_message(console, rsmq: RedisSMQ, wire, viewer):
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["x"] * 300)
    rsmq.receive_messages("q1", 300, vt=3600)  # every hidden one in flight, counted exactly
    delayed = sends(wire, viewer, console.queue("q1", "?state=delayed"))
    inflight = sends(wire, viewer, console.queue("q1", "?state=inflight"))
    assert delayed < inflight  # the in-flight tab reads its page; the delayed one none
    page = viewer.get(console.queue("q1", "?state=delayed")).content.decode()
    assert "No delayed messages." in page


def test_an_estimated_none_takes_one_look(console, rsmq, monkeypatch) -> None:
    asked = {}
    real = page.bounds

    def spy(patience: bool = False):
        asked["patience"] = patience
        return real(patience)

    monkeypatch.setattr(page, "bounds", spy)
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["x"] * 3000)
    rsmq.receive_messages("q1", 1000, vt=3600)
    rsmq.receive_messages("q1", 1000, vt=3600)  # 2,000 hidden: the split is sampled
    stats = rsmq.queue_stats(["q1"])[0]
    assert not stats.exact and stats.delayed == 0
    request = RequestFactory().get(console.queue("q1", "?state=delayed"))
    got = page.browse(resolve("default", console.ns), "q1", request.GET, stats=stats)
    assert asked["patience"] is False
    assert got["browse"].calls == 1 and got["items"] == []
    assert got["next_cursor"]  # Next looks further
