"""Silences and maintenance windows (dashboard/acting/silences.py): a silenced alert
still moves, but its notification is written held (never sent; the outbox shows it);
when the silence is over, an alert still firing is told then, once. Operators create
and expire them on /alerts/, audited."""

from __future__ import annotations

import datetime as dt
import html

import pytest
from django.utils import timezone

from dashboard.acting import silences
from dashboard.alerting import delivery
from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AuditEntry, Notification, Silence

pytestmark = pytest.mark.django_db


def silence(ns: str, **fields: object) -> Silence:
    values: dict[str, object] = dict(
        connection="default", namespace=ns, pattern="q*", reason="deploy", created_by="otto",
        ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    values.update(fields)
    return Silence.objects.create(**values)


def test_a_silenced_alert_fires_but_its_notification_is_held(
    rule_of, add_snapshot, redis_now, ns: str
) -> None:
    rule_of()
    s = silence(ns)
    add_snapshot("q1", redis_now(), msgs=10)
    ev = evaluate()
    assert Alert.objects.get().state == Alert.State.FIRING
    n = Notification.objects.get()
    assert n.silence == s
    assert n.held == f"silence by otto until {s.ends:%Y-%m-%d %H:%M} UTC: deploy"
    assert ev.held == [("backlog", "q1", n.held)]
    assert delivery.send_due().sent == 0  # held: never sent
    assert Notification.objects.get().sent is None


def test_it_is_held_once_not_at_every_evaluation(rule_of, add_snapshot, redis_now, ns) -> None:
    rule_of()
    silence(ns)
    t0 = redis_now() - 2000
    for i in range(3):
        add_snapshot("q1", t0 + i * 1000, msgs=10 + i)
        evaluate()
    assert Notification.objects.count() == 1


def test_an_alert_still_firing_when_the_silence_expires_is_told_then(
    rule_of, add_snapshot, redis_now, ns: str
) -> None:
    rule_of()
    s = silence(ns)
    t0 = redis_now() - 2000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    Silence.objects.filter(pk=s.pk).update(ends=timezone.now() - dt.timedelta(seconds=1))
    add_snapshot("q1", t0 + 1000, msgs=11)
    evaluate()
    add_snapshot("q1", t0 + 2000, msgs=12)
    evaluate()
    rows = list(Notification.objects.order_by("id"))
    assert [(bool(n.held), [a["state"] for a in n.payload["alerts"]]) for n in rows] == [
        (True, ["firing"]),
        (False, ["firing"]),
    ]
    assert not Alert.objects.get().held


def test_a_firing_held_then_resolved_under_the_silence_is_never_told(
    rule_of, add_snapshot, redis_now, ns: str
) -> None:
    rule_of()
    silence(ns)
    t0 = redis_now() - 1000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    add_snapshot("q1", t0 + 1000, msgs=0)
    evaluate()
    assert Alert.objects.get().state == Alert.State.RESOLVED
    assert [bool(n.held) for n in Notification.objects.all()] == [True]


@pytest.mark.parametrize(
    ("fields", "held"),
    [
        ({"pattern": "q*"}, True),
        ({"pattern": "orders-*"}, False),
        ({"pattern": "", "rule": "mine"}, True),
        ({"pattern": "", "rule": "other"}, False),
        ({"pattern": "q1", "rule": "mine"}, True),
    ],
)
def test_a_silence_covers_its_rule_and_queue_pattern_only(
    rule_of, add_snapshot, redis_now, ns: str, fields: dict, held: bool
) -> None:
    mine = rule_of()
    other = rule_of(name="other", queue="q2")
    if "rule" in fields:
        fields = {**fields, "rule": mine if fields["rule"] == "mine" else other}
    silence(ns, **fields)
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert bool(Notification.objects.get(rule=mine).held) is held


def test_a_silence_of_another_namespace_holds_nothing(rule_of, add_snapshot, redis_now) -> None:
    rule_of()
    silence("elsewhere")
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert Notification.objects.get().held == ""


MONDAY = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)  # a Monday


