"""The queue page's message browser with a field filter and ages: read from the URL
(dashboard/acting/message_filter.py), scanned across requests, a bad one said under its field."""

from __future__ import annotations

import html
import re

from django.test import Client

from queues import RedisSMQ

BODIES = [
    '{"customer": "cust-42", "amount": 150, "status": "failed"}',
    '{"customer": "cust-7", "amount": 100, "status": "retry"}',
    '{"customer": "cust-42", "amount": 90, "status": "done"}',
    "plain text, not JSON: amount > 100",
    '{"amount": 1000, "order": {"items": [{"sku": "A-1"}]}}',
]


def _ids(response) -> list[str]:
    return [m.id for m in response.context["items"]]


def _progress(page: str) -> str:
    found = re.search(r'<p id="scan-progress"[^>]*>(.*?)</p>', page, re.S)
    assert found
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_it_filters_by_a_json_field(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    ids = rsmq.send_messages("q1", BODIES)
    response = viewer.get(console.queue("q1", "?where=amount+>+100"))
    assert response.status_code == 200
    assert _ids(response) == [ids[0], ids[4]]
    page = response.content.decode()
    assert _progress(page) == "Done: looked at 8 of 8 messages — 2 matches: the whole list."
    assert 'name="where" value="amount &gt; 100"' in page  # the bar shows the filter


def test_every_part_of_the_filter_combines(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    ids = rsmq.send_messages("q1", BODIES)
    cases = {
        "?where=customer+%3D+cust-42": [ids[0], ids[2]],
        "?where=customer+%3D+cust-42+and+amount+>%3D+100": [ids[0]],
        "?where=status+in+(failed,+retry)": [ids[0], ids[1]],
        "?where=order.items[0].sku+%3D+A-1": [ids[4]],
        "?where=missing+order": [ids[0], ids[1], ids[2]],
        "?where=exists+amount&search=cust-42": [ids[0], ids[2]],
        "?where=exists+amount&state=visible": [ids[0], ids[1], ids[2], ids[4]],
        "?where=exists+amount&state=inflight": [],
        "?where=exists+amount&rc=1": [],
        "?where=exists+amount&younger=60": [ids[0], ids[1], ids[2], ids[4]],
        "?where=exists+amount&older=60": [],
        "?older=60": [],
    }
    for query, want in cases.items():
        assert _ids(viewer.get(console.queue("q1", query))) == want, query


def test_a_bad_expression_is_a_400_naming_the_field_and_position(
    console, q1, viewer: Client
) -> None:
    response = viewer.get(console.queue("q1", "?where=amount+>"))
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    error = re.search(r'data-filter-error="where">(.*?)</small>', page, re.S)
    assert error and "at position 9" in error.group(1) and "Allowed:" in error.group(1)
    assert 'name="where" value="amount >"' in page  # kept in the bar, to be corrected
    assert response.context["mode"] == "page"  # the rest of the page as without it
    for query, field in [("?older=abc", "older"), ("?younger=-3", "younger"),
                         ("?older=10&younger=5", "younger")]:  # fmt: skip
        response = viewer.get(console.queue("q1", query))
        assert response.status_code == 400, query
        assert f'data-filter-error="{field}"' in response.content.decode()


def test_the_scan_goes_on_across_requests_with_the_filter(
    console, q1, settings, viewer: Client, rsmq: RedisSMQ
) -> None:
    settings.RSMQ_BROWSE_STEP, settings.RSMQ_BROWSE_BUDGET_MS = 4, 0
    ids = rsmq.send_messages("q1", ['{"n": 1}'] * 6 + ['{"n": 7}'])
    first = viewer.get(console.queue("q1", "?where=n+>+5")).content.decode()
    assert _progress(first) == "Looking… looked at 4 of 10 messages — 0 matches — Stop"
    more = html.unescape(re.search(r'id="scan-next" hx-get="([^"]*)"', first).group(1))
    assert "where=n+%3E+5" in more  # the next step carries the filter
    step = viewer.get(console.queue("q1", more), headers={"HX-Request": "true"}).content.decode()
    assert ids[-1] in step
    assert _progress(step) == "Looking… looked at 8 of 10 messages — 1 match — Stop"


def test_the_url_round_trip(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    """What the bar submits is the URL; the page's links keep it."""
    rsmq.send_messages("q1", BODIES)
    page = viewer.get(
        console.queue("q1", "?where=status+IN+(failed,retry)&older=0&younger=30&state=visible")
    ).content.decode()
    page = html.unescape(page)
    assert 'name="where" value="status in (failed, retry)"' in page  # its written form
    assert 'name="younger" min="0" value="30"' in page
    tab = re.search(r'href="([^"]*state=delayed[^"]*)"', page)
    assert tab and "where=status" in tab.group(1) and "younger=30" in tab.group(1)
    clear = re.search(r'<a href="([^"]*)">Clear</a>', page)
    assert clear and "where" not in clear.group(1) and "younger" not in clear.group(1)
