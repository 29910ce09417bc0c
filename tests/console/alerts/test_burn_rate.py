"""Burn-rate rules on a queue's wait-time SLO (dashboard/alerting/burn.py), against the
SRE workbook's multiwindow, multi-burn-rate alerts: over a synthetic series of snapshots
(one a minute, 100 waits each), all good until the errors start, a rule fires at the
first snapshot the workbook's formula says its long window has burnt past its factor —
detection time = factor × (1 − target) / error rate × long window — and not one before;
and it resolves once the short window is clean again, while the long one still burns."""

from __future__ import annotations

import math

import pytest

from dashboard.alerting import burn
from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AlertRule, Snapshot
from dashboard.snapshots.timing import Timing

pytestmark = pytest.mark.django_db

STEP = 60_000  # ms between snapshots
SAMPLES = 100


def series(add_snapshot, t0: int, good: int, bad: int, share: float, after: int = 0) -> None:
    """``good`` snapshots before t0 (none slow), then ``bad`` from t0 + STEP on, each with
    ``share`` of its waits over the SLO, then ``after`` good ones."""
    slow = round(SAMPLES * share)
    for i in range(-good + 1, bad + after + 1):
        over = slow if 0 < i <= bad else 0
        add_snapshot("q1", t0 + i * STEP, wait_p50=1.0, wait_samples=SAMPLES, wait_slow=over)


def first_firing_step(kind: str, target: float, share: float) -> int:
    """The workbook's detection time, in snapshots after the errors start: the long
    window's share of bad events passes factor × budget after factor × budget / share
    of the window; the first snapshot strictly past it fires."""
    w = burn.WINDOWS[kind]
    detection_s = w.factor * (1 - target / 100) / share * w.long
    return math.floor(detection_s * 1000 / STEP) + 1


@pytest.mark.parametrize(
    ("kind", "target", "share"),
    [("fast", 99.0, 1.0), ("fast", 99.0, 0.5), ("fast", 99.9, 0.1), ("slow", 99.0, 0.2)],
)
def test_it_fires_when_the_workbooks_formula_says_and_not_before(
    add_snapshot, ns: str, kind: str, target: float, share: float
) -> None:
    w = burn.WINDOWS[kind]
    t0 = 10_000 * STEP
    expected = first_firing_step(kind, target, share)
    series(add_snapshot, t0, good=w.long // 60, bad=expected + 2, share=share)
    fired = [
        k
        for k in range(1, expected + 3)
        if burn.values("default", ns, ["q1"], kind, target, t0 + k * STEP)["q1"] > w.factor
    ]
    assert fired[0] == expected
    assert fired == list(range(expected, expected + 3))  # and it goes on firing


def test_the_fast_pair_at_99_percent_pages_after_nine_minutes_of_total_failure() -> None:
    # 14.4 × 1 % of an hour is 8.64 minutes: the 9th one-minute snapshot
    assert first_firing_step("fast", 99.0, 1.0) == 9
    assert first_firing_step("slow", 99.0, 1.0) == 22  # 6 × 1 % of 6 h: 21.6 minutes


def test_the_short_window_resolves_it_once_the_errors_stop(add_snapshot, ns: str) -> None:
    t0 = 10_000 * STEP
    series(add_snapshot, t0, good=60, bad=20, share=1.0, after=10)
    at = {k: burn.burn_rates("default", ns, ["q1"], "fast", 99.0, t0 + k * STEP)["q1"]
          for k in range(20, 31)}  # fmt: skip
    long_, short = at[25]  # five minutes after the last bad snapshot
    assert long_ > 14.4 and short == 0.0  # the hour still burns; the last 5 min don't
    assert min(at[20]) > 14.4
    firing = [k for k, pair in at.items() if min(pair) > 14.4]
    assert firing == [20, 21, 22, 23, 24]  # the short window holds a bad one until 25


def test_a_window_without_waits_burns_nothing(add_snapshot, ns: str) -> None:
    assert burn.values("default", ns, ["q1"], "fast", 99.0, 10**12) == {"q1": 0.0}


def test_a_burn_rule_fires_through_the_evaluation_at_the_step_and_not_before(
    rule_of, add_snapshot, redis_now, ns: str
) -> None:
    rule = rule_of(name="wait SLO", metric=AlertRule.Metric.BURN_FAST, threshold=99.0)
    assert rule.condition == "wait SLO burn rate: fast (1 h and 5 min over 14.4), target 99%"
    now = redis_now()
    for step, state in ((8, None), (9, Alert.State.FIRING)):
        Snapshot.objects.all().delete()
        # the series shifted so that its ``step``-th bad snapshot is now
        series(add_snapshot, now - step * STEP, good=60, bad=step, share=1.0)
        evaluate()
        assert dict(rule.alerts.values_list("queue", "state")).get("q1") == state
    alert = Alert.objects.get()
    assert alert.value == pytest.approx(100.0 * 9 / 60)  # the long window: 9 bad of 60


def test_a_burn_rules_target_is_a_percentage_between_0_and_100(admin, console, ns) -> None:
    form = {"name": "burn", "place": f"default/{ns}", "queue": "q1", "pattern": "",
            "metric": "burn:fast", "op": "gt", "threshold": "100", "for_seconds": "0",
            "enabled": "on"}  # fmt: skip
    response = admin.post("/alerts/new/", form)
    assert response.status_code == 422
    assert "a percentage above 0 and below 100" in response.content.decode()
    assert admin.post("/alerts/new/", {**form, "threshold": "99.5"}).status_code == 302
    assert AlertRule.objects.get().burn == "fast"


def test_a_snapshot_counts_the_waits_over_the_queues_slo() -> None:
    t = Timing(waits=(1.0, 5.0, 300.0, 301.0, 900.0), processing=(), sampled=False)
    assert t.columns(300.0)[-1] == 2  # over, not at
    assert Timing(waits=(), processing=(2.0,), sampled=False).columns(300.0)[-1] is None


def test_a_pattern_over_many_queues_reads_the_namespace_not_a_list_of_names(
    add_snapshot, ns: str, monkeypatch
) -> None:
    t0 = 10_000 * STEP
    series(add_snapshot, t0, good=60, bad=10, share=1.0)
    add_snapshot("other", t0, wait_p50=1.0, wait_samples=100, wait_slow=100)
    named = burn.values("default", ns, ["q1", "q2"], "fast", 99.0, t0 + 10 * STEP)
    monkeypatch.setattr(burn, "NAMED_MAX", 1)
    assert burn.values("default", ns, ["q1", "q2"], "fast", 99.0, t0 + 10 * STEP) == named
    assert named == {"q1": pytest.approx(100.0 * 10 / 60), "q2": 0.0}