@pytest.mark.parametrize(
    ("days", "start", "end", "at", "on"),
    [
        ([0], "02:00", "04:00", MONDAY + dt.timedelta(hours=3), True),
        ([0], "02:00", "04:00", MONDAY + dt.timedelta(hours=4), False),  # the end is out
        ([0], "02:00", "04:00", MONDAY + dt.timedelta(hours=1, minutes=59), False),
        ([1], "02:00", "04:00", MONDAY + dt.timedelta(hours=3), False),  # Tuesdays only
        ([0, 2], "02:00", "04:00", MONDAY + dt.timedelta(days=2, hours=2), True),
        # past midnight: Monday 23:00 to Tuesday 01:00 is Monday's window
        ([0], "23:00", "01:00", MONDAY + dt.timedelta(hours=23, minutes=30), True),
        ([0], "23:00", "01:00", MONDAY + dt.timedelta(days=1, minutes=30), True),
        ([0], "23:00", "01:00", MONDAY + dt.timedelta(minutes=30), False),  # Sunday's
    ],
)
def test_a_maintenance_window_is_on_on_its_days_between_its_times(
    ns: str, days: list[int], start: str, end: str, at: dt.datetime, on: bool
) -> None:
    s = Silence(
        connection="default", namespace=ns, pattern="*", reason="weekly", created_by="otto",
        starts=MONDAY - dt.timedelta(days=7), ends=None, weekdays=days,
        window_start=dt.time.fromisoformat(start), window_end=dt.time.fromisoformat(end),
    )  # fmt: skip
    assert silences.on(s, at) is on


def test_a_window_holds_during_its_hours_only(rule_of, add_snapshot, redis_now, ns) -> None:
    rule_of()
    now = timezone.now()
    outside = (now + dt.timedelta(hours=2)).time().replace(second=0, microsecond=0)
    silence(ns, ends=None, weekdays=list(range(7)), window_start=outside,
            window_end=(now + dt.timedelta(hours=3)).time())  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert Notification.objects.get().held == ""


# -- the page: create, list, expire --------------------------------------------------------


def form(ns: str, **fields: object) -> dict[str, object]:
    return {"place": f"default/{ns}", "pattern": "orders-*", "reason": "deploy v2",
            "hours": "2", **fields}  # fmt: skip


def test_an_operator_silences_a_pattern_and_it_is_listed_and_audited(
    console, operator, ns: str
) -> None:
    response = operator.post("/alerts/silences/", form(ns))
    assert response.status_code == 302
    s = Silence.objects.get()
    assert (s.pattern, s.reason, s.created_by, s.rule) == ("orders-*", "deploy v2", "otto", None)
    assert dt.timedelta(hours=1, minutes=59) < s.ends - timezone.now() <= dt.timedelta(hours=2)
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue, row.username) == (
        "alert_silence", "ok", "orders-*", "otto",
    )  # fmt: skip
    assert row.params["reason"] == "deploy v2" and row.params["hours"] == 2.0
    page = operator.get("/alerts/").content.decode()
    assert "deploy v2" in page and "otto" in page and "Expire now" in page


def test_an_operator_makes_a_weekly_maintenance_window(console, operator, ns: str) -> None:
    data = form(ns, hours="", weekdays=["tue", "thu"], start="02:00", end="03:30")
    assert operator.post("/alerts/silences/", data).status_code == 302
    s = Silence.objects.get()
    assert (s.weekdays, s.window_start, s.window_end, s.ends) == (
        [1, 3], dt.time(2), dt.time(3, 30), None,
    )  # fmt: skip
    assert "tue, thu 02:00–03:30 UTC" in operator.get("/alerts/").content.decode()


