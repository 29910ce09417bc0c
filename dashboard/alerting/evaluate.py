"""Evaluation, after each snapshot run (dashboard/tasks.py starts it as a task of its
own, so a failure here never holds a snapshot up): every enabled rule against its
namespace's last run; each (rule, queue) alert moves pending → firing → resolved, each
move kept as an AlertEvent; the moves of one rule in one evaluation become one outbox
row per receiver (delivery.py sends them), in the same transaction as the moves.

A queue an operator paused (queues/ops/flow.py) has its alerts **held**: one that would
start pending or firing does not (nobody is told of what the pause does on purpose); one
already firing stays as it is, and may resolve (and is not told again while paused).
``Evaluation.held`` names them, with the pause's reason; the queue page says so too.

What is told, and when (``_told``): a firing, its resolution (if its firing was told),
a firing alert again every ``renotify_seconds`` until someone acknowledges it
(alerting/acks.py), and one a silence held once the silence is over. An alert a silence
or maintenance window covers (dashboard/acting/silences.py) is written to the outbox
*held* (never sent) once; a low-severity rule's alerts wait for the daily digest
(alerting/digest.py). A place's notifications of one evaluation are written together:
a queue's alerts of several rules to one receiver as one (``enqueue_grouped``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.http import Http404
from django.utils import timezone
from redis.exceptions import RedisError

from dashboard.acting import silences
from dashboard.acting.flow import held_text
from dashboard.alerting import acks, burn, delivery
from dashboard.alerting import rules as r
from dashboard.models import Alert, AlertEvent, AlertRule, Notification, Silence
from dashboard.places.place import resolve
from dashboard.probes import redis_health
from dashboard.snapshots import locks
from dashboard.triage.owners import Owners
from queues.errors import RsmqError
from queues.locks import Busy

log = logging.getLogger(__name__)

LOCK = "alerts"
LOCK_TIMEOUT = 120.0
PER_NOTIFICATION = 1000  # alerts told in one notification
GROUPED_NAMED_MAX = 1000  # queues _grouping names in its query at most
# A notification of more alerts carries no acknowledge links (nobody acknowledges 1,000
# alerts one by one from a chat; each link is a signature to make): the page is for that.
ACK_LINKS_MAX = 100
State = Alert.State


@dataclass
class Evaluation:
    rules: int = 0
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # rule, queue, state
    notifications: int = 0
    skipped: list[str] = field(default_factory=list)  # "conn/ns": no recent snapshot
    failed: list[str] = field(default_factory=list)  # rules whose evaluation failed
    locked: bool = False
    held: list[tuple[str, str, str]] = field(default_factory=list)  # rule, queue, why


def evaluate() -> Evaluation:
    """Every enabled rule once; never two evaluations at a time."""
    try:
        with locks.only_one(LOCK, LOCK_TIMEOUT):
            return _evaluate()
    except Busy:
        log.info("alert evaluation skipped: another one is going on")
        return Evaluation(locked=True)


def _evaluate() -> Evaluation:
    ev = Evaluation()
    places: dict[tuple[str, str], list[AlertRule]] = defaultdict(list)
    for rule in AlertRule.objects.filter(enabled=True):
        places[rule.connection, rule.namespace].append(rule)
    for (conn, ns), rules in places.items():
        # Only the queues a rule names, unless a pattern asks for the whole run.
        named = None if any(x.pattern for x in rules) else {x.queue for x in rules}
        run = r.last_run(conn, ns, named, previous=any(x.metric in r.RATES for x in rules))
        if run is None:
            ev.skipped.append(f"{conn}/{ns}")
            continue
        paused = _paused(conn, ns)
        quiet = silences.on_now(conn, ns)
        # The place's rules in one transaction (each in a savepoint of its own: one that
        # fails is rolled back alone), so what they tell can be grouped per queue before
        # it is written to the outbox, with the moves it tells of.
        with transaction.atomic():
            told: list[tuple[AlertRule, list[Alert]]] = []
            for rule in rules:
                try:
                    with transaction.atomic():
                        told.append((rule, _rule(rule, run, ev, paused, quiet)))
                except Exception:  # noqa: BLE001 - one broken rule must not silence the others
                    log.exception("alert rule %r (%s) not evaluated", rule.name, rule.pk)
                    ev.failed.append(rule.name)
                    continue
                ev.rules += 1
            told, waiting = _grouping(conn, ns, told, run.taken_at)
            ev.notifications += enqueue_grouped(told, run.taken_at)
            now_told = [a for _, alerts in told for a in alerts]
            for alert in now_told:
                alert.notified, alert.held = run.taken_at, False
            _mark(now_told + waiting)  # the waiting as they are: told at a later evaluation
    return ev


def group_seconds() -> float:
    return float(getattr(settings, "RSMQ_ALERT_GROUP_SECONDS", 300))


def _grouping(
    conn: str, ns: str, told: list[tuple[AlertRule, list[Alert]]], now: int
) -> tuple[list[tuple[AlertRule, list[Alert]]], list[Alert]]:
    """One incident, one notification, across evaluations too (Alertmanager's group
    interval): a queue's alert that fires while another alert of the queue was told to
    one of its receivers less than ``group_seconds()`` ago waits, and is told with what
    else of the queue is to be told once that interval is over. Returns what to tell now,
    and the alerts that wait. Only a firing never told waits: a resolution, a
    re-notification or the end of a silence never does."""
    window = group_seconds() * 1000
    fresh_queues = {
        a.queue
        for _, alerts in told
        for a in alerts
        if a.state == State.FIRING and a.notified is None and a.queue
    }
    if not window or not fresh_queues:
        return told, []
    now_ids = {a.pk for _, alerts in told for a in alerts}
    recent = (
        Alert.objects.filter(
            connection=conn,
            namespace=ns,
            state=State.FIRING,
            held=False,
            notified__gt=now - window,
            rule__severity=AlertRule.Severity.HIGH,
        )
        .exclude(queue="")
        .select_related("rule")
    )
    if len(fresh_queues) <= GROUPED_NAMED_MAX:  # (else the place's: an IN of them all is too long)
        recent = recent.filter(queue__in=fresh_queues)
    told_to: dict[str, set[Receiver]] = defaultdict(set)  # queue → receivers told lately
    for a in recent:
        if a.pk not in now_ids:
            told_to[a.queue].update(receivers(a.rule))
    if not told_to:
        return told, []
    now_told: list[tuple[AlertRule, list[Alert]]] = []
    waiting: list[Alert] = []
    for rule, alerts in told:
        mine = set(receivers(rule))
        keep = []
        for a in alerts:
            fresh = a.state == State.FIRING and a.notified is None
            if fresh and a.queue and mine & told_to.get(a.queue, set()):
                waiting.append(a)
            else:
                keep.append(a)
        now_told.append((rule, keep))
    return now_told, waiting


def _values(rule: AlertRule, run: r.Run) -> dict[str, float | None]:
    """The rule's value for each queue of the run it covers (None: can't be told now)."""
    if rule.redis:
        # One alert for the connection's Redis, not one per queue (its queue is "").
        return {"": redis_health.metric_value(rule.connection, rule.metric)}
    queues = [q for q in run.now if r.matches(rule, q)]
    if rule.flag:
        flagged = r.open_flags(rule.connection, rule.namespace, rule.flag)
        return {q: 1.0 if q in flagged else 0.0 for q in queues}
    if rule.consumer_state:
        in_state = r.in_state(rule.connection, rule.namespace, rule.consumer_state)
        return {q: 1.0 if q in in_state else 0.0 for q in queues}
    if rule.burn:
        where = (rule.connection, rule.namespace)
        return dict(burn.values(*where, queues, rule.burn, rule.threshold, run.taken_at))
    if rule.metric == AlertRule.Metric.DEAD_LETTERS:
        added = r.dead_letters(rule, queues)
        rule.save(update_fields=["counters"])
        return {q: added.get(q) for q in queues}
    return {q: r.value(rule, run.now[q], run.before.get(q)) for q in queues}


def holds(rule: AlertRule, value: float) -> bool:
    if rule.flag or rule.consumer_state:
        return value > 0
    if rule.burn:
        return value > burn.factor(rule.burn)
    return value > rule.threshold if rule.op == AlertRule.Op.ABOVE else value < rule.threshold


def _paused(conn: str, ns: str) -> dict[str, str]:
    """The namespace's paused queues and why (its flow index: one command); none when
    it can't be read (then nothing is held)."""
    try:
        flows = resolve(conn, ns).rsmq.flows()
    except (Http404, RsmqError, RedisError) as e:
        log.info("paused queues of %s/%s not read: %s", conn, ns, e)
        return {}
    return {q: held_text(f) for q, f in flows.items() if f.paused}


