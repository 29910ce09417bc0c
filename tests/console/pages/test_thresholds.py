"""When the pages warn: thresholds come from settings (the oldest-age SLOs, the poison
receive count) and the queue's own dead-letter policy, never from the templates."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _oldest_cell(page: str, qname: str) -> str:
    """The overview row's "oldest visible" cell (the fifth after the name)."""
    row = re.search(rf'<a href="[^"]*/q/{qname}/">{qname}</a>.*?</tr>', page, re.S)
    assert row, f"no row for {qname}"
    return re.findall(r"<td[^>]*>", row[0])[4]


@pytest.fixture
def waiting(console, rsmq: RedisSMQ) -> RedisSMQ:
    """q1 and q2, each with a visible message at least a few ms old."""
    for qname in ("q1", "q2"):
        rsmq.create_queue(qname)
        rsmq.send_message(qname, "x")
    time.sleep(0.01)
    return rsmq


def test_it_warns_of_an_oldest_message_past_the_slo(
    console, waiting, settings, viewer: Client
) -> None:
    settings.RSMQ_OLDEST_AGE_SLO = 0
    page = viewer.get(console.overview()).content.decode()
    assert 'class="num warn"' in _oldest_cell(page, "q1")


def test_it_does_not_warn_within_the_default_slo(console, waiting, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert "warn" not in _oldest_cell(page, "q1")


def test_it_takes_a_queues_own_slo(console, waiting, settings, viewer: Client) -> None:
    settings.RSMQ_OLDEST_AGE_SLO = 0
    settings.RSMQ_OLDEST_AGE_SLOS = {"q1": 3600}
    page = viewer.get(console.overview()).content.decode()
    assert "warn" not in _oldest_cell(page, "q1")
    assert "warn" in _oldest_cell(page, "q2")


def test_it_prefers_the_slo_for_the_connection_and_namespace(
    console, waiting, settings, viewer: Client
) -> None:
    settings.RSMQ_OLDEST_AGE_SLO = 3600
    settings.RSMQ_OLDEST_AGE_SLOS = {"q1": 3600, f"default/{console.ns}/q1": 0}
    page = viewer.get(console.overview()).content.decode()
    assert "warn" in _oldest_cell(page, "q1")


def _received(rsmq: RedisSMQ, qname: str, times: int) -> str:
    """A message received ``times`` times, left in flight (out of the next one's way)."""
    mid = rsmq.send_message(qname, f"received {times} times")
    for i in range(times):
        assert rsmq.receive_message(qname, vt=60).id == mid
        if i < times - 1:
            rsmq.change_message_visibility(qname, mid, 0)
    return mid


def _rc_cell(page: str, mid: str) -> str:
    [row] = [r for r in re.findall(r"<tr>(.*?)</tr>", page, re.S) if mid in r]
    return re.findall(r'<td class="num[^"]*">', row)[0]


def test_it_marks_a_message_received_as_often_as_the_poison_rc(
    console, settings, rsmq: RedisSMQ, viewer: Client
) -> None:
    settings.RSMQ_POISON_RC = 5
    rsmq.create_queue("q1")
    poison, three = _received(rsmq, "q1", 5), _received(rsmq, "q1", 3)
    page = viewer.get(console.queue()).content.decode()
    assert "warn" in _rc_cell(page, poison)
    assert "warn" not in _rc_cell(page, three)  # rc 3 was the templates' own bar


@pytest.mark.parametrize(
    ("poison_rc", "maxrc", "received", "warned"),
    [
        (5, 3, 3, True),  # dead-lettered at its next receive: the queue's maxrc counts
        (5, 3, 2, False),
        (2, 8, 2, True),  # a higher maxrc does not lift the console's bar
    ],
)
def test_it_marks_a_poison_candidate_at_the_lower_of_poison_rc_and_maxrc(
    console, settings, rsmq: RedisSMQ, viewer: Client, poison_rc, maxrc, received, warned
) -> None:
    settings.RSMQ_POISON_RC = poison_rc
    rsmq.create_queue("q1")
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy("q1", "dead", maxrc)
    mid = _received(rsmq, "q1", received)
    cell = _rc_cell(viewer.get(console.queue()).content.decode(), mid)
    assert ("warn" in cell) is warned


# -- the overview's "needs attention" -----------------------------------------------------


@pytest.mark.parametrize(
    ("now", "before", "growing"),
    [(150, 100, False), (300, 100, True), (1050, 1000, False), (1100, 1000, True),
     (5000, None, False), (90, 100, False)],
)  # fmt: skip
def test_a_backlog_grows_by_a_share_and_a_floor_from_settings(
    settings, now: int, before: int | None, growing: bool
) -> None:
    from dashboard.triage import thresholds

    settings.RSMQ_BACKLOG_GROWTH, settings.RSMQ_BACKLOG_GROWTH_MIN = 0.1, 100
    assert thresholds.backlog_growing(now, before) is growing


def test_it_takes_a_pattern_slo_after_an_exact_one(settings) -> None:
    from dashboard.triage import thresholds

    settings.RSMQ_OLDEST_AGE_SLO = 300
    settings.RSMQ_OLDEST_AGE_SLOS = {"emails-*": 60, "emails-eu": 30}
    assert thresholds.oldest_age_slo("c", "n", "emails-eu") == 30
    assert thresholds.oldest_age_slo("c", "n", "emails-us") == 60
    assert thresholds.oldest_age_slo("c", "n", "emails") == 300
