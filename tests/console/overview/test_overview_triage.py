"""The overview triages: what needs attention first (open flags, oldest over its SLO,
backlog growing, dead letters arriving), a totals strip, dead-letter queues linked both
ways, exact numbers on hover and in full on cards, absolute times on hover."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client

from dashboard.models import AnomalyFlag, Snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    return [s.qname for s in response.context["stats"]]


def _snapshot(console, qname: str, msgs: int, ago_s: float) -> None:
    Snapshot.objects.create(
        connection="default", namespace=console.ns, queue=qname,
        taken_at=round((time.time() - ago_s) * 1000), msgs=msgs, hiddenmsgs=0, inflight=0,
        delayed=0, totalsent=msgs, totalrecv=0, oldest_age=None, created=0,
    )  # fmt: skip


@pytest.fixture
def mixed(console, settings, rsmq: RedisSMQ) -> None:
    """big: the fullest, nothing wrong; slow-1: over its SLO (a pattern's); growing: its
    backlog rose; flagged: an open flag; jobs sends its dead letters to jobs-dlq."""
    settings.RSMQ_OLDEST_AGE_SLOS = {"slow-*": 0.05}
    settings.RSMQ_BACKLOG_GROWTH_MIN = 10
    for name in ("big", "slow-1", "growing", "flagged", "jobs", "jobs-dlq"):
        rsmq.create_queue(name)
    rsmq.send_messages("big", ["x"] * 500)
    rsmq.send_messages("slow-1", ["x"])
    rsmq.send_messages("growing", ["x"] * 60)
    rsmq.send_messages("flagged", ["x"])
    rsmq.set_dead_letter_policy("jobs", "jobs-dlq", 3)
    rsmq.send_messages("jobs-dlq", ["dead"] * 4)
    _snapshot(console, "growing", 5, ago_s=610)
    _snapshot(console, "big", 500, ago_s=610)
    _snapshot(console, "jobs-dlq", 1, ago_s=610)
    AnomalyFlag.objects.create(
        connection="default", namespace=console.ns, queue="flagged", kind="oldest_age",
        start=round(time.time() * 1000) - 60_000, end=None, intervals=3,
        figures={"oldest_age_max": 900, "slo": 300},
    )  # fmt: skip
    time.sleep(0.1)  # slow-1's message is now older than its 0.05 s SLO


def test_it_orders_what_needs_attention_first(console, mixed, viewer: Client) -> None:
    assert _names(viewer.get(console.overview())) == [
        "flagged", "slow-1", "growing", "jobs-dlq", "big", "jobs",
    ]  # fmt: skip


def test_it_says_why_a_queue_needs_attention(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert re.search(r'<span class="reason">backlog growing \(\+55\)</span>', page)
    assert '<span class="reason">dead letters arriving (+3)</span>' in page
    assert '<span class="reason">open flag</span>' in page
    assert page.count(">oldest over its SLO</span>") == 1  # slow-1 only


def test_an_slo_pattern_only_matches_its_names(console, mixed, settings) -> None:
    from dashboard import thresholds

    settings.RSMQ_OLDEST_AGE_SLO = 300
    assert thresholds.oldest_age_slo("default", console.ns, "slow-1") == 0.05
    assert thresholds.oldest_age_slo("default", console.ns, "slower") == 300


def test_it_badges_a_dead_letter_queue_and_links_it_both_ways(
    console, mixed, viewer: Client
) -> None:
    page = viewer.get(console.overview()).content.decode()
    dlq_row = re.search(
        r'<td class="qname"><a href="[^"]*/q/jobs-dlq/">jobs-dlq</a>(.*?)</td>', page, re.S
    )
    assert dlq_row and '<span class="badge dlq"' in dlq_row[1]
    assert re.search(r'of <a href="[^"]*/q/jobs/">jobs</a>', dlq_row[1])
    src_row = re.search(r'<td class="qname"><a href="[^"]*/q/jobs/">jobs</a>(.*?)</td>', page, re.S)
    assert src_row and re.search(
        r'dead letters → <a href="[^"]*/q/jobs-dlq/">jobs-dlq</a>', src_row[1]
    )


def test_the_dead_letter_queue_page_links_back_to_its_sources(
    console, mixed, viewer: Client
) -> None:
    page = viewer.get(console.queue("jobs-dlq")).content.decode()
    assert re.search(r'data-dlq-of>.*?of\s*<a href="[^"]*/q/jobs/">jobs</a>', page, re.S)


def test_it_shows_the_totals_of_the_namespace_in_full(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    strip = re.search(r'<section class="counts totals".*?</section>', page, re.S)[0]
    cards = dict(
        re.findall(
            r'<span class="label">([^<]+)</span><span class="value">(?:<[^>]+>)*([^<]+)', strip
        )
    )
    assert cards["Queues"] == "6"
    assert cards["Messages"] == "566"
    assert cards["Visible"] == "566"
    assert cards["Open flags"] == "1"


def test_the_totals_come_with_the_live_refresh(console, mixed, viewer: Client) -> None:
    response = viewer.get(console.overview(), **console.htmx(target="queue-table"))
    assert 'id="totals"' in response.content.decode()


def test_an_abbreviated_count_has_the_exact_number_on_hover(
    console, rsmq: RedisSMQ, viewer: Client
) -> None:
    rsmq.create_queue("many")
    rsmq.send_messages("many", ["x"] * 1234)
    page = viewer.get(console.overview()).content.decode()
    assert '<span class="n" title="1,234">1.2k</span>' in page


def test_a_relative_time_has_the_utc_time_on_hover(console, rsmq: RedisSMQ, viewer: Client) -> None:
    rsmq.create_queue("q")
    rsmq.send_message("q", "x")
    page = viewer.get(console.overview()).content.decode()
    stamp = re.search(r'<time datetime="([^"]+)" title="([^"]+)">', page)
    assert stamp and stamp[1] == stamp[2]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp[2])


def test_the_sorted_column_header_carries_aria_sort(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.overview("?sort=-msgs")).content.decode()
    assert re.search(r'<th class="num sorted" scope="col" aria-sort="descending">', page)
    assert "<a" not in re.findall(r"<a [^>]*aria-sort", page)  # never on the link
