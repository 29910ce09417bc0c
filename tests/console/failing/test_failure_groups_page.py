"""The dead-letter pages say what they are, and the Failing view's groups — error lines,
first and last failure, ids — with retry / delete of one group. Failures made by a real
`rsmq worker` whose handler raises (tests/support/workers/app.py), dead-lettered by the policy."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.test import Client
from support.workers.harness import WorkerProcess, wait_for

from dashboard.models import AuditEntry, UndoEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

FAILED = "support.workers.app.Failed"  # what the test worker's handler raises


def text(response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"\s+", " ", response.content.decode())))


def squeeze(s: str) -> str:
    return re.sub(r"\s+", " ", s)


def groups_of(page: str) -> dict[tuple[str, str, str], dict]:
    """The failure groups a page lists: (state, type, queue) -> what it shows of each."""
    out = {}
    for m in re.finditer(
        r'<li class="failure-group" data-group="(\w+)" data-type="([^"]+)" data-where="([^"]+)">'
        r"(.*?)</li>\s*(?=<li class=\"failure-group\"|</ol>)",
        page,
        re.S,
    ):
        body = m[4]
        out[(m[1], html.unescape(m[2]), m[3])] = {
            "count": int(re.search(r"data-group-count>(\d+)<", body)[1]),
            "lines": [
                (html.unescape(t), int(n))
                for t, n in re.findall(
                    r'<code class="error-line">(.*?)</code> <span class="muted">× (\d+)', body
                )
            ],
            "times": re.findall(r'<span data-(first|last)-seen><time datetime="([^"]+)"', body),
            "ids": re.findall(r'/m/([^/]+)/#failures"', body),
            "forms": re.findall(r'data-group-form="(\w+)"', body),
        }
    return out


@pytest.fixture
def failed_by_a_worker(
    console, rsmq: RedisSMQ, redis_url: str, ns: str, tmp_path: Path
) -> Iterator[list[str]]:
    """payments and orders dead-letter to dlq after 2 receives; a real worker fails each
    of payments' 3 messages twice, and the policy moves them to dlq."""
    for q in ("payments", "orders", "dlq", "results"):
        rsmq.create_queue(q)
    rsmq.set_dead_letter_policy("payments", "dlq", 2)
    rsmq.set_dead_letter_policy("orders", "dlq", 2)
    env = {"WORKER_QUEUES": "payments:backoff=0", "WORKER_RESULTS": "results"}
    worker = WorkerProcess(
        tmp_path / "worker.log", "support.workers.app:worker", redis_url, ns, (), env
    )
    try:
        # 50 ms a try: its two failures are that far apart
        ids = rsmq.send_messages("payments", [json.dumps({"fail": True, "sleep": 0.05})] * 3)
        wait_for(lambda: rsmq.get_queue_attributes("dlq").msgs == 3, 20, "3 dead letters")
    finally:
        worker.stop()
    yield ids


# -- the words -----------------------------------------------------------------------------


def test_a_dead_letter_queues_page_says_what_it_is_and_why_they_died(
    console, failed_by_a_worker, viewer: Client
) -> None:
    page = viewer.get(console.queue("dlq"))

    words = squeeze(text(page))
    assert "A dead-letter queue of orders and payments : 3 dead letters" in words
    assert re.search(rf"Why they died: {re.escape(FAILED)} × 3 : \S+ rc 2", words)
    assert "No dead-letter policy" not in words
    assert "Redrive the messages here" not in words
    # and says so at the top, before anything else
    head = re.search(r"<p class=\"dlq-head\" data-dlq-head>(.*?)</p>", page.content.decode(), re.S)
    assert squeeze(html.unescape(re.sub(r"<[^>]+>", "", head[1]))) == (
        "dead-letter queue The dead-letter queue of orders and payments: "
        "3 dead letters, and why they died"
    )