def _rule(
    rule: AlertRule,
    run: r.Run,
    ev: Evaluation,
    paused: dict[str, str] | None = None,
    quiet: list[Silence] | None = None,
) -> list[Alert]:
    """The rule's alerts moved on as of ``run``; what its receivers are to be told of
    now (firing, resolved, told again), the silenced ones already written held."""
    now = run.taken_at
    paused = paused or {}
    values = _values(rule, run)
    # Not rule.alerts: that would set the rule on each of thousands of alerts, a large
    # share of a pattern's time over a big namespace (bench/RESULTS.md,
    # "Figures behind the code").
    alerts = {a.queue: a for a in Alert.objects.filter(rule_id=rule.pk)}
    candidates: list[Alert] = []  # fired or resolved now, or to be told again
    new: list[Alert] = []
    updated: list[Alert] = []
    moved_now: list[Alert] = []
    for queue in sorted(set(values) | {q for q, a in alerts.items() if a.state != State.RESOLVED}):
        alert = alerts.get(queue)
        value = values.get(queue)
        if queue in values and value is None:
            continue  # no value this time (a rate's first run): the state stays
        if value is not None and holds(rule, value):
            if queue in paused and (alert is None or alert.state != State.FIRING):
                ev.held.append((rule.name, queue, paused[queue]))
                continue  # held: a paused queue's alert neither starts nor fires
            if alert is None or alert.state == State.RESOLVED:
                alert = alert or Alert(
                    rule_id=rule.pk,
                    connection=rule.connection,
                    namespace=rule.namespace,
                    queue=queue,
                    # given, not left to their db_default (an expression object each:
                    # a pattern may make 100,000 of these at once)
                    held=False,
                    acked_by="",
                )
                alert.since = now
                state = State.FIRING if rule.for_seconds == 0 else State.PENDING
            elif alert.state == State.PENDING and now - alert.since >= rule.for_seconds * 1000:
                state = State.FIRING
            else:
                state = State(alert.state)
        elif alert is not None and alert.state != State.RESOLVED:
            # The condition no longer holds, or the queue is gone.
            state = State.RESOLVED
        else:
            continue
        assert alert is not None
        moved = alert.pk is None or alert.state != state
        if not moved and alert.value == value:
            continue  # nothing to write
        was_firing = alert.pk is not None and alert.state == State.FIRING
        alert.state, alert.value = state, value
        if alert.pk is None:
            alert.changed = now
            new.append(alert)
        else:
            if moved:
                alert.changed = now
            updated.append(alert)
        if moved:
            moved_now.append(alert)
            ev.changes.append((rule.name, queue, state))
            if state == State.FIRING:
                # A new firing: its acknowledgement (of the one before) no longer holds.
                alert.notified, alert.held, alert.acked, alert.acked_by = None, False, None, ""
                candidates.append(alert)
            elif was_firing and alert.notified is not None and not alert.held:
                # A pending alert that clears was never told of, nor one whose firing a
                # silence held: its end is not told either.
                candidates.append(alert)
    _write(rule, new, updated, moved_now, now)
    moved_ids = {id(a) for a in moved_now}
    for alert in alerts.values():
        if alert.state != State.FIRING or id(alert) in moved_ids or alert.queue in paused:
            continue
        if alert.held:
            candidates.append(alert)  # told once its silence is over (checked below)
        elif alert.notified is None and alert.acked is None:
            candidates.append(alert)  # its firing waited for its queue's group interval
        elif again(rule, alert, now):
            candidates.append(alert)
    return _told(rule, candidates, quiet or [], now, ev)


