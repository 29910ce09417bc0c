"""The overview: every queue with its counters, searched by name, sorted by any column,
paginated, polled by htmx; the header's environment badge and connection selector."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    return [s.qname for s in response.context["stats"]]


def _row(page: str, qname: str) -> list[str]:
    """The cells of a queue's row, as the page shows them."""
    row = re.search(
        rf'<tr[^>]*>\s*<td class="qname"><a href="[^"]*/q/{qname}/">{qname}</a>.*?</td>(.*?)</tr>',
        page,
        re.S,
    )
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1])]


# -- home --------------------------------------------------------------------------------


def test_it_sends_home_to_the_first_connection(console, viewer: Client) -> None:
    response = viewer.get("/")
    assert response.status_code == 302
    assert response["Location"] == console.overview()


def test_it_follows_the_selector_to_another_namespace(console, viewer: Client) -> None:
    response = viewer.get("/", {"place": "/c/default/other/"})
    assert response["Location"] == "/c/default/other/"


@pytest.mark.parametrize("place", ["https://evil.example/", "//evil.example/", "/c//evil"])
def test_it_ignores_a_selector_value_off_the_site(console, viewer: Client, place: str) -> None:
    response = viewer.get("/", {"place": place})
    assert response["Location"] == console.overview()


def test_it_answers_404_for_a_namespace_not_configured(console, viewer: Client) -> None:
    assert viewer.get("/c/default/elsewhere/").status_code == 404


def test_it_answers_404_for_a_connection_not_configured(console, viewer: Client) -> None:
    assert viewer.get(f"/c/other/{console.ns}/").status_code == 404


# -- the table ---------------------------------------------------------------------------


@pytest.fixture
def busy(console, rsmq: RedisSMQ) -> None:
    """Queue busy: 5 messages, 2 visible, 2 in flight, 1 delayed; queue idle: none."""
    rsmq.create_queue("busy")
    rsmq.create_queue("idle")
    rsmq.send_messages("busy", ["1", "2", "3", "4"])
    rsmq.send_message("busy", "later", delay=300)
    rsmq.receive_messages("busy", 2, vt=300)


def test_it_lists_every_queue(console, busy, viewer: Client) -> None:
    assert _names(viewer.get(console.overview())) == ["busy", "idle"]


def test_it_counts_the_messages_by_state(console, busy, viewer: Client) -> None:
    (s, _) = viewer.get(console.overview()).context["stats"]
    assert (s.msgs, s.visible, s.hidden, s.inflight, s.delayed) == (5, 2, 3, 2, 1)
    assert (s.totalsent, s.totalrecv) == (5, 2)


