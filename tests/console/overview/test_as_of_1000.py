"""At 1,000 queues the overview as of a past time equals what was stored for that time:
every queue of the snapshot run then with exactly its counts, and the condition, reasons
and score the overview had then (the conditions as judged right after that run); paged
as the overview pages. (Its server time at this scale: bench/dashboard.py --as-of.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import Client

from dashboard.models import QueueCondition
from dashboard.snapshots import latest
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

N = 1000


def test_the_overview_then_is_the_snapshot_and_conditions_then(
    console, settings, rsmq: RedisSMQ, lake: Path, viewer: Client
) -> None:
    settings.RSMQ_BACKLOG_GROWTH_MIN = 10
    settings.RSMQ_BACKLOG_WINDOW = 0.05
    settings.RSMQ_OLDEST_AGE_SLOS = {"q-00*": 0.05}
    names = [f"q-{i:04d}" for i in range(N)]
    for q in names:
        rsmq.create_queue(q)
    for q in names[::7]:
        rsmq.send_messages(q, ["x"] * 3)
    take_snapshot()
    time.sleep(0.1)
    for q in names[::50]:
        rsmq.send_messages(q, ["x"] * 40)  # growing, then
    take_snapshot()
    judged = {
        c.queue: (c.state, c.reason, c.score)
        for c in QueueCondition.objects.filter(namespace=console.ns)
    }
    time.sleep(0.05)
    then = round(time.time() * 1000)
    time.sleep(0.05)
    for q in names[::50]:
        rsmq.purge_queue(q)
    for q in names[1::9]:
        rsmq.send_messages(q, ["y"])
    take_snapshot()

    _, rows = latest.run_at("default", console.ns, then)
    stored = {
        r[0]: r[1:]
        for r in rows.values_list(
            "queue", "msgs", "hiddenmsgs", "inflight", "delayed", "totalsent", "totalrecv"
        )
    }
    shown, order = {}, []
    page = 1
    while True:
        response = viewer.get(console.overview(f"?as_of={then}&page={page}"))
        assert response.status_code == 200
        for t in response.context["then"]:
            shown[t.qname] = t
            order.append(t.qname)
        if not response.context["page_obj"].has_next():
            break
        page += 1
    assert len(order) == len(set(order)) == N
    assert set(shown) == set(stored) == set(judged)
    for q, t in shown.items():
        assert (t.msgs, t.hidden, t.inflight, t.delayed, t.totalsent, t.totalrecv) == stored[q]
        state, reason, score = judged[q]
        assert (t.state, t.reason) == (state, reason), q
        assert t.score == pytest.approx(score), q
    # the order the overview had then: most urgent first (the score, then the fullest)
    by_score = sorted(shown.values(), key=lambda t: (-judged[t.qname][2], -t.msgs, t.qname))
    assert order == [t.qname for t in by_score]
    assert sum(1 for _, r, _ in judged.values() if r) >= N // 50  # something to say then
