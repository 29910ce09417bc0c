"""The overview triages: what needs attention first (dashboard/triage/conditions.py's score,
judged at each snapshot: how bad times how big), the reasons in words on the row, a
totals strip, dead-letter queues linked both ways, exact numbers on hover and in full on
cards, absolute times on hover."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.test import Client

from dashboard.models import AnomalyFlag
from dashboard.triage import flags
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    return [s.qname for s in response.context["stats"]]


@pytest.fixture
def mixed(console, settings, rsmq: RedisSMQ, lake: Path) -> None:
    """big: the fullest, nothing wrong; slow-1: over its SLO (a pattern's); growing: its
    backlog rose between two snapshots; flagged: an open pipeline flag; jobs sends its
    dead letters to jobs-dlq, where three arrived."""
    settings.RSMQ_OLDEST_AGE_SLOS = {"slow-*": 0.05}
    settings.RSMQ_BACKLOG_GROWTH_MIN = 10
    settings.RSMQ_BACKLOG_WINDOW = 0.05
    for name in ("big", "slow-1", "growing", "flagged", "jobs", "jobs-dlq"):
        rsmq.create_queue(name)
    rsmq.send_messages("big", ["x"] * 500)
    rsmq.send_messages("slow-1", ["x"])
    rsmq.send_messages("growing", ["x"] * 5)
    rsmq.send_messages("flagged", ["x"])
    rsmq.set_dead_letter_policy("jobs", "jobs-dlq", 3)
    rsmq.send_messages("jobs-dlq", ["dead"])
    AnomalyFlag.objects.create(
        connection="default", namespace=console.ns, queue="flagged", kind="redelivery_storm",
        start=round(time.time() * 1000) - 60_000, end=None, intervals=3,
        figures={"received": 90, "sent": 10, "receive_rate_max": 2.0},
    )  # fmt: skip
    take_snapshot()
    time.sleep(0.1)  # slow-1's message is now older than its 0.05 s SLO
    rsmq.send_messages("growing", ["x"] * 55)
    rsmq.send_messages("jobs-dlq", ["dead"] * 3)
    take_snapshot()


def test_it_orders_what_needs_attention_first(console, mixed, viewer: Client) -> None:
    # growing: 15 points x log10(10 + 60); slow-1: 10 x log10(11); jobs, whose dead
    # letters arrive in jobs-dlq: 10 x log10(10); flagged: 5 x log10(11); then the
    # fullest of the rest: jobs-dlq is expected idle (a dead-letter queue), never first.
    assert _names(viewer.get(console.overview())) == [
        "growing", "slow-1", "jobs", "flagged", "big", "jobs-dlq",
    ]  # fmt: skip


def test_it_says_why_a_queue_needs_attention(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert re.search(r'<span class="reason">backlog \+55 in under a second \(60\)</span>', page)
    # The dead letters arriving count on the queue that fails them; the dead-letter queue
    # says how many came, nothing more.
    assert '<span class="reason">dead-lettering: +3 to jobs-dlq in under a second</span>' in page
    assert '<span class="reason">+3 dead letters in under a second</span>' in page
    assert '<span class="reason">flag: redelivery storm</span>' in page
    over = r'<span class="reason">oldest [^<]* \(SLO under a second\)</span>'
    assert len(re.findall(over, page)) == 1


def test_a_big_backlog_grows_by_its_rate_not_only_by_a_share(settings) -> None:
    """+12,000 on 195,000 in ten minutes is 6%, under RSMQ_BACKLOG_GROWTH, but 20/s."""
    from dashboard.triage import thresholds

    settings.RSMQ_BACKLOG_GROWTH, settings.RSMQ_BACKLOG_GROWTH_MIN = 0.1, 100
    settings.RSMQ_BACKLOG_GROWTH_RATE = 5
    assert thresholds.backlog_growing(207_000, 195_000, 600)
    assert not thresholds.backlog_growing(197_000, 195_000, 600)  # 3.3/s, 1%
    assert not thresholds.backlog_growing(150, 60, 600)  # 90: under the floor


def test_an_slo_pattern_only_matches_its_names(console, mixed, settings) -> None:
    from dashboard.triage import thresholds

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
    # Every open flag, counted: the pipeline's on flagged; the console's own (at each
    # snapshot) on growing (backlog growing) and slow-1 (oldest over its SLO).
    assert cards["Open flags"] == str(AnomalyFlag.objects.filter(end__isnull=True).count())
    assert cards["Open flags"] == "3"


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
    assert stamp and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp[1])
    # The same instant on hover, as a person reads it, with its zone said.
    assert stamp[2] == stamp[1].replace("T", " ").replace("Z", " UTC")


def test_the_sorted_column_header_carries_aria_sort(console, mixed, viewer: Client) -> None:
    page = viewer.get(console.overview("?sort=-msgs")).content.decode()
    assert re.search(r'<th class="num sorted" scope="col" aria-sort="descending">', page)
    assert "<a" not in re.findall(r"<a [^>]*aria-sort", page)  # never on the link


def test_the_consoles_flag_stays_one_and_tells_its_figures_as_of_now(
    console, mixed, rsmq: RedisSMQ
) -> None:
    """A console flag opened at one snapshot is the same flag at the next while its
    condition holds (not a duplicate), with its figures brought up to date."""
    from dashboard.triage.conditions import take_snapshot

    rsmq.send_messages("growing", ["x"] * 20)
    take_snapshot()
    [flag] = AnomalyFlag.objects.filter(queue="growing", source="console")
    assert flag.open and flag.kind == "backlog_growing"
    assert (flag.figures["backlog_from"], flag.figures["backlog_to"]) == (5, 80)
    assert "5 → 80 messages" in flags.in_figures(flag)


def test_a_firing_alert_marks_its_queue_raises_it_and_counts_in_the_header(
    console, mixed, viewer: Client
) -> None:
    """An alert that fires on "big" (nothing else wrong with it): after the evaluation, its
    score counts the alert (25 points x its size), it leads, its row says so, and every
    page's header counts it."""
    from dashboard.models import Alert, AlertRule
    from dashboard.triage import conditions

    rule = AlertRule.objects.create(name="deep", connection="default", namespace=console.ns,
                                    queue="big", metric="visible", threshold=100)  # fmt: skip
    Alert.objects.create(rule=rule, connection="default", namespace=console.ns, queue="big",
                         state="firing", value=500, since=1, changed=1)  # fmt: skip
    assert conditions.refresh_alerts("default", console.ns) == 1
    response = viewer.get(console.overview())
    assert _names(response)[0] == "big"
    page = response.content.decode()
    assert re.search(r'>big</a>[^<]*<span class="badge firing"[^>]*data-firing>1 firing<', page)
    header = viewer.get(console.queue("jobs")).content.decode()
    assert re.search(r"data-alerts-firing[^>]*>1 firing<", header)
    Alert.objects.update(state="resolved")
    assert conditions.refresh_alerts("default", console.ns) == 1
    assert _names(viewer.get(console.overview()))[0] == "growing"
