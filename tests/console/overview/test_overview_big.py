"""The overview of a big namespace: sorted (and paged) by its last snapshot, with live
counters read only for the page it shows."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client

from dashboard import latest
from dashboard.models import Snapshot
from dashboard.views import overview
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


@pytest.mark.parametrize("search", ["", "q01"])
def test_the_attention_order_ranks_few_and_pages_the_rest_in_the_database(
    console, many, big, viewer: Client, settings, monkeypatch: pytest.MonkeyPatch, search: str
) -> None:
    """Queues that may need attention ranked in Python, the rest paged by the database:
    every page the same as ranking every queue (RANKED_MAX 0 ranks them all)."""
    settings.RSMQ_OLDEST_AGE_SLO = 60
    snapshot(console.ns, many)
    # Some queues over their SLO (by how much decides their rank), the rest not.
    for i, q in enumerate(many[::37]):
        Snapshot.objects.filter(queue=q).update(oldest_age=61 + 7 * i)

    def order() -> list[str]:
        names = []
        for page in range(1, N // 50 + 2):
            response = viewer.get(console.overview(f"?q={search}&page={page}"))
            names += [n for n in _names(response) if n not in names]
        return names

    few = order()
    monkeypatch.setattr(overview, "RANKED_MAX", 0)
    assert few == order()
    over = [q for q in many[::37] if not search or search in q]
    assert few[: len(over)] == sorted(over, key=lambda q: -many[::37].index(q))
    assert len(few) == len([q for q in many if search in q])