def test_it_shows_the_counts_in_the_row(console, busy, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    cells = _row(page, "busy")
    # msgs, visible, in flight, delayed, oldest, sent, received, vt, delay, max size
    assert cells[:4] == ["5", "2", "2", "1"]
    assert cells[5:10] == ["5", "2", "30 s", "0 s", "64.0\xa0KB"]


def test_it_shows_no_age_for_a_queue_without_visible_messages(
    console, busy, viewer: Client
) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert _row(page, "idle")[4] == "–"


def test_it_shows_an_unlimited_maxsize(console, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("big", maxsize=-1)
    page = viewer.get(console.overview()).content.decode()
    assert _row(page, "big")[9] == "∞"


def test_it_links_each_queue_to_its_page(console, busy, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert f'<a href="{console.queue("busy")}">busy</a>' in page


def test_it_says_when_there_are_no_queues(console, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert f"No queues in namespace <code>{console.ns}</code> yet." in page


def test_it_shows_the_environment_badge(console, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert '<span class="badge env env-test">test</span>' in page


def test_it_shows_no_badge_without_an_environment(
    console, settings, redis_url: str, viewer: Client
) -> None:
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": redis_url, "namespaces": [console.ns]}]
    assert 'class="badge env' not in viewer.get(console.overview()).content.decode()


def test_it_offers_every_connection_and_namespace(
    console, settings, redis_url: str, viewer: Client
) -> None:
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [console.ns, "other"]},
        {"name": "second", "url": redis_url, "namespaces": ["rsmq"]},
    ]
    page = viewer.get(console.overview()).content.decode()
    options = re.findall(r'<option value="(/c/[^"]*)" ?(selected)?>', page)
    assert options == [
        (console.overview(), "selected"),
        ("/c/default/other/", ""),
        ("/c/second/rsmq/", ""),
    ]


# -- search ------------------------------------------------------------------------------


@pytest.fixture
def named(console, rsmq: RedisSMQ) -> None:
    for name in ["orders", "orders-dlq", "Payments", "emails"]:
        rsmq.create_queue(name)


def test_it_searches_by_name(console, named, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?q=orders"))) == ["orders", "orders-dlq"]


def test_it_searches_ignoring_case(console, named, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?q=PAY"))) == ["Payments"]


def test_it_searches_within_names(console, named, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?q=dl"))) == ["orders-dlq"]


def test_it_says_when_no_queue_matches(console, named, viewer: Client) -> None:
    page = viewer.get(console.overview("?q=%3Cb%3E")).content.decode()
    assert "No queue matches “&lt;b&gt;”." in page


def test_it_keeps_the_search_in_the_box(console, named, viewer: Client) -> None:
    page = viewer.get(console.overview("?q=ord")).content.decode()
    assert 'name="q" value="ord"' in page


# -- sort --------------------------------------------------------------------------------


@pytest.fixture
def three(console, rsmq: RedisSMQ) -> None:
    """Three queues whose every column orders them differently from their names.

    c: vt 20, delay 0, unlimited, 3 visible (sent first: the oldest)
    a: vt 10, delay 30, 2048 B, 1 visible, 1 in flight, 2 delayed
    b: vt 30, delay 10, 1024 B, 4 visible, 2 in flight, 3 delayed (sent last)
    """
    rsmq.create_queue("c", vt=20, delay=0, maxsize=-1)
    rsmq.create_queue("a", vt=10, delay=30, maxsize=2048)
    rsmq.create_queue("b", vt=30, delay=10, maxsize=1024)
    rsmq.send_messages("c", ["c"] * 3)
    time.sleep(0.01)
    rsmq.send_messages("a", ["a"] * 2, delay=0)
    rsmq.send_messages("a", ["a"] * 2)
    rsmq.receive_message("a", vt=300)
    time.sleep(0.01)
    rsmq.send_messages("b", ["b"] * 6, delay=0)
    rsmq.send_messages("b", ["b"] * 3)
    rsmq.receive_messages("b", 2, vt=300)


ORDERS = {
    "name": ["a", "b", "c"],
    "msgs": ["c", "a", "b"],
    "visible": ["a", "c", "b"],
    "hidden": ["c", "a", "b"],
    "inflight": ["c", "a", "b"],
    "delayed": ["c", "a", "b"],
    "totalsent": ["c", "a", "b"],
    "totalrecv": ["c", "a", "b"],
    "oldest": ["b", "a", "c"],
    "vt": ["a", "c", "b"],
    "delay": ["c", "b", "a"],
    "maxsize": ["b", "a", "c"],
}


def test_it_puts_the_fullest_first_when_nothing_needs_attention(
    console, three, viewer: Client
) -> None:
    assert _names(viewer.get(console.overview())) == ["b", "a", "c"]


@pytest.mark.parametrize("key", list(ORDERS))
def test_it_sorts_by_a_column(console, three, viewer: Client, key: str) -> None:
    assert _names(viewer.get(console.overview(f"?sort={key}"))) == ORDERS[key]


@pytest.mark.parametrize("key", list(ORDERS))
def test_it_sorts_by_a_column_descending(console, three, viewer: Client, key: str) -> None:
    assert _names(viewer.get(console.overview(f"?sort=-{key}"))) == ORDERS[key][::-1]


def test_it_ignores_an_unknown_sort(console, three, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?sort=__class__"))) == ["b", "a", "c"]


def test_it_links_the_sorted_column_to_the_other_direction(console, three, viewer: Client) -> None:
    page = viewer.get(console.overview("?sort=msgs")).content.decode()
    assert 'aria-sort="ascending">\n              <a href="?sort=-msgs">Messages' in page


def test_it_links_a_descending_column_back_to_ascending(console, three, viewer: Client) -> None:
    page = viewer.get(console.overview("?sort=-msgs")).content.decode()
    assert 'aria-sort="descending">\n              <a href="?sort=msgs">Messages' in page


def test_it_sorts_the_search_results(console, named, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?q=orders&sort=-name"))) == [
        "orders-dlq",
        "orders",
    ]


# -- pages -------------------------------------------------------------------------------


@pytest.fixture
def twelve(console, settings, rsmq: RedisSMQ) -> list[str]:
    settings.RSMQ_PAGE_SIZE = 5
    names = [f"q{i:02d}" for i in range(12)]
    for i, name in enumerate(names):
        rsmq.create_queue(name)
        rsmq.send_messages(name, ["x"] * (i % 4))
    return names


def test_it_shows_the_first_page_of_queues(console, twelve, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?sort=name"))) == twelve[:5]


def test_it_shows_a_later_page_of_queues(console, twelve, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?sort=name&page=3"))) == twelve[10:]


def test_it_says_where_it_is_in_the_queue_pages(console, twelve, viewer: Client) -> None:
    page = viewer.get(console.overview("?page=2")).content.decode()
    assert "Page 2 of 3 · 12 in all" in page


def test_it_shows_the_last_page_for_a_page_past_the_end(console, twelve, viewer: Client) -> None:
    assert _names(viewer.get(console.overview("?sort=name&page=99"))) == twelve[10:]


def test_it_pages_after_sorting(console, twelve, viewer: Client) -> None:
    # msgs = i % 4, ties in name order: 0,4,8 | 1,5,9 | 2,6,10 | 3,7,11
    response = viewer.get(console.overview("?sort=-msgs&page=2"))
    assert _names(response) == ["q10", "q01", "q05", "q09", "q00"]


def test_it_pages_the_search_results(console, twelve, viewer: Client) -> None:
    response = viewer.get(console.overview("?q=q1&sort=name&page=1"))
    assert _names(response) == ["q10", "q11"]
    assert "Page 1 of" not in response.content.decode()


def test_it_keeps_the_sort_in_the_page_links(console, twelve, viewer: Client) -> None:
    page = viewer.get(console.overview("?sort=-msgs")).content.decode()
    assert 'href="?sort=-msgs&amp;page=2">Next →</a>' in page


# -- live refresh ------------------------------------------------------------------------


def test_it_answers_the_poll_with_the_table_only(console, busy, viewer: Client) -> None:
    response = viewer.get(console.overview(), **console.htmx(target="queue-table"))
    page = response.content.decode()
    assert response.status_code == 200
    # The partial, after an out-of-band element that clears a Redis-down alert.
    head, _, rest = page.lstrip().partition("\n")
    assert head == '<div id="alert" class="alert" hx-swap-oob="true"></div>'
    assert rest.lstrip().startswith('<div id="queue-table"')
    assert "<html" not in page
    assert "busy" in page


def test_it_keeps_search_and_sort_in_the_polled_table(console, named, viewer: Client) -> None:
    url = console.overview("?q=orders&sort=-name")
    response = viewer.get(url, **console.htmx(current=url, target="queue-table"))
    page = response.content.decode()
    assert page.index("orders-dlq") < page.index(">orders<")
    assert "emails" not in page
    assert f'hx-get="{url.replace("&", "&amp;")}"' in page


def test_it_polls_the_table_every_few_seconds(console, busy, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert 'hx-trigger="every 5s" data-poll' in page
    assert 'hx-sync="this:drop"' in page


@pytest.mark.parametrize(
    ("sort", "names"),
    [("send_rate", ["b", "c", "a"]), ("-send_rate", ["a", "c", "b"]),
     ("receive_rate", ["c", "a", "b"]), ("-receive_rate", ["b", "a", "c"])],
)  # fmt: skip
def test_the_rate_columns_sort_by_each_queues_last_judged_rate(
    console, three, lake, viewer: Client, rsmq: RedisSMQ, sort: str, names: list[str]
) -> None:
    """Two real snapshots, the sends and receives between them: each queue's rates as the
    condition of the last snapshot has them (a queue never judged: unknown, first up)."""
    from dashboard.models import QueueCondition
    from dashboard.triage.conditions import take_snapshot

    take_snapshot()
    rsmq.send_messages("a", ["x"] * 30)
    rsmq.send_messages("c", ["x"] * 10)
    rsmq.receive_messages("b", 5, vt=300)
    rsmq.receive_messages("a", 2, vt=300)
    time.sleep(0.05)
    take_snapshot()
    rates = dict(QueueCondition.objects.values_list("queue", "send_rate"))
    assert rates["a"] > rates["c"] > rates["b"] == 0
    assert _names(viewer.get(console.overview(f"?sort={sort}"))) == names


def test_every_row_has_its_cells_under_their_column_headers(console, busy, viewer: Client) -> None:
    """The header's columns and each row's cells in one order (the rate cells once sat
    under Wait p95 and Drains in: the merged page read wrong numbers as rates)."""
    page = viewer.get(console.overview()).content.decode()
    table = page[page.index("<table") : page.index("</table>")]
    head = table[table.index("<thead") : table.index("</thead>")]
    headers = [
        re.sub(r"<[^>]+>", "", h).split()[0].lower() if re.sub(r"<[^>]+>", "", h).split() else ""
        for h in re.findall(r"<th\b.*?</th>", head, re.S)
    ]
    row = re.search(r"<tr\b[^>]*>(?:(?!</tr>).)*?>busy</a>.*?</tr>", table, re.S)
    assert row, table
    cells = re.findall(r"<td\b([^>]*)>", row[0])
    assert len(cells) == len(headers), (headers, cells)
    marks = {"data-wait-p95": "wait", "data-drain": "drains", 'data-rate="send"': "send",
             'data-rate="receive"': "receive"}  # fmt: skip
    for i, attributes in enumerate(cells):
        for mark, header in marks.items():
            if mark in attributes:
                assert headers[i] == header, (i, headers, mark)