def again(rule: AlertRule, alert: Alert, now: int) -> bool:
    """Whether a firing alert is due to be told again: the rule re-notifies, nobody
    acknowledged it, and its last notification is that old."""
    return bool(
        rule.renotify_seconds
        and alert.acked is None
        and alert.notified is not None
        and now - alert.notified >= rule.renotify_seconds * 1000
    )


def _told(
    rule: AlertRule, candidates: list[Alert], quiet: list[Silence], now: int, ev: Evaluation
) -> list[Alert]:
    """Of the alerts to tell of, those a silence covers are written held (once: a held
    alert is not held again each evaluation, only told when the silence is over); the
    others are returned to be told (marked told by the caller, once it knows which wait
    for their queue's group interval: ``_grouping``). A low-severity rule's alerts wait
    for the digest."""
    told: list[Alert] = []
    held: dict[int, tuple[Silence, list[Alert]]] = {}
    marked: list[Alert] = []
    for alert in candidates:
        silence = silences.silencing(quiet, rule.pk, alert.queue)
        if silence is not None:
            if alert.held and alert.state == State.FIRING:
                continue  # held already, and still silenced
            held.setdefault(silence.pk, (silence, []))[1].append(alert)
            ev.held.append((rule.name, alert.queue, silences.held_text(silence)))
        elif rule.severity == AlertRule.Severity.HIGH:
            told.append(alert)
            continue
        alert.notified, alert.held = now, silence is not None
        marked.append(alert)
    _mark(marked)
    for silence, alerts in held.values():
        ev.notifications += enqueue(rule, alerts, now, silence=silence)
    return told


