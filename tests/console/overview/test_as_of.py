"""The overview "as of" a past time (?as_of=, dashboard/triage/as_of.py): the snapshot
run then, each queue's condition and reasons as judged then (the condition history),
beside each queue's messages now; a frozen view, a plain link, a clear word before the
oldest snapshot kept."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import pytest
from django.test import Client
from support.as_of import incident_then

from dashboard.models import ConditionChange, QueueCondition, Snapshot
from dashboard.snapshots import latest
from dashboard.triage import as_of
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def past(console, settings, rsmq: RedisSMQ, lake: Path) -> int:
    """Two runs with growing's backlog rising (an incident then), then it drained and
    calm got messages: returns a time between the second run and the third."""
    return incident_then(settings, rsmq, ["growing", "calm", "slow-1"], "growing", "calm")


def _rows(response) -> list[as_of.Then]:
    return list(response.context["then"])


def test_it_shows_the_snapshot_and_conditions_of_that_time(console, past, viewer: Client) -> None:
    response = viewer.get(console.overview(f"?as_of={past}"))
    assert response.status_code == 200
    taken_at, rows = latest.run_at("default", console.ns, past)
    stored = {r.queue: r for r in rows}
    shown = {t.qname: t for t in _rows(response)}
    assert set(shown) == set(stored) == {"growing", "calm", "slow-1"}
    for q, t in shown.items():
        s = stored[q]
        assert (t.msgs, t.visible, t.inflight, t.delayed, t.totalsent, t.totalrecv) == (
            s.msgs, s.visible, s.inflight, s.delayed, s.totalsent, s.totalrecv
        )  # fmt: skip
    assert shown["growing"].msgs == 60
    assert shown["growing"].reasons[0].startswith("backlog +55 in ")
    assert shown["calm"].msgs == 0
    assert response.context["moment"].taken_at == taken_at <= past


def test_it_puts_what_needed_attention_then_first(console, past, viewer: Client) -> None:
    # growing was the incident then, not now (it was purged since)
    then = [t.qname for t in _rows(viewer.get(console.overview(f"?as_of={past}")))]
    assert then[0] == "growing"
    assert QueueCondition.objects.get(queue="growing").reason == ""


def test_its_order_is_the_score_the_overview_had_then(
    console, settings, rsmq, lake, viewer
) -> None:
    settings.RSMQ_BACKLOG_GROWTH_MIN = 10
    settings.RSMQ_BACKLOG_WINDOW = 0.05
    for name in ("a", "b"):
        rsmq.create_queue(name)
    take_snapshot()
    time.sleep(0.1)
    rsmq.send_messages("b", ["x"] * 40)
    take_snapshot()
    stored = {c.queue: c.score for c in QueueCondition.objects.all()}
    then = {
        t.qname: t.score
        for t in _rows(viewer.get(console.overview(f"?as_of={time.time() * 1000:.0f}")))
    }
    assert then == pytest.approx(stored)


def test_it_shows_each_queue_now_beside_then(console, past, viewer: Client) -> None:
    response = viewer.get(console.overview(f"?as_of={past}&sort=name"))
    shown = {t.qname: t for t in _rows(response)}
    assert shown["growing"].delta == -60
    assert shown["calm"].delta == 7
    body = response.content.decode()
    assert 'data-delta="-60"' in body and 'data-delta="7"' in body


def test_it_takes_an_iso_time(console, past, viewer: Client) -> None:
    iso = as_of.iso(past)  # to the second: the run at or before it
    response = viewer.get(console.overview(f"?as_of={iso}"))
    assert response.status_code == 200
    assert response.context["moment"].asked == past // 1000 * 1000


def test_its_banner_says_frozen_with_the_way_back_to_now(console, past, viewer: Client) -> None:
    body = viewer.get(console.overview(f"?as_of={past}&sort=name")).content.decode()
    assert f"As of {as_of.label(past)} — frozen view; now: " in body
    assert f'href="{console.overview("?sort=name")}" data-as-of-now' in body
    assert "data-as-of-link" in body


def test_it_offers_no_action_and_no_refresh(console, past, admin: Client) -> None:
    body = admin.get(console.overview(f"?as_of={past}")).content.decode()
    assert "Create queue" not in body
    assert 'hx-trigger="every' not in body
    assert '<form method="post"' not in body.split("<main", 1)[1]


def test_it_names_the_oldest_time_kept_before_retention(console, past, viewer: Client) -> None:
    oldest = Snapshot.objects.order_by("taken_at").first().taken_at
    response = viewer.get(console.overview(f"?as_of={oldest - 3_600_000}"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "is before the oldest snapshot kept" in body
    assert as_of.label(oldest) in body


def test_it_refuses_a_time_it_cannot_read(console, viewer: Client) -> None:
    response = viewer.get(console.overview("?as_of=yesterday"))
    assert response.status_code == 400
    assert "as_of must be a UTC time like 2026-11-28T03:00Z" in response.content.decode()


def test_it_writes_a_condition_change_only_when_a_condition_changes(console, rsmq, lake) -> None:
    rsmq.create_queue("quiet")
    take_snapshot()
    take_snapshot()
    take_snapshot()
    assert ConditionChange.objects.filter(queue="quiet").count() == 1


def test_a_queue_deleted_since_is_gone_now(console, past, rsmq, viewer: Client) -> None:
    rsmq.delete_queue("growing")
    response = viewer.get(console.overview(f"?as_of={past}"))
    shown = {t.qname: t for t in _rows(response)}
    assert shown["growing"].gone and shown["growing"].delta is None
    assert shown["growing"].msgs == 60  # then, as stored
    assert not shown["calm"].gone


def test_it_says_when_no_snapshot_was_taken_near_the_time(console, past, viewer) -> None:
    # just after a run: nothing to say
    body = viewer.get(console.overview(f"?as_of={past}")).content.decode()
    assert "data-as-of-gap" not in body
    # an hour after the last run: said, with both times
    moment = as_of.Moment(past + 3_600_000, past + 7_200_000, past, past)
    assert moment.gap == (
        f"No snapshot between {as_of.label(past)} and {as_of.label(past + 3_600_000)}:"
        " snapshots were not being taken then; this is the last one before."
    )


def test_it_reads_the_time_in_its_forms() -> None:
    assert as_of.parse("2026-11-28T03:00") == as_of.parse("2026-11-28T03:00:00Z")
    assert as_of.parse("2026-11-28T03:00:00+00:00") == 1_795_834_800_000
    assert as_of.parse("1795834800000") == 1_795_834_800_000
    with pytest.raises(as_of.BadTime):
        as_of.parse("2026-11-28T03:00+02:00")  # UTC only
    with pytest.raises(as_of.BadTime):
        as_of.parse("2026-13-28")


def test_the_live_overview_offers_to_freeze_it(console, past, viewer: Client) -> None:
    response = viewer.get(console.overview("?sort=name"))
    body = response.content.decode()
    frozen_link = re.search(r'href="([^"]*)" data-freeze', body)
    assert frozen_link is not None
    link = html.unescape(frozen_link.group(1))
    assert "sort=name" in link and f"as_of={response.context['freeze_at']}" in link.replace(
        "%3A", ":"
    )
    again = viewer.get(console.overview(link))
    assert again.context["moment"].taken_at is not None  # the run it was showing


def test_a_rows_link_opens_its_queue_at_the_same_run(console, past, viewer: Client) -> None:
    response = viewer.get(console.overview(f"?as_of={past}"))
    found = re.search(r'href="([^"]*/q/growing/\?as_of=[^"]*)"', response.content.decode())
    assert found is not None
    queue = viewer.get(html.unescape(found.group(1)))
    assert queue.context["moment"].asked == past  # to the millisecond
    assert queue.context["moment"].taken_at == response.context["moment"].taken_at


def test_a_queues_page_then_has_the_rates_of_its_row(console, past, viewer: Client) -> None:
    rows = {t.qname: t for t in _rows(viewer.get(console.overview(f"?as_of={past}")))}
    assert rows["growing"].send_rate and rows["growing"].send_rate > 0
    for q, t in rows.items():
        then = viewer.get(console.queue(q, f"?as_of={past}")).context["then"]
        assert (then.send_rate, then.receive_rate) == (t.send_rate, t.receive_rate), q
