"""The overview folds each queue's open flags into its row and lists the worst queues'
below the table (dashboard/triage/flags.py): the queues come first whatever the number of
flags; the worst queue, by the overview's own order, heads the list."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client

from dashboard.models import AnomalyFlag, QueueCondition

pytestmark = pytest.mark.django_db


def flag(console, queue: str, kind: str = "oldest_age", ago: int = 60_000, **figures) -> None:
    AnomalyFlag.objects.create(
        connection="default", namespace=console.ns, queue=queue, kind=kind,
        start=round(time.time() * 1000) - ago, end=None, intervals=1,
        figures=figures or {"oldest_age_max": 900.0, "slo": 300.0},
    )  # fmt: skip


def condition(console, queue: str, state: str, score: float) -> None:
    QueueCondition.objects.create(
        connection="default", namespace=console.ns, queue=queue, taken_at=1, created=1,
        msgs=1, totalsent=0, totalrecv=0, recv_since=1, state=state, score=score,
    )  # fmt: skip


@pytest.fixture
def many(console, rsmq) -> None:
    """450 open flags: 40 on stale exports, one crash loop, the rest spread out."""
    for name in ("mail", "exports-00", "exports-01"):
        rsmq.create_queue(name)
    condition(console, "mail", "crash_looping", 90.0)
    condition(console, "exports-00", "stale", 1.0)
    condition(console, "exports-01", "stale", 1.0)
    flag(console, "mail", "redelivery_storm", received=900.0, sent=10.0, receive_rate_max=5.0)
    for i in range(2):
        flag(console, f"exports-0{i}", "consumers_stalled", ago=3_600_000, visible_max=3.0)
    rows = [
        AnomalyFlag(connection="default", namespace=console.ns, queue=f"gone-{i % 200}",
                    kind="oldest_age", start=1_000 + i, intervals=1,
                    figures={"oldest_age_max": 900.0, "slo": 300.0})
        for i in range(447)
    ]  # fmt: skip
    AnomalyFlag.objects.bulk_create(rows)


def test_the_queue_table_comes_before_any_flag(console, many, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert page.index('<table class="grid queues"') < page.index('id="open-flags"')
    # no list of flags above the table: the totals say how many, and link below
    head = page[: page.index('<table class="grid queues"')]
    assert "flag-group" not in head and 'href="#open-flags">450</a>' in head


def test_a_row_carries_its_queues_flags(console, many, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    row = re.search(r'<a class="queue-flag sev-high"[^>]*data-row-flags="1">⚑ 1</a>', page)
    assert row and "1 open flag: redelivery storm" in row[0]


def test_the_worst_queue_by_the_overviews_order_heads_the_list(
    console, many, viewer: Client
) -> None:
    page = viewer.get(console.overview()).content.decode()
    groups = re.findall(r'data-flag-group="([^"]+)"', page)
    assert groups[0] == "mail"  # a crash loop, before the stale exports' "stalled" flags
    assert len(groups) == 20  # the worst 20 of 203 flagged queues
    exports = re.search(
        r'<li class="flag-group sev-(\w+)[^"]*"[^>]*data-flag-group="exports-00"', page
    )
    assert exports is None or exports[1] == "low"  # stale: low, whatever the pipeline says
    assert "450 open on 203 queues" in page