def _mark(alerts: list[Alert]) -> None:
    """The alerts' notification columns, in one executemany (see ``_write``)."""
    if not alerts:
        return
    q = connection.ops.quote_name
    columns = ("notified", "held", "acked", "acked_by")
    sql = (
        f"UPDATE {q(Alert._meta.db_table)} SET {', '.join(f'{q(c)} = %s' for c in columns)}"
        f" WHERE {q('id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, [[*(getattr(a, c) for c in columns), a.pk] for a in alerts])


def _write(
    rule: AlertRule, new: list[Alert], updated: list[Alert], moved: list[Alert], now: int
) -> None:
    """The changes in three executemany statements: a pattern over 100,000 queues may
    move them all at once, and building that many model instances for bulk_create and
    bulk_update (a CASE per row) is far too slow on SQLite."""
    q = connection.ops.quote_name

    def sql(model: type[Alert] | type[AlertEvent], columns: tuple[str, ...]) -> str:
        names = ", ".join(q(c) for c in columns)
        marks = ", ".join(["%s"] * len(columns))
        return f"INSERT INTO {q(model._meta.db_table)} ({names}) VALUES ({marks})"

    new_columns = ("rule_id", "connection", "namespace", "queue", "state", "value", "since",
                   "changed")  # fmt: skip
    changes = ("state", "value", "since", "changed")
    update = (
        f"UPDATE {q(Alert._meta.db_table)} SET {', '.join(f'{q(c)} = %s' for c in changes)}"
        f" WHERE {q('id')} = %s"
    )
    with connection.cursor() as cursor:
        if new:
            cursor.executemany(
                sql(Alert, new_columns), [[getattr(a, c) for c in new_columns] for a in new]
            )
            ids = dict(Alert.objects.filter(rule_id=rule.pk).values_list("queue", "id"))
            for a in new:
                a.pk = ids[a.queue]
        if updated:
            cursor.executemany(update, [[*(getattr(a, c) for c in changes), a.pk] for a in updated])
        if moved:
            columns = ("alert_id", "at", "state", "value")
            cursor.executemany(
                sql(AlertEvent, columns), [[a.pk, now, a.state, a.value] for a in moved]
            )


def _info(a: Alert, owners: Owners, rule_name: str = "", link: bool = True) -> delivery.AlertInfo:
    o = owners.of(a.queue) if a.queue else None
    info: delivery.AlertInfo = {
        "queue": a.queue,
        "state": a.state,
        "value": a.value,
        "since": iso(a.since),
        "changed": iso(a.changed),
        "owner": o.as_dict() if o else None,
    }
    if a.state == State.FIRING and link:
        info["ack_url"] = acks.url(a)
    if rule_name:
        info["rule"] = rule_name
    return info


def payload(rule: AlertRule, told: list[Alert], now: int) -> delivery.Payload:
    """What every receiver is told (the generic webhook's body; Slack's and e-mail's
    text are made from it). Each alert names who owns its queue (dashboard/triage/owners.py):
    ``owner`` is {"owner", "oncall", "runbook_url", "matched"}, or None; a firing one
    carries ``ack_url``, its acknowledge link (dashboard/alerting/acks.py), in a
    notification of at most ACK_LINKS_MAX alerts."""
    owners = Owners(rule.connection, rule.namespace)
    links = len(told) <= ACK_LINKS_MAX
    alerts = [_info(a, owners, link=links) for a in told]
    return {
        "rule": {
            "id": rule.pk, "name": rule.name, "condition": rule.condition,
            "for_seconds": rule.for_seconds, "connection": rule.connection,
            "namespace": rule.namespace, "queues": rule.target,
        },
        "evaluated_at": iso(now),
        "firing": sum(a["state"] == State.FIRING for a in alerts),
        "resolved": sum(a["state"] == State.RESOLVED for a in alerts),
        "alerts": alerts,
    }  # fmt: skip


def group_payload(queue: str, told: list[tuple[AlertRule, Alert]], now: int) -> delivery.Payload:
    """One queue's alerts of several rules, told together (one incident, one
    notification): ``rule`` names the group, each alert its own rule (``rule``)."""
    first = told[0][0]
    owners = Owners(first.connection, first.namespace)
    alerts = [_info(a, owners, rule.name) for rule, a in told]
    names = list(dict.fromkeys(rule.name for rule, _ in told))
    return {
        "rule": {
            "id": first.pk, "name": f"{queue}: {len(alerts)} alerts ({', '.join(names)})",
            "condition": "; ".join(dict.fromkeys(f"{r.name}: {r.condition}" for r, _ in told)),
            "for_seconds": min(r.for_seconds for r, _ in told),
            "connection": first.connection, "namespace": first.namespace, "queues": queue,
        },
        "group": queue,
        "evaluated_at": iso(now),
        "firing": sum(a["state"] == State.FIRING for a in alerts),
        "resolved": sum(a["state"] == State.RESOLVED for a in alerts),
        "alerts": alerts,
    }  # fmt: skip


def receivers(rule: AlertRule) -> list[tuple[str, str, str]]:
    """(channel, target, signing key) of each receiver the rule has."""
    out: list[tuple[str, str, str]] = []
    if rule.webhook_url:
        out.append((Notification.Channel.WEBHOOK, rule.webhook_url, rule.webhook_secret))
    if rule.slack_url:
        out.append((Notification.Channel.SLACK, rule.slack_url, ""))
    if rule.recipients:
        out.append((Notification.Channel.EMAIL, ", ".join(rule.recipients), ""))
    return out


Receiver = tuple[str, str, str]


def enqueue(
    rule: AlertRule,
    told: list[Alert],
    now: int,
    only: Receiver | None = None,
    silence: Silence | None = None,
) -> int:
    """One outbox row per receiver (``only`` that one) for this evaluation's moves of the
    rule (per PER_NOTIFICATION of them: a pattern that moves 100,000 queues at once is
    told in parts a receiver can take); sent once the transaction commits, and by the
    periodic sweep if that send is lost. With a ``silence``: written held by it, never
    sent (the outbox shows them)."""
    made = 0
    for start in range(0, len(told), PER_NOTIFICATION):
        part = told[start : start + PER_NOTIFICATION]
        body = payload(rule, part, now)
        moves = ",".join(f"{a.queue}:{a.state}" for a in part)
        for channel, target, secret in [only] if only else receivers(rule):
            made += _row(rule, channel, target, secret, body, f"{rule.pk}|{moves}", now, silence)
    if made and silence is None:
        transaction.on_commit(delivery.send_notifications_soon)
    return made


def _row(
    rule: AlertRule,
    channel: str,
    target: str,
    secret: str,
    body: delivery.Payload,
    what: str,
    now: int,
    silence: Silence | None = None,
) -> int:
    held = silences.held_text(silence) if silence else ""
    key = f"{now}|{channel}|{target}|{what}" + (f"|held {silence.pk}" if silence else "")
    key = hashlib.sha256(key.encode()).hexdigest()
    _, created = Notification.objects.get_or_create(
        key=key,
        defaults={
            "rule": rule, "channel": channel, "target": target, "secret": secret,
            "payload": {"id": key, **body}, "next_attempt": timezone.now(),
            "held": held, "silence": silence,
        },
    )  # fmt: skip
    return int(created)


def enqueue_grouped(told: list[tuple[AlertRule, list[Alert]]], now: int) -> int:
    """A place's notifications of one evaluation. A queue that several rules tell the
    same receiver of (same channel, target and signing key) gets one notification of
    them all (``group_payload``: one incident, one notification); the rest go as each
    rule's own (``enqueue``)."""
    per: dict[Receiver, list[tuple[AlertRule, Alert]]] = defaultdict(list)
    for rule, alerts in told:
        for receiver in receivers(rule):
            per[receiver].extend((rule, a) for a in alerts)
    made = 0
    for receiver, items in per.items():
        rules_of: dict[str, set[int]] = defaultdict(set)
        for rule, a in items:
            if a.queue:
                rules_of[a.queue].add(rule.pk)
        grouped = {q for q, ids in rules_of.items() if len(ids) > 1}
        alone: dict[int, tuple[AlertRule, list[Alert]]] = {}
        together: dict[str, list[tuple[AlertRule, Alert]]] = defaultdict(list)
        for rule, a in items:
            if a.queue in grouped:
                together[a.queue].append((rule, a))
            else:
                alone.setdefault(rule.pk, (rule, []))[1].append(a)
        for rule, alerts in alone.values():
            made += enqueue(rule, alerts, now, only=receiver)
        for queue, pairs in together.items():
            channel, target, secret = receiver
            body = group_payload(queue, pairs, now)
            what = "group|" + ",".join(f"{r.pk}:{a.state}" for r, a in pairs) + f"|{queue}"
            made += _row(pairs[0][0], channel, target, secret, body, what, now)
    if made:
        transaction.on_commit(delivery.send_notifications_soon)
    return made


def _dt(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def iso(ms: int) -> str:
    """Epoch ms as the notifications write times: ISO 8601, UTC, "Z"."""
    return _dt(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")
