"""The small things a tired operator trips on: an alert's value as its metric reads and its
state badged; a viewer told why there are no buttons (and a read-only console said);
"add one" opening the owner form filled in; the Undo asking with its count; counts with
separators; waits over a minute and a half in minutes."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.display.charts import seconds
from dashboard.models import Alert, AlertRule
from dashboard.templatetags.alerts import alert_value

pytestmark = pytest.mark.django_db

Metric = AlertRule.Metric


@pytest.mark.parametrize(
    ("value", "metric", "shown"),
    [
        (178177.0, Metric.VISIBLE, "178,177"),
        (178177.0, Metric.OLDEST_AGE, "2 d"),
        (3.5, Metric.SEND_RATE, "3.5/s"),
        (0.82, Metric.REDIS_MEMORY_SHARE, "82%"),
        (1.0, Metric.CONSUMERS_STALLED, "yes"),
        (0.0, Metric.NO_CONSUMERS, "no"),
        (None, Metric.VISIBLE, "—"),
    ],
)
def test_an_alerts_value_reads_as_its_metric(value, metric: str, shown: str) -> None:
    assert alert_value(value, metric) == shown


def test_the_alerts_page_badges_the_state_and_formats_the_value(
    console, viewer: Client, rsmq
) -> None:
    rsmq.create_queue("events")
    rule = AlertRule.objects.create(
        name="backlog", connection="default", namespace=console.ns, queue="events",
        metric=Metric.VISIBLE, threshold=1_000_000,
    )  # fmt: skip
    Alert.objects.create(rule=rule, connection="default", namespace=console.ns, queue="events",
                         state="firing", value=178177.0, since=1, changed=1)  # fmt: skip
    page = viewer.get("/alerts/").content.decode()
    assert '<span class="alert-state firing">firing</span>' in page
    assert re.search(r'title="178177.0" data-alert-value>178,177</td>', page)
    assert "visible messages above 1,000,000" in page  # the rule's threshold too
    assert "178177.0<" not in page


def test_a_viewer_is_told_why_there_are_no_buttons(console, viewer: Client, rsmq) -> None:
    rsmq.create_queue("q1")
    page = viewer.get(console.queue()).content.decode()
    note = re.search(r'<p class="note why-no-actions" data-why-no-actions="viewer">(.*?)</p>', page)
    assert note and "you are signed in as a viewer" in note[1] and "operator role" in note[1]
    failing = viewer.get(console.queue() + "failing/").content.decode()
    assert 'data-why-no-actions="viewer"' in failing


def test_an_operator_gets_the_buttons_and_no_such_note(console, operator: Client, rsmq) -> None:
    rsmq.create_queue("q1")
    page = operator.get(console.queue()).content.decode()
    assert "data-why-no-actions" not in page
    assert "data-why-no-admin" in page  # purge and delete are the admin's: said


def test_a_read_only_console_says_so_to_everyone(console, admin: Client, rsmq, settings) -> None:
    rsmq.create_queue("q1")
    settings.RSMQ_READ_ONLY = True
    page = admin.get(console.queue()).content.decode()
    assert 'data-why-no-actions="read-only"' in page and "RSMQ_READ_ONLY" in page


def test_add_one_opens_the_owner_form_filled_in(console, admin: Client, rsmq) -> None:
    rsmq.create_queue("payments")
    page = admin.get(console.queue("payments")).content.decode()
    link = re.search(r'<a href="([^"]+)" data-add-owner>add one</a>', page)
    assert link
    form = admin.get(link[1].replace("&amp;", "&")).content.decode()
    assert re.search(r'<option value="default/' + console.ns + '" selected>', form)
    assert re.search(r'name="queue"[^>]*value="payments"', form)


def test_the_undo_asks_with_its_count(console, admin: Client, rsmq) -> None:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["x"] * 5200)
    r = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"}, follow=True)
    assert "Purged 5,200 messages from q1." in console.flashes(r)
    assert 'data-confirm="Undo: put back the 5,200 messages this removed from q1?"' in (
        r.content.decode()
    )


@pytest.mark.parametrize(
    ("value", "shown"), [(0.012, "0.012 s"), (1.5, "1.5 s"), (45, "45 s"), (896, "15 min")]
)
def test_a_wait_reads_in_the_unit_a_person_uses(value: float, shown: str) -> None:
    assert seconds(value) == shown


def test_counts_on_the_pages_have_separators(console, admin: Client, rsmq) -> None:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["x"] * 5200)
    page = admin.get(console.queue()).content.decode()
    assert "Delete the queue with its 5,200 messages." in page
    assert "5200" not in re.sub(r'(value|data-[a-z-]+|max|min)="[^"]*"', "", page)