def test_an_ordinary_queue_says_where_its_dead_letters_go_or_that_it_has_no_policy(
    console, failed_by_a_worker, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("plain")
    rsmq.send_message("plain", "m")

    with_policy = squeeze(text(admin.get(console.queue("payments"))))
    without = squeeze(text(admin.get(console.queue("plain"))))

    assert (
        "After 2 receives a message goes to dlq instead of being handed out again." in with_policy
    )
    assert "No dead-letter policy" not in with_policy and "dead-letter queue of" not in with_policy
    assert "No dead-letter policy: a failing message is handed out again and again." in without
    assert "Why they died" not in without
    # its redrive is a move of everything away, and says so
    assert "Redrive the messages here" not in without
    assert "Move every visible message away" in without
    assert "No queue dead-letters here, so nothing is redriven" in without


def test_the_failing_view_of_a_dead_letter_queue_lists_dead_letters_not_retries(
    console, failed_by_a_worker, viewer: Client
) -> None:
    page = viewer.get(console.queue("dlq", "failing/"))

    body = page.content.decode()
    words = squeeze(text(page))
    assert 'data-section="retry"' not in body and "Retrying" not in words
    assert "dlq is the dead-letter queue of orders and payments : 3 dead letters here" in words
    assert "Dead letters in dlq" in words
    assert "No dead-letter policy" not in words
    assert set(groups_of(body)) == {("dead", FAILED, "dlq")}


# -- the groups ------------------------------------------------------------------------------


def test_the_groups_show_error_lines_first_and_last_failure_count_and_ids(
    console, failed_by_a_worker, viewer: Client, rsmq: RedisSMQ
) -> None:
    ids = failed_by_a_worker

    body = viewer.get(console.queue("payments", "failing/")).content.decode()

    (key,) = groups_of(body)
    g = groups_of(body)[key]
    assert key == ("dead", FAILED, "dlq") and g["count"] == 3
    # the worker's error line is "<id> rc <attempt>": each message's last, once each
    assert sorted(g["lines"]) == sorted((f"{mid} rc 2", 1) for mid in ids)
    (core,) = rsmq.failure_groups("payments").groups
    assert core.last - core.first >= 50  # two failures each, 50 ms of work before each
    first, last = dict(g["times"])["first"], dict(g["times"])["last"]
    assert first < last  # ISO times, UTC
    assert sorted(g["ids"]) == sorted(ids)
    assert g["forms"] == []  # a viewer gets no buttons
    assert "No message in this queue has a recorded failure." in body  # none retrying


def test_an_operator_may_retry_a_group_and_an_admin_delete_one(
    console, failed_by_a_worker, operator: Client, admin: Client
) -> None:
    assert groups_of(operator.get(console.queue("payments", "failing/")).content.decode())[
        ("dead", FAILED, "dlq")
    ]["forms"] == ["retry"]
    assert groups_of(admin.get(console.queue("payments", "failing/")).content.decode())[
        ("dead", FAILED, "dlq")
    ]["forms"] == ["retry", "delete"]


def group_post(action: str, confirm: str = "payments", **extra: str) -> dict[str, str]:
    return {
        "action": action, "type": FAILED, "state": "dead", "where": "dlq", "count": "3",
        "confirm": confirm, **extra,
    }  # fmt: skip


def test_retry_of_a_dead_group_sends_it_home_to_start_over_and_is_audited(
    console, failed_by_a_worker, operator: Client, rsmq: RedisSMQ
) -> None:
    ids = failed_by_a_worker
    url = console.queue("payments", "failing/act/")

    response = operator.post(url, group_post("retry_group", count="2"), **console.htmx(
        current=console.queue("payments", "failing/")))  # fmt: skip

    assert response.status_code == 200
    flashes = console.flashes(response)
    assert any(
        f"Sent 2 dead letters ({FAILED}) from dlq back to the queue each came from" in f
        for f in flashes
    ), flashes
    back = rsmq.list_messages("payments").items
    assert sorted(m.id for m in back) == sorted(ids)[:2]  # the oldest 2: the count confirmed
    assert all(m.rc == 0 for m in back)
    assert [m.id for m in rsmq.list_messages("dlq").items] == sorted(ids)[2:]
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue, row.count) == ("retry_group", "ok", "payments", 2)
    assert row.params == {"type": FAILED, "state": "dead", "where": "dlq", "count": 2}
    # the page it answers with shows what is left
    assert groups_of(response.content.decode())[("dead", FAILED, "dlq")]["count"] == 1


def test_delete_of_a_group_needs_the_admin_and_deletes_it(
    console, failed_by_a_worker, operator: Client, admin: Client, rsmq: RedisSMQ
) -> None:
    url = console.queue("payments", "failing/act/")

    assert operator.post(url, group_post("delete_group")).status_code == 403
    assert rsmq.get_queue_attributes("dlq").msgs == 3
    response = admin.post(url, group_post("delete_group"))

    assert response.status_code == 302 and response["Location"].endswith("/q/payments/failing/")
    assert rsmq.get_queue_attributes("dlq").msgs == 0
    rows = AuditEntry.objects.order_by("id")
    assert [(r.action, r.outcome, r.count) for r in rows] == [
        ("delete_group", "denied", None), ("delete_group", "ok", 3),
    ]  # fmt: skip
    assert rows[1].detail == f"Deleted 3 messages ({FAILED}) from dlq."


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"confirm": "payment"}, "confirm: Type payments exactly to confirm."),
        ({"confirm": ""}, "confirm: This field is required."),
        (
            {"state": "gone"},
            "state: Select a valid choice. gone is not one of the available choices.",
        ),
        ({"count": "0"}, "count: Ensure this value is greater than or equal to 1."),
        ({"where": "no such name"}, "where: "),
        ({"type": ""}, "type: This field is required."),
    ],
)
def test_a_bad_group_action_is_refused_naming_the_field_and_changes_nothing(
    console, failed_by_a_worker, admin: Client, ns_state, change: dict, error: str
) -> None:
    before = ns_state()

    response = admin.post(
        console.queue("payments", "failing/act/"), group_post("delete_group", **change)
    )

    assert response.status_code == 422
    assert error in html.unescape(response.content.decode())
    assert ns_state() == before
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("delete_group", "invalid") and error in row.detail


