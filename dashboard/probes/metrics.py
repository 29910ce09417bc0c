"""/metrics for Prometheus: every configured namespace's queues.

    rsmq_queue_messages{connection,namespace,queue}      gauge
    rsmq_queue_visible_messages / _hidden_ / _inflight_ / _delayed_messages
    rsmq_queue_oldest_visible_age_seconds                 gauge (0: nothing visible)
    rsmq_queue_sent_total / rsmq_queue_received_total     counters (totalsent / totalrecv)
    rsmq_queue_unreadable{connection,namespace,queue}     1 for a queue whose data can't be
                                                          read (no other series of it)
    rsmq_queue_consumer_state{connection,namespace,queue,state}
                                                          1 for the queue's consumers' state
                                                          as of the last snapshot, 0 for the
                                                          other states
                                                          (dashboard/triage/conditions.py)
    rsmq_up{connection,namespace}                         1: its queues are here, 0: its
                                                          Redis failed
    rsmq_stats_age_seconds{connection,namespace}          0: read live at this scrape; else
                                                          the age of the snapshot served
    rsmq_redis_up{connection}                             1: its Redis answered INFO
    rsmq_redis_at_risk{connection}                        1: RSMQ data can be lost silently
    rsmq_redis_risk{connection,risk}                      1 per reason
                                                          (dashboard/probes/redis_health.py)
    rsmq_redis_memory_used_bytes / _memory_max_bytes      gauges (max 0: no limit)
    rsmq_redis_evicted_keys                               keys evicted since Redis started
    rsmq_redis_persistence                                1: AOF or an RDB schedule, 0: none,
                                                          -1: unknown (CONFIG refused)
    rsmq_redis_last_save_age_seconds                      since the last RDB save
    rsmq_queue_wait_seconds{...,quantile}                 gauges: send -> first receive, the
    rsmq_queue_processing_seconds{...,quantile}           worker's first receive -> delete
                                                          (0.5, 0.95, 0.99), and how many
    rsmq_queue_wait_samples / _processing_samples         messages: from the queue's latest
                                                          snapshot of the last window that
                                                          had any (dashboard/triage/forecast.py)
    rsmq_queue_drain_seconds{connection,namespace,queue}  until the backlog is empty on its
                                                          trend (+Inf: growing); no series
                                                          without a trend
    rsmq_queue_oldest_age_slo_breach_seconds              until the oldest message's age
                                                          reaches its SLO on its trend (0:
                                                          over it); none when not rising
                                                          (these four: namespaces of at most
                                                          OUTLOOK_MAX queues)

A namespace is read live at each scrape (``queue_stats``: its queue list and counters in
one pipeline), unless its last snapshot holds more than ``latest.LIVE_MAX`` queues: reading
100,000 queues costs Redis seconds of scripts, which the snapshot task (every
RSMQ_SNAPSHOT_INTERVAL) has just spent, so the scrape serves that snapshot's rows and says
how old they are in ``rsmq_stats_age_seconds``. Queues that can't be read have no row in a
snapshot, so ``rsmq_queue_unreadable`` lists them only for namespaces read live.

The per-queue series are written by ``dashboard/probes/exposition.py`` (prometheus_client's
generate_latest spends seconds on 100,000 queues: see there); the rest by
prometheus_client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from django.http import HttpRequest, StreamingHttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from dashboard.access import grants
from dashboard.access.grants import Scope
from dashboard.access.roles import Role
from dashboard.acting import silences
from dashboard.api.calls import readers  # an API token of any role, RSMQ_METRICS_TOKEN or a viewer
from dashboard.models import Alert, QueueCondition
from dashboard.places.connections import Connection, connections, stats_of_all
from dashboard.probes import redis_health
from dashboard.probes.exposition import Family, escape, labels, render
from dashboard.snapshots import latest
from dashboard.triage import forecast
from queues.models import QueueStats
from queues.urls import redacted

log = logging.getLogger(__name__)

#: namespaces of at most this many queues have their wait, processing and forecast
#: series in /metrics
OUTLOOK_MAX = 1_000

# The per-queue families, in the order they are written; QueueRow's fields feed them.
FAMILIES = (
    Family("rsmq_queue_messages", "Messages in the queue", "gauge", "msgs"),
    Family("rsmq_queue_visible_messages", "Messages a receive can get now", "gauge", "visible"),
    Family(
        "rsmq_queue_hidden_messages",
        "Messages not visible (in flight or delayed)",
        "gauge",
        "hidden",
    ),
    Family(
        "rsmq_queue_inflight_messages",
        "Hidden messages received at least once",
        "gauge",
        "inflight",
    ),
    Family(
        "rsmq_queue_delayed_messages",
        "Hidden messages never received (delayed)",
        "gauge",
        "delayed",
    ),
    Family(
        "rsmq_queue_oldest_visible_age_seconds",
        "Seconds since the oldest visible message was sent (0: nothing visible)",
        "gauge",
        "oldest_age",
    ),
    # created: a queue deleted and recreated starts its counters again.
    Family("rsmq_queue_sent", "Messages sent (totalsent)", "counter", "totalsent"),
    Family("rsmq_queue_received", "Messages received (totalrecv)", "counter", "totalrecv"),
)


class QueueRow(NamedTuple):
    """One queue's series: its labels and values (the fields FAMILIES name)."""

    labels: str
    msgs: int
    visible: int
    hidden: int
    inflight: int
    delayed: int
    oldest_age: float
    totalsent: int
    totalrecv: int
    created: int

    @classmethod
    def of_stats(cls, place: str, s: QueueStats) -> QueueRow:
        """``place``: ``place_labels`` of the queue's connection and namespace."""
        return cls(
            f'{place}{escape(s.qname)}"', s.msgs, s.visible, s.hidden, s.inflight, s.delayed,
            s.oldest_age or 0.0, s.totalsent, s.totalrecv, s.created,
        )  # fmt: skip

    @classmethod
    def of_snapshot(cls, place: str, row: tuple[Any, ...]) -> QueueRow:
        """``row``: a snapshot's ``SNAPSHOT`` columns."""
        queue, msgs, hidden, inflight, delayed, oldest_age, sent, received, created = row
        return cls(
            f'{place}{escape(queue)}"', msgs, msgs - hidden, hidden, inflight, delayed,
            oldest_age or 0.0, sent, received, created,
        )  # fmt: skip


