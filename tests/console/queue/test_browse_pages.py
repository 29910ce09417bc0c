"""The queue page's pager: keyset pages through every tab, first / last / page / time,
and links that went stale or were edited landing on a real page with a note."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.test import Client

from queues import RedisSMQ


@pytest.fixture
def hidden(console, settings, rsmq: RedisSMQ) -> dict[str, list[str]]:
    """q1: 4 visible, then 9 in flight and 8 delayed interleaved by visible-at time."""
    settings.RSMQ_PAGE_SIZE = 3
    rsmq.create_queue("q1")
    visible = rsmq.send_messages("q1", [f"v{i}" for i in range(13)])
    inflight: list[str] = []
    delayed: list[str] = []
    for i in range(9):
        m = rsmq.receive_message("q1", vt=1000 + 20 * i)
        assert m is not None
        inflight.append(m.id)
        if i < 8:
            delayed += rsmq.send_messages("q1", [f"d{i}"], delay=1010 + 20 * i)
    return {"visible": visible[9:], "inflight": inflight, "delayed": delayed}


def ids(response) -> list[str]:
    return [m.id for m in response.context["items"]]


def link(response, which: str) -> str | None:
    found = re.search(rf'<a href="(\?[^"]*)"[^>]*data-page="{which}"', response.content.decode())
    return html.unescape(found.group(1)) if found else None


def notes(response) -> list[str]:
    return re.findall(r"data-browse-note>([^<]*)<", html.unescape(response.content.decode()))


@pytest.mark.parametrize("state", ["inflight", "delayed", "visible"])
def test_next_then_previous_walks_every_message_of_a_tab(
    console, hidden, viewer: Client, state: str
) -> None:
    response = viewer.get(console.queue("q1", f"?state={state}"))
    pages = [ids(response)]
    assert link(response, "prev") is None
    while nxt := link(response, "next"):
        response = viewer.get(console.queue("q1", nxt))
        pages.append(ids(response))
    assert sum(pages, []) == hidden[state]
    assert all(len(p) == 3 for p in pages[:-1])
    back = []
    while prev := link(response, "prev"):
        response = viewer.get(console.queue("q1", prev))
        back.insert(0, ids(response))
    assert sum(back, []) == hidden[state][: len(sum(back, []))]
    assert back[0] == hidden[state][:3]


def test_last_goes_to_the_end_of_a_tab(console, hidden, viewer: Client) -> None:
    last = viewer.get(console.queue("q1", "?state=delayed&last=1"))
    assert ids(last) == hidden["delayed"][-3:]
    assert link(last, "next") is None and link(last, "prev")


def test_a_page_number_past_the_end_shows_the_last_page_and_says_so(
    console, hidden, viewer: Client, rsmq: RedisSMQ
) -> None:
    response = viewer.get(console.queue("q1", "?page=99"))
    everything = [m.id for m in rsmq.browse("q1", limit=100).items]
    assert ids(response) == everything[-(len(everything) % 3 or 3) :]
    assert notes(response) == ["Page 99 is past the end (7 pages now): showing the last page."]
    assert "Page 7 of 7 · 21 messages" in response.content.decode()


def test_a_cursor_whose_messages_are_gone_lands_on_the_last_page(
    console, hidden, viewer: Client, rsmq: RedisSMQ
) -> None:
    response = viewer.get(console.queue("q1", "?state=visible"))
    nxt = link(response, "next")
    assert nxt
    rsmq.delete_messages("q1", hidden["visible"][1:])  # the rest of the tab went away
    stale = viewer.get(console.queue("q1", nxt))
    assert ids(stale) == hidden["visible"][:1]
    assert notes(stale) == ["Nothing after that place any more: showing the last page."]


@pytest.mark.parametrize("cursor", ["garbage", "12~zz", "nan~00", "1e999~00"])
def test_an_edited_cursor_is_a_note_and_the_first_page(
    console, hidden, viewer: Client, cursor: str
) -> None:
    response = viewer.get(console.queue("q1", f"?state=inflight&after={cursor}"))
    assert response.status_code == 200
    if cursor == "1e999~00":  # a real place: after every message
        assert ids(response) == hidden["inflight"][-3:]
    else:
        assert ids(response) == hidden["inflight"][:3]
        assert "can't be read" in notes(response)[0]


def test_jump_to_a_time_shows_the_messages_visible_from_then(
    console, hidden, viewer: Client, rsmq: RedisSMQ
) -> None:
    target = rsmq.get_message("q1", hidden["delayed"][5])
    assert target is not None
    at = dt.datetime.fromtimestamp(target.visible_at / 1000, dt.UTC)
    at = at.replace(microsecond=0, tzinfo=None)
    response = viewer.get(console.queue("q1", f"?state=delayed&at={at.isoformat()}"))
    assert ids(response) == hidden["delayed"][5:8]
    bad = viewer.get(console.queue("q1", "?state=delayed&at=yesterday"))
    assert ids(bad) == hidden["delayed"][:3]
    assert notes(bad) == [
        "'yesterday' is not a time: use a date and time like 2026-11-22T23:05 (UTC)."
    ]


def test_badge_and_pager_show_one_count(console, hidden, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?state=inflight")).content.decode()
    assert 'data-tab-count="inflight" title="9">9<' in page
    assert "9 in-flight messages" in page