def test_a_group_that_left_in_the_meantime_is_reported_not_an_error(
    console, failed_by_a_worker, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.purge_queue("dlq")

    response = operator.post(console.queue("payments", "failing/act/"), group_post("retry_group"))

    assert response.status_code == 302
    row = AuditEntry.objects.get()
    assert (row.outcome, row.count) == ("ok", 0)
    assert "3 of the 3 stayed" in row.detail


# -- a big list, a long trace ---------------------------------------------------------------


def test_many_groups_are_paged(console, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("many")
    ids = rsmq.send_messages("many", ["m"] * 25)
    for n, mid in enumerate(ids):
        rsmq.record_failure("many", mid, error_type=f"Error{n:02d}", message="boom")

    first = viewer.get(console.queue("many", "failing/")).content.decode()
    second = viewer.get(console.queue("many", "failing/?retry_page=2")).content.decode()

    assert len(groups_of(first)) == 20 and len(groups_of(second)) == 5
    assert "Page 1 of 2 · 25 groups" in first and "retry_page=2" in first
    assert not set(groups_of(first)) & set(groups_of(second))


def test_a_trace_given_as_lines_without_newlines_is_shown_line_by_line(
    console, viewer: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("jobs")
    mid = rsmq.send_message("jobs", "m")
    lines = ['File "a.py", line 1, in run', 'File "b.py", line 2, in step', "Boom: it broke"]
    rsmq.record_failure("jobs", mid, error_type="Boom", trace=lines)

    page = viewer.get(console.message(mid, "jobs")).content.decode()

    trace = re.search(r'<pre class="trace">(.*?)</pre>', page, re.S)[1]
    assert html.unescape(trace).splitlines() == lines


def test_a_failure_moved_into_a_dead_letter_queue_is_not_called_retrying(
    console, failed_by_a_worker, viewer: Client, rsmq: RedisSMQ
) -> None:
    mid = rsmq.send_message("orders", "moved by hand")
    rsmq.record_failure("orders", mid, KeyError("sku"))
    assert rsmq.move_messages("orders", "dlq", [mid]) == 1  # no policy moved it

    page = viewer.get(console.queue("dlq", "failing/"))

    words = squeeze(text(page))
    assert "Retrying" not in words
    assert "Failed here in dlq, not dead-lettered by a policy" in words
    assert set(groups_of(page.content.decode())) == {
        ("dead", FAILED, "dlq"), ("retry", "KeyError", "dlq"),
    }  # fmt: skip


# -- undo ------------------------------------------------------------------------------------


def raw(r: redis.Redis, ns: str, qname: str) -> tuple[dict[str, str], list[tuple[str, float]]]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def undo(console, admin: Client, response) -> list[str]:
    """Press the answer's Undo (at the queue the messages were taken from); its answer."""
    action, token = console.undo_button(response)
    assert action == console.act("dlq")
    data = {"action": "undo", "undo-token": token, "undo-confirm": "yes"}
    return console.flashes(admin.post(action, data, follow=True))


def test_a_group_delete_offers_an_undo_that_puts_back_every_byte(
    console, failed_by_a_worker, admin: Client, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "dlq")
    page = admin.get(console.queue("payments", "failing/")).content.decode()
    assert "Deletes these 3 messages from dlq; an Undo is offered for 24 h." in page

    response = admin.post(
        console.queue("payments", "failing/act/"), group_post("delete_group"), follow=True
    )

    assert console.flashes(response) == [f"Deleted 3 messages ({FAILED}) from dlq."]
    assert r.zcard(f"{ns}:dlq") == 0
    assert undo(console, admin, response)[-1] == (
        "Undid the delete of a failure group from dlq: put back 3 messages."
    )
    assert raw(r, ns, "dlq") == before
    row = AuditEntry.objects.get(action="undo")
    assert (row.outcome, row.queue, row.count, row.params["undid"]) == (
        "ok", "dlq", 3, "delete_group"
    )  # fmt: skip


def test_a_dead_groups_retry_offers_an_undo_that_takes_them_back_from_home(
    console, failed_by_a_worker, admin: Client, r: redis.Redis, ns: str
) -> None:
    before = raw(r, ns, "dlq"), raw(r, ns, "payments")

    response = admin.post(
        console.queue("payments", "failing/act/"), group_post("retry_group"), follow=True
    )

    assert r.zcard(f"{ns}:payments") == 3 and r.zcard(f"{ns}:dlq") == 0
    assert undo(console, admin, response)[-1] == (
        "Undid the retry of dead letters from dlq: put back 3 messages."
    )
    assert (raw(r, ns, "dlq"), raw(r, ns, "payments")) == before


def test_past_the_undo_bound_a_groups_confirmation_says_it_cannot_be_undone(
    console, failed_by_a_worker, admin: Client, settings
) -> None:
    settings.RSMQ_UNDO_MAX_MB = 0

    page = admin.get(console.queue("payments", "failing/")).content.decode()
    response = admin.post(
        console.queue("payments", "failing/act/"), group_post("delete_group"), follow=True
    )

    assert "Deletes these 3 messages from dlq; this cannot be undone." in page
    assert "one in flight or delayed stays; this cannot be undone." in page
    assert 'class="undo"' not in response.content.decode()
    assert not UndoEntry.objects.exists()