def place_labels(conn: str, ns: str) -> str:
    """The labels of a namespace's queue series up to the queue's name (``queue="``):
    written once per namespace, not per queue."""
    return labels(connection=conn, namespace=ns, queue="")[:-1]


#: the snapshot columns QueueRow.of_snapshot reads, in its order
SNAPSHOT = ("queue", "msgs", "hiddenmsgs", "inflight", "delayed", "oldest_age", "totalsent",
            "totalrecv", "created")  # fmt: skip
PLACE = ["connection", "namespace"]
STATE_FAMILY = "rsmq_queue_consumer_state"
STATES = tuple(QueueCondition.State.values)


class Scrape:
    """One scrape of the given (connection, namespace) places."""

    def __init__(
        self, places: Sequence[tuple[Connection, str]], scope: Scope | None = None
    ) -> None:
        # ``scope``: the caller's (dashboard/access/grants.py): only the queues it may see
        self.scope = scope
        if scope is not None:
            places = [(c, ns) for c, ns in places if scope.role_in(c.name, ns) > Role.NONE]
        self.places = places
        self.rows: list[QueueRow] = []
        self.unreadable: list[list[str]] = []  # labels
        self.up: list[tuple[list[str], int]] = []
        self.age: list[tuple[list[str], float]] = []
        self.outlooks: list[tuple[list[str], forecast.Outlook]] = []  # [conn, ns, queue]
        live = [(conn, ns) for conn, ns in places if not self._from_snapshot(conn, ns)]
        sizes = []
        for (conn, ns), stats in zip(live, stats_of_all(live), strict=True):
            self._live(conn, ns, stats)
            sizes.append(len(stats) if isinstance(stats, list) else 0)
        now = round(time.time() * 1000)
        # The trends sum every queue's last window of snapshots at each scrape (a cost
        # that grows with the namespace: bench/RESULTS.md, the wait readings and
        # outlooks): only namespaces of OUTLOOK_MAX queues or fewer.
        for (conn, ns), size in zip(live, sizes, strict=True):
            if size <= OUTLOOK_MAX:
                sees = self.sees(conn.name, ns)
                for queue, o in forecast.outlooks(conn.name, ns, None, now).items():
                    if sees(queue):
                        self.outlooks.append(([conn.name, ns, queue], o))

    def sees(self, conn: str, ns: str) -> Callable[[str], bool]:
        """Whether the caller may see a queue of the place (every one: no check made)."""
        scope = self.scope
        if scope is None or scope.whole(conn, ns):
            return lambda queue: True
        return lambda queue: scope.sees(conn, ns, queue)

    def _from_snapshot(self, conn: Connection, ns: str) -> bool:
        """A big namespace's rows from its last snapshot, if recent; False: read it live."""
        run = latest.last_run(conn.name, ns)
        if run is None or not latest.is_big(run[1]):
            return False
        taken_at, snapshot = run
        place = place_labels(conn.name, ns)
        sees = self.sees(conn.name, ns)
        self.rows += (
            QueueRow.of_snapshot(place, r) for r in snapshot.values_list(*SNAPSHOT) if sees(r[0])
        )
        self.up.append(([conn.name, ns], 1))
        self.age.append(([conn.name, ns], max(0.0, time.time() - taken_at / 1000)))
        return True

    def _live(self, conn: Connection, ns: str, stats: list[QueueStats] | Exception) -> None:
        if isinstance(stats, Exception):
            # One Redis down must not hide the others: its namespace reports up 0.
            log.warning(
                "metrics: %s/%s unreadable at %s: %s", conn.name, ns, redacted(conn.url), stats
            )
            self.up.append(([conn.name, ns], 0))
            return
        self.up.append(([conn.name, ns], 1))
        self.age.append(([conn.name, ns], 0.0))
        place = place_labels(conn.name, ns)
        sees = self.sees(conn.name, ns)
        for s in stats:
            if not sees(s.qname):
                continue
            if s.unreadable:
                log.warning("metrics: %s/%s queue %r: %s", conn.name, ns, s.qname, s.unreadable)
                self.unreadable.append([conn.name, ns, s.qname])
            else:
                self.rows.append(QueueRow.of_stats(place, s))

    def collect(self) -> Iterator[Metric]:
        """The other families, for prometheus_client: few series."""
        unreadable = GaugeMetricFamily(
            "rsmq_queue_unreadable",
            "1: the queue's data can't be read (written by some other client), or its name "
            "is not an RSMQ queue name",
            labels=[*PLACE, "queue"],
        )
        for queue in self.unreadable:
            unreadable.add_metric(queue, 1)
        up = GaugeMetricFamily(
            "rsmq_up",
            "1: the namespace's queues are in this scrape (read live, or from a snapshot: "
            "rsmq_stats_age_seconds); 0: its Redis failed",
            labels=PLACE,
        )
        age = GaugeMetricFamily(
            "rsmq_stats_age_seconds",
            "0: the queues' series were read live at this scrape; else the age of the "
            "snapshot they come from (namespaces of more than "
            f"{latest.LIVE_MAX:,} queues)",
            labels=PLACE,
        )
        for place, value in self.up:
            up.add_metric(place, value)
        for place, seconds in self.age:
            age.add_metric(place, seconds)
        yield from (unreadable, up, age)
        yield from self.silenced()
        yield from self.redis()
        yield from self._times()

    def silenced(self) -> Iterator[Metric]:
        """What is silenced (dashboard/acting/silences.py): the silences and maintenance
        windows on now per place, and each firing alert whose notification one held."""
        on = GaugeMetricFamily(
            "rsmq_alert_silences",
            "Silences and maintenance windows on now: their alerts notify nobody",
            labels=PLACE,
        )
        held = GaugeMetricFamily(
            "rsmq_alert_silenced",
            "1: the rule's alert on the queue fires, and a silence held its notification",
            labels=[*PLACE, "queue", "rule"],
        )
        mine = {(c.name, ns) for c, ns in self.places}
        # (a namespace whose Redis is down reports rsmq_up 0 and nothing else)
        for (conn, ns), _ in sorted(p for p in self.up if p[1]):
            on.add_metric([conn, ns], len(silences.on_now(conn, ns)))
        firing = Alert.objects.filter(state=Alert.State.FIRING, held=True).values_list(
            "connection", "namespace", "queue", "rule__name"
        )
        for conn, ns, queue, rule in firing.order_by("connection", "namespace", "queue"):
            if (conn, ns) in mine and self.sees(conn, ns)(queue):
                held.add_metric([conn, ns, queue, rule], 1)
        yield from (on, held)

    def redis(self) -> Iterator[Metric]:
        """Each connection's Redis health (cached a few seconds, as the banner's)."""
        conns = {c.name: c for c, _ in self.places}

        def family(name: str, text: str, *extra: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, text, labels=["connection", *extra])

        up = family("rsmq_redis_up", "1: the Redis answered INFO")
        at_risk = family(
            "rsmq_redis_at_risk", "1: RSMQ data can be lost silently (rsmq_redis_risk says why)"
        )
        risk = family("rsmq_redis_risk", "1 for each reason RSMQ data can be lost", "risk")
        used = family("rsmq_redis_memory_used_bytes", "Memory Redis uses (used_memory)")
        most = family("rsmq_redis_memory_max_bytes", "maxmemory (0: no limit)")
        evicted = family("rsmq_redis_evicted_keys", "Keys evicted since Redis started")
        persistence = family(
            "rsmq_redis_persistence",
            "1: AOF or an RDB save schedule; 0: none; -1: unknown (CONFIG refused, no AOF)",
        )
        save_age = family("rsmq_redis_last_save_age_seconds", "Seconds since the last RDB save")
        for name, conn in conns.items():
            reading = redis_health.cached(conn)
            h = reading.health
            up.add_metric([name], 0 if h is None else 1)
            if h is None:
                continue
            at_risk.add_metric([name], int(reading.at_risk))
            for r in reading.risks:
                risk.add_metric([name, r.code], 1)
            used.add_metric([name], h.used_memory)
            most.add_metric([name], h.maxmemory)
            evicted.add_metric([name], h.evicted_keys)
            persistence.add_metric([name], {True: 1, False: 0, None: -1}[h.persistence])
            save_age.add_metric([name], h.last_save_age)
        yield from (up, at_risk, risk, used, most, evicted, persistence, save_age)

    def states(self) -> Iterator[str]:
        """``rsmq_queue_consumer_state``: a series per queue and state (a state set, as
        prometheus conventions have an enum), from each queue's last judged condition."""
        yield (
            f"# HELP {STATE_FAMILY} 1: the queue's consumers are in this state (as of the "
            "last snapshot: no_consumers, crash_looping, falling_behind, healthy, idle)\n"
            f"# TYPE {STATE_FAMILY} gauge\n"
        )
        for c, ns in self.places:
            conn = c.name
            place = place_labels(conn, ns)
            rows = QueueCondition.objects.filter(connection=conn, namespace=ns)
            lines = []
            sees = self.sees(conn, ns)
            for queue, state in rows.values_list("queue", "state").iterator(chunk_size=10_000):
                if not sees(queue):
                    continue
                head = f'{STATE_FAMILY}{{{place}{escape(queue)}",state="'
                lines += [f'{head}{s}"}} {1.0 if s == state else 0.0}\n' for s in STATES]
            yield "".join(lines)

    def _times(self) -> Iterator[Metric]:
        """The wait and processing percentiles and the forecasts (from snapshots)."""
        queue = [*PLACE, "queue"]
        families = {
            "wait": (
                GaugeMetricFamily(
                    "rsmq_queue_wait_seconds",
                    "Seconds from send to first receive, at the quantile, of the messages "
                    "first received between the queue's latest snapshots that had any",
                    labels=[*queue, "quantile"],
                ),
                GaugeMetricFamily(
                    "rsmq_queue_wait_samples",
                    "Messages rsmq_queue_wait_seconds is of",
                    labels=queue,
                ),
            ),
            "processing": (
                GaugeMetricFamily(
                    "rsmq_queue_processing_seconds",
                    "Seconds from first receive to delete, at the quantile, as the "
                    "project's worker recorded them between the latest snapshots",
                    labels=[*queue, "quantile"],
                ),
                GaugeMetricFamily(
                    "rsmq_queue_processing_samples",
                    "Messages rsmq_queue_processing_seconds is of",
                    labels=queue,
                ),
            ),
        }
        drain = GaugeMetricFamily(
            "rsmq_queue_drain_seconds",
            "Seconds until the backlog is empty on its trend over the last window "
            "(+Inf: growing); no series without a trend",
            labels=queue,
        )
        breach = GaugeMetricFamily(
            "rsmq_queue_oldest_age_slo_breach_seconds",
            "Seconds until the oldest visible message's age reaches its SLO on its "
            "trend (0: over it already); no series when the age is not rising",
            labels=queue,
        )
        for names, o in self.outlooks:
            for kind, (seconds, samples) in families.items():
                times = getattr(o, kind)
                if times is None:
                    continue
                for q, value in (("0.5", times.p50), ("0.95", times.p95), ("0.99", times.p99)):
                    seconds.add_metric([*names, q], value)
                samples.add_metric(names, times.samples)
            if o.drain is not None:
                drain.add_metric(names, o.drain.sort_key())
            if o.breach_in is not None:
                breach.add_metric(names, o.breach_in)
        for seconds, samples in families.values():
            yield from (seconds, samples)
        yield from (drain, breach)

    def body(self) -> Iterator[bytes]:
        """The scrape's text, a family at a time."""
        for text in render(FAMILIES, self.rows):
            yield text.encode()
        for text in self.states():
            yield text.encode()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        yield generate_latest(registry)


def places() -> Iterable[tuple[Connection, str]]:
    return [(c, ns) for c in connections() for ns in c.namespaces]


@require_safe
@readers
def metrics(request: HttpRequest) -> StreamingHttpResponse:
    # Streamed (and gzipped by GZipMiddleware as it streams): 100,000 queues are tens of
    # megabytes of text, never held whole.
    body = Scrape(list(places()), grants.scope_of(request)).body()
    return StreamingHttpResponse(body, content_type=CONTENT_TYPE_LATEST)
