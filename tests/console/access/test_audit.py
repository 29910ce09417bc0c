"""The audit log page: every mutating action, newest first, filtered and paginated."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _entry(**fields) -> AuditEntry:
    defaults = {
        "username": "otto",
        "connection": "default",
        "namespace": "rsmq",
        "queue": "q1",
        "action": "requeue",
        "outcome": "ok",
    }
    return AuditEntry.objects.create(**(defaults | fields))


def _rows(response) -> list[tuple[str, str, str, str]]:
    return [(e.username, e.queue, e.action, e.outcome) for e in response.context["page_obj"]]


def _cells(page: str) -> list[list[str]]:
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in rows
    ]


def test_it_lists_an_action_done_in_the_console(
    console, operator: Client, viewer: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q1")
    ids = rsmq.send_messages("q1", ["a", "b"])
    operator.post(console.act(), {"action": "delete", "ids": ids})
    (cells,) = _cells(viewer.get("/audit/").content.decode())
    assert cells[1:] == [
        "otto",
        f"default · {console.ns}",
        "q1",
        "delete",
        "2",
        f"ids: {ids[0]}, {ids[1]}",
        "succeeded",
        # its Undo (dashboard/acting/undo.py): an admin's, while it lives
        "Deleted 2 messages. An admin may undo it (expires in 24 h).",
    ]


def test_it_keeps_the_username_of_a_deleted_user(viewer: Client, login) -> None:
    gone = login("gone", "operator").user
    _entry(user=gone, username="gone")
    gone.delete()
    (cells,) = _cells(viewer.get("/audit/").content.decode())
    assert cells[1] == "gone"


def test_it_shows_the_parameters(viewer: Client) -> None:
    _entry(action="move", params={"to": "q2"}, count=1)
    (cells,) = _cells(viewer.get("/audit/").content.decode())
    assert cells[6] == "{&quot;to&quot;: &quot;q2&quot;}"  # JSON, not Python repr


@pytest.mark.parametrize(
    ("outcome", "label"), [("ok", "succeeded"), ("error", "failed"), ("denied", "denied")]
)
def test_it_labels_the_outcome(viewer: Client, outcome: str, label: str) -> None:
    _entry(outcome=outcome)
    page = viewer.get("/audit/").content.decode()
    assert f'<span class="outcome {outcome}">{label}</span>' in page


def test_it_escapes_the_detail(viewer: Client) -> None:
    _entry(detail="<script>alert(1)</script>")
    page = viewer.get("/audit/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page


def test_it_lists_the_newest_first(viewer: Client) -> None:
    for action in ["first", "second", "third"]:
        _entry(action=action)
    assert [a for _, _, a, _ in _rows(viewer.get("/audit/"))] == ["third", "second", "first"]


def test_it_says_when_nothing_was_recorded(viewer: Client) -> None:
    assert "No actions recorded." in viewer.get("/audit/").content.decode()


def test_it_writes_no_row_for_reading_it(viewer: Client) -> None:
    viewer.get("/audit/")
    assert not AuditEntry.objects.exists()


# -- filters -----------------------------------------------------------------------------


@pytest.fixture
def mixed(db) -> None:
    _entry(username="otto", queue="q1", action="requeue", outcome="ok")
    _entry(username="ada", queue="q2", action="purge", outcome="ok")
    _entry(username="vera", queue="q1", action="purge", outcome="denied")
    _entry(username="otto", queue="q2", action="move", outcome="error", namespace="other")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("username=otto", [("otto", "q2", "move", "error"), ("otto", "q1", "requeue", "ok")]),
        ("queue=q1", [("vera", "q1", "purge", "denied"), ("otto", "q1", "requeue", "ok")]),
        ("action=purge", [("vera", "q1", "purge", "denied"), ("ada", "q2", "purge", "ok")]),
        ("outcome=denied", [("vera", "q1", "purge", "denied")]),
        ("namespace=other", [("otto", "q2", "move", "error")]),
        ("username=otto&queue=q1", [("otto", "q1", "requeue", "ok")]),
        ("username=nobody", []),
    ],
)
def test_it_filters(mixed, viewer: Client, query: str, expected: list) -> None:
    assert _rows(viewer.get(f"/audit/?{query}")) == expected


def test_it_ignores_blank_filters(mixed, viewer: Client) -> None:
    assert len(_rows(viewer.get("/audit/?username=&queue=+&action=&outcome="))) == 4


def test_it_says_when_nothing_matches(mixed, viewer: Client) -> None:
    page = viewer.get("/audit/?username=nobody").content.decode()
    assert "No actions recorded that match." in page


def test_it_offers_the_recorded_actions_to_filter_by(mixed, viewer: Client) -> None:
    page = viewer.get("/audit/?action=purge").content.decode()
    select = re.search(r'<select name="action">(.*?)</select>', page, re.S)[1]
    assert re.findall(r'<option value="(\w*)" ?(selected)?>', select) == [
        ("", ""),
        ("move", ""),
        ("purge", "selected"),
        ("requeue", ""),
    ]


def test_it_keeps_the_filters_in_the_form(mixed, viewer: Client) -> None:
    page = viewer.get("/audit/?username=otto&queue=q2").content.decode()
    assert 'name="username" value="otto"' in page
    assert 'name="queue" value="q2"' in page


# -- pages -------------------------------------------------------------------------------


@pytest.fixture
def many(db) -> None:
    AuditEntry.objects.bulk_create(
        AuditEntry(
            username="otto",
            connection="default",
            namespace="rsmq",
            queue="q1",
            action=f"a{i:03d}",
            outcome="ok" if i % 2 else "error",
        )
        for i in range(120)
    )


def test_it_shows_50_rows_per_page(many, viewer: Client) -> None:
    assert len(_rows(viewer.get("/audit/"))) == 50


def test_it_shows_the_rest_on_the_last_page(many, viewer: Client) -> None:
    rows = _rows(viewer.get("/audit/?page=3"))
    assert [a for _, _, a, _ in rows] == [f"a{i:03d}" for i in range(19, -1, -1)]


def test_it_says_where_it_is_in_the_audit_pages(many, viewer: Client) -> None:
    page = viewer.get("/audit/?page=2").content.decode()
    assert "Page 2 of 3 · 120 in all" in page


def test_it_paginates_the_filtered_rows(many, viewer: Client) -> None:
    response = viewer.get("/audit/?outcome=ok&page=2")
    assert len(_rows(response)) == 10
    assert "Page 2 of 2 · 60 in all" in response.content.decode()


def test_it_keeps_the_filter_in_the_page_links(many, viewer: Client) -> None:
    page = viewer.get("/audit/?outcome=ok").content.decode()
    assert 'href="?outcome=ok&amp;page=2">Next →</a>' in page


def test_it_shows_the_last_page_for_a_page_past_the_end(many, viewer: Client) -> None:
    assert len(_rows(viewer.get("/audit/?page=99"))) == 20


# -- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_it_is_readable_by_every_role(mixed, as_role, role: str) -> None:
    assert as_role(role).get("/audit/").status_code == 200


def test_it_is_forbidden_without_a_role(mixed, outsider: Client) -> None:
    assert outsider.get("/audit/").status_code == 403


def test_it_requires_login(anon: Client) -> None:
    response = anon.get("/audit/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/audit/"


def test_it_rejects_post(viewer: Client) -> None:
    assert viewer.post("/audit/").status_code == 405


# -- what a row holds ---------------------------------------------------------------------


def test_it_cuts_a_posted_name_to_its_column(console, operator: Client) -> None:
    """A denied create names whatever was posted: 331 characters in a 160-character
    column would be a 500 on Postgres."""
    name = "x" * 331
    operator.post(console.create(), {"name": name, "vt": "30", "delay": "0", "maxsize": "65536"})
    row = AuditEntry.objects.get()
    assert (row.outcome, row.queue) == ("denied", name[:160])


def test_it_records_form_errors_as_a_refusal(console, admin: Client) -> None:
    admin.post(console.create(), {"name": "bad name", "vt": "x", "delay": "0", "maxsize": "65536"})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue) == ("create_queue", "invalid", "bad name")
    assert "name: " in row.detail
    assert "vt: vt must be seconds (90) or a number with a unit" in row.detail


def test_it_stores_parameters_as_json(console, rsmq: RedisSMQ, admin: Client) -> None:
    rsmq.create_queue("q1")
    admin.post(console.act("q1"), {"action": "edit", "vt": "60", "delay": "0", "maxsize": "-1"})
    assert AuditEntry.objects.get().params_json == '{"delay": 0, "maxsize": -1, "vt": 60}'


# -- by time range (issue 22) ---------------------------------------------------------------


@pytest.fixture
def hourly(db) -> None:
    """One entry an hour on 2026-11-25, 00:00 to 23:00 UTC, each 30 s past the hour."""
    for h in range(24):
        entry = _entry(action=f"h{h:02d}")
        at = dt.datetime(2026, 11, 25, h, 0, 30, tzinfo=dt.UTC)
        AuditEntry.objects.filter(pk=entry.pk).update(at=at)


def _actions(response) -> list[str]:
    return sorted(e.action for e in response.context["page_obj"])


@pytest.mark.parametrize(
    ("query", "actions"),
    [
        ("from=2026-11-25T21:00", ["h21", "h22", "h23"]),
        ("to=2026-11-25T01:00", ["h00", "h01"]),  # "to" takes in the minute it names
        ("to=2026-11-25T01:00:29", ["h00"]),  # ... or the second
        ("from=2026-11-25T05:00:31&to=2026-11-25T07:00", ["h06", "h07"]),
        ("from=2026-11-25T05:00&to=2026-11-25T05:00&action=h05", ["h05"]),
    ],
)
def test_it_filters_by_a_time_range_from_the_url(
    hourly, viewer: Client, query: str, actions: list[str]
) -> None:
    response = viewer.get(f"/audit/?{query}")
    assert response.status_code == 200
    assert _actions(response) == actions


def test_the_time_range_stays_in_the_form_and_the_page_links(hourly, viewer: Client) -> None:
    AuditEntry.objects.bulk_create(_entry_row(i) for i in range(60))
    page = viewer.get("/audit/?from=2026-11-25T10:00&to=2026-11-26T00:00").content.decode()
    assert 'name="from" step="1" value="2026-11-25T10:00"' in page
    assert 'name="to" step="1" value="2026-11-26T00:00"' in page
    assert "Page 1 of 2 · 74 in all" in page
    assert 'href="?from=2026-11-25T10%3A00&amp;to=2026-11-26T00%3A00&amp;page=2">Next' in page


def _entry_row(i: int) -> AuditEntry:
    return AuditEntry(
        username="otto", queue="q1", action=f"late{i}", outcome="ok",
        at=dt.datetime(2026, 11, 25, 23, 30, i % 60, tzinfo=dt.UTC),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("from=yesterday", "from must be a UTC time like 2026-11-25T18:00"),
        ("to=2026-13-01T00:00", "to must be a UTC time like 2026-11-25T18:00"),
        ("from=1999-12-31T23:59", "from must be a UTC time like 2026-11-25T18:00"),
        ("from=2026-11-25T10:00&to=2026-11-25T09:00", "to must not be before from"),
    ],
)
def test_a_bad_time_is_a_400_naming_the_field(
    hourly, viewer: Client, query: str, error: str
) -> None:
    response = viewer.get(f"/audit/?{query}")
    assert response.status_code == 400
    page = response.content.decode()
    assert error in page and "No actions recorded that match." in page
    assert AuditEntry.objects.count() == 24  # reading changes nothing


# -- the export (JSON Lines) ---------------------------------------------------------------


def _export(client: Client, query: str = "") -> list[dict]:
    response = client.get(f"/audit/export/{query}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == 'attachment; filename="audit.jsonl"'
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_the_export_is_every_filtered_row_newest_first_across_its_reads(viewer: Client) -> None:
    """More rows than one read takes (EXPORT_ROWS), many at the same instant: each once."""
    at = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)
    made = [_entry(at=at + dt.timedelta(seconds=i // 7), queue=f"q{i % 2}",
                   params={"n": i}) for i in range(130)]  # fmt: skip
    _entry(at=at, queue="q1", action="purge")
    lines = _export(viewer, "?action=requeue&queue=q1")
    expected = sorted((e for e in made if e.queue == "q1"), key=lambda e: (e.at, e.pk),
                      reverse=True)  # fmt: skip
    assert [x["id"] for x in lines] == [e.pk for e in expected]
    first = lines[0]
    assert (first["action"], first["queue"], first["params"]) == ("requeue", "q1", {"n": 129})
    assert dt.datetime.fromisoformat(first["at"]) == expected[0].at
    exported = AuditEntry.objects.get(action="audit_export")
    assert (exported.username, exported.params) == (
        "vera", {"action": "requeue", "queue": "q1"},
    )  # fmt: skip


def test_the_export_says_a_bad_filter_and_needs_a_role(
    viewer: Client, outsider: Client, anon: Client
) -> None:
    bad = viewer.get("/audit/export/?from=yesterday")
    assert bad.status_code == 400 and "from must be a UTC time" in bad.json()["error"]
    assert outsider.get("/audit/export/").status_code == 403
    assert anon.get("/audit/export/").status_code == 302
    assert not AuditEntry.objects.filter(action="audit_export").exists()


def test_the_page_links_the_export_with_its_filters(mixed, viewer: Client) -> None:
    page = viewer.get("/audit/?queue=q1&page=2").content.decode()
    assert 'href="/audit/export/?queue=q1"' in page