def test_a_silence_set_to_begin_later_holds_nothing_until_then_and_is_listed_scheduled(
    console, operator, rule_of, add_snapshot, redis_now, ns: str
) -> None:
    begins = (timezone.now() + dt.timedelta(hours=3)).replace(second=0, microsecond=0)
    data = form(ns, pattern="q*", begins=begins.strftime("%Y-%m-%d %H:%M"))
    assert operator.post("/alerts/silences/", data).status_code == 302
    s = Silence.objects.get()
    assert (s.starts, s.ends) == (begins, begins + dt.timedelta(hours=2))
    assert AuditEntry.objects.get().params["begins"] == begins.isoformat()
    assert "data-silence-scheduled" in operator.get("/alerts/").content.decode()
    assert silences.current() == [s] and silences.on_now("default", ns) == []
    assert silences.on(s, begins) and not silences.on(s, begins - dt.timedelta(seconds=1))
    rule_of()
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert [bool(n.held) for n in Notification.objects.all()] == [False]  # told: not yet on


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"hours": "0"}, "hours", "hours: a number of hours above 0 and at most 2160"),
        ({"hours": "9999"}, "hours", "at most 2160"),
        ({"hours": "soon"}, "hours", "hours: a number of hours"),
        ({"reason": "  "}, "reason", "reason: say why"),
        ({"pattern": ""}, "pattern", "pattern: a queue pattern"),
        ({"pattern": "x" * 161}, "pattern", "pattern: at most 160 characters"),
        ({"place": "default/nowhere"}, "connection", "one of the console's places"),
        ({"rule": "12345"}, "rule", "rule: no such alert rule"),
        ({"weekdays": ["someday"], "start": "02:00", "end": "03:00"}, "weekdays", "mon, tue"),
        ({"weekdays": ["mon"], "start": "25:00", "end": "03:00"}, "start", "from 00:00 to 23:59"),
        ({"weekdays": ["mon"], "start": "02:00", "end": "02:00"}, "end", "other than the start"),
        ({"start": "02:00", "end": "03:00"}, "weekdays", "at least one day"),
        ({"begins": "tomorrow"}, "begins", "begins: a time from now to 30 days ahead"),
        ({"begins": "2026-02-30 02:00"}, "begins", "YYYY-MM-DD HH:MM (UTC)"),
        ({"begins": "2000-01-01 02:00"}, "begins", "from now to 30 days ahead"),
        ({"begins": (timezone.now() + dt.timedelta(days=31)).strftime("%Y-%m-%d %H:%M")},
         "begins", "from now to 30 days ahead"),
    ],
)  # fmt: skip
def test_bad_input_is_a_form_error_naming_the_field_and_its_range(
    console, operator, ns: str, fields: dict, field: str, says: str
) -> None:
    response = operator.post("/alerts/silences/", form(ns, **fields))
    assert response.status_code == 422
    assert says in html.unescape(response.content.decode())
    assert not Silence.objects.exists()
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("alert_silence", "invalid")
    assert row.detail.startswith(field) or f"; {field}" in row.detail or field in row.detail


def test_a_viewer_may_not_silence(console, viewer, ns: str) -> None:
    assert viewer.post("/alerts/silences/", form(ns)).status_code == 403
    assert not Silence.objects.exists()
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("alert_silence", "denied")
    assert "Expire now" not in viewer.get("/alerts/").content.decode()


def test_expire_now_ends_it_and_the_alert_is_told(
    rule_of, operator, add_snapshot, redis_now, ns: str
) -> None:
    rule_of()
    s = silence(ns)
    t0 = redis_now() - 1000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    assert operator.post(f"/alerts/silences/{s.pk}/expire/").status_code == 302
    s.refresh_from_db()
    assert s.expired_by == "otto" and s.ends <= timezone.now()
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.params["silence"]) == ("alert_silence_expire", "ok", s.pk)
    add_snapshot("q1", t0 + 1000, msgs=10)
    evaluate()
    assert [bool(n.held) for n in Notification.objects.order_by("id")] == [True, False]
    assert silences.current() == []


def test_the_outbox_on_the_page_shows_what_was_held_and_by_what(
    rule_of, viewer, add_snapshot, redis_now, ns: str
) -> None:
    rule_of()
    silence(ns, reason="db migration")
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    page = viewer.get("/alerts/").content.decode()
    assert "Notifications held by silences: 1" in page
    assert "silence by otto until" in page and "db migration" in page
    assert "Notifications waiting" not in page  # held is not waiting


def test_a_queue_pages_silence_link_opens_the_form_filled_in(
    rule_of, operator, add_snapshot, redis_now, console, rsmq, ns: str
) -> None:
    rsmq.create_queue("q1")
    rule_of()
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    page = operator.get(console.queue("q1")).content.decode()
    link = f"/alerts/?place=default%2F{ns}&amp;pattern=q1#silences"
    assert link in page
    form = operator.get(html.unescape(link)).content.decode()
    assert '<details class="new-silence" open>' in form
    assert f'<option value="default/{ns}" selected>' in form
    assert 'name="pattern" value="q1"' in form
