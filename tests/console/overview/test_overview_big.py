"""The overview of a big namespace: sorted (and paged) by its last snapshot, with live
counters read only for the page it shows."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client

from dashboard.models import QueueCondition, Snapshot
from dashboard.snapshots import latest
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

N = 300


@pytest.fixture(scope="module")
def ns() -> str:
    """One namespace for the module: its queues are created once, and only read."""
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def many(redis_url: str, ns: str) -> Iterator[list[str]]:
    names = [f"q{i:04d}" for i in range(N)]
    with RedisSMQ(url=redis_url, ns=ns) as rsmq:
        for name in names:
            rsmq.create_queue(name)
        rsmq.send_messages("q0000", ["live"] * 5)  # live: q0000 has the most messages
        yield names
        for name in names:
            rsmq.delete_queue(name)


@pytest.fixture
def big(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latest, "LIVE_MAX", N // 3)


def snapshot(ns: str, names: list[str], age_s: float = 10) -> None:
    """A snapshot run of ``age_s`` ago in which q0299 had the most messages, q0298 next…"""
    at = round((time.time() - age_s) * 1000)
    Snapshot.objects.bulk_create(
        Snapshot(connection="default", namespace=ns, queue=q, taken_at=at + i % 7, msgs=i,
                 hiddenmsgs=0, inflight=0, delayed=0, totalsent=i, totalrecv=0, created=1)
        for i, q in enumerate(names)
    )  # fmt: skip


def _names(response) -> list[str]:
    assert response.status_code == 200
    return [s.qname for s in response.context["stats"]]


def test_it_sorts_a_big_namespace_by_its_last_snapshot_and_shows_live_counters(
    console, many, big, viewer: Client
) -> None:
    snapshot(console.ns, many)

    response = viewer.get(console.overview("?sort=-msgs"))

    assert _names(response) == [f"q{i:04d}" for i in range(N - 1, N - 51, -1)]
    assert {s.msgs for s in response.context["stats"]} == {0}  # live: the snapshot said 299…
    assert b"Sorted by the snapshot of" in response.content


def test_it_pages_a_big_namespace_in_the_snapshot_order(console, many, big, viewer: Client):
    snapshot(console.ns, many)

    response = viewer.get(console.overview("?sort=totalsent&page=2"))

    assert _names(response) == [f"q{i:04d}" for i in range(50, 100)]
    assert response.context["page_obj"].paginator.count == N


def test_it_searches_a_big_namespace_in_the_snapshot(console, many, big, viewer: Client):
    snapshot(console.ns, many)

    response = viewer.get(console.overview("?q=q01&sort=-visible"))

    assert _names(response) == [f"q{i:04d}" for i in range(199, 149, -1)]


def test_it_reads_a_big_namespace_sorted_by_a_counter_in_at_most_3_round_trips(
    console, many, big, wire, viewer: Client
) -> None:
    snapshot(console.ns, many)
    url = console.overview("?sort=-inflight")
    assert viewer.get(url).status_code == 200  # warm: connected, scripts loaded
    wire.sends = 0

    assert viewer.get(url).status_code == 200

    assert wire.sends <= 3


@pytest.mark.parametrize("sort", ["name", "-name", "oldest", "delayed"])
def test_it_reads_only_the_page_live_in_any_snapshot_order(
    console, many, big, viewer: Client, sort: str
) -> None:
    snapshot(console.ns, many)

    response = viewer.get(console.overview(f"?sort={sort}"))

    assert len(_names(response)) == 50


def test_it_sorts_live_when_the_last_snapshot_is_stale(console, many, big, viewer: Client):
    snapshot(console.ns, many, age_s=600)

    response = viewer.get(console.overview("?sort=-msgs"))

    assert _names(response)[0] == "q0000"  # live order
    assert b"Sorted by the snapshot of" not in response.content


def test_it_sorts_a_namespace_smaller_than_the_limit_live(console, many, viewer: Client):
    snapshot(console.ns, many)

    response = viewer.get(console.overview("?sort=-msgs"))

    assert _names(response)[0] == "q0000"


def test_it_sorts_by_the_last_snapshot_run_alone(console, many, big, viewer: Client) -> None:
    snapshot(console.ns, many, age_s=20)
    snapshot(console.ns, many)

    response = viewer.get(console.overview("?sort=-msgs"))

    assert response.context["page_obj"].paginator.count == N
    assert len(set(_names(response))) == 50


def conditions_of(ns: str, names: list[str]) -> dict[str, float]:
    """Each queue's judged condition (as dashboard/triage/conditions.py stores it at a snapshot):
    every 37th queue scored by how bad and big it is, the rest 0; returns the scores."""
    scores = {q: (i + 1) * 3.5 if i % 37 == 0 else 0.0 for i, q in enumerate(names)}
    QueueCondition.objects.bulk_create(
        QueueCondition(connection="default", namespace=ns, queue=q, taken_at=1, created=1,
                       msgs=0, totalsent=i, totalrecv=0, recv_since=1,
                       state="no_consumers" if scores[q] else "idle",
                       reason="no consumer for 20 min" if scores[q] else "", points=40,
                       size=1 + (i % 5), score=scores[q], send_rate=float(i % 11),
                       receive_rate=None if i % 3 else float(i))
        for i, q in enumerate(names)
    )  # fmt: skip
    return scores


@pytest.mark.parametrize("search", ["", "q01"])
def test_the_attention_order_pages_a_big_namespace_by_score_in_the_database(
    console, many, big, viewer: Client, search: str
) -> None:
    """The most urgent first (score), then the biggest (size), then by name: every page."""
    snapshot(console.ns, many)
    scores = conditions_of(console.ns, many)
    sizes = {q: 1 + (i % 5) for i, q in enumerate(many)}

    names: list[str] = []
    for page in range(1, N // 50 + 2):
        response = viewer.get(console.overview(f"?q={search}&page={page}"))
        names += [n for n in _names(response) if n not in names]

    mine = [q for q in many if search in q]
    assert names == sorted(mine, key=lambda q: (-scores[q], -sizes[q], q))
    top = viewer.get(console.overview(f"?q={search}")).content.decode()
    assert "no consumer for 20 min" in top and "data-consumer-state" in top


@pytest.mark.parametrize("sort", ["send_rate", "-send_rate", "receive_rate", "-receive_rate"])
def test_the_rate_columns_sort_a_big_namespace(console, many, big, viewer: Client, sort):
    snapshot(console.ns, many)
    conditions_of(console.ns, many)
    rates = {q: (float(i % 11), None if i % 3 else float(i)) for i, q in enumerate(many)}
    col = 0 if "send" in sort else 1

    def key(q: str) -> tuple[object, ...]:
        v = rates[q][col]
        if sort.startswith("-"):  # the highest first, unknown last
            return (v is None, -(v or 0), q)
        return (v is not None, v or 0, q)

    response = viewer.get(console.overview(f"?sort={sort}"))
    assert _names(response) == sorted(many, key=key)[:50]
