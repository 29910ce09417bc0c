"""/metrics for Prometheus: every configured namespace's queues, read at each scrape.

    rsmq_queue_messages{connection,namespace,queue}      gauge
    rsmq_queue_visible_messages / _hidden_ / _inflight_ / _delayed_messages
    rsmq_queue_oldest_visible_age_seconds                 gauge (0: nothing visible)
    rsmq_queue_sent_total / rsmq_queue_received_total     counters (totalsent / totalrecv)
    rsmq_queue_unreadable{connection,namespace,queue}     1 for a queue whose data can't be
                                                          read (no other series of it)
    rsmq_up{connection,namespace}                         1: read, 0: Redis failed

A scrape reads each namespace once (``queue_stats``: its queue list and counters in one
pipeline; one more round trip only for queues created since the last read).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from queues.urls import redacted

from .access import token_or_viewer
from .connections import Connection, connections, stats_of_all

log = logging.getLogger(__name__)

LABELS = ["connection", "namespace", "queue"]
GAUGES = {
    # name: (help, field of QueueStats.as_dict)
    "rsmq_queue_messages": ("Messages in the queue", "msgs"),
    "rsmq_queue_visible_messages": ("Messages a receive can get now", "visible"),
    "rsmq_queue_hidden_messages": ("Messages not visible (in flight or delayed)", "hidden"),
    "rsmq_queue_inflight_messages": ("Hidden messages received at least once", "inflight"),
    "rsmq_queue_delayed_messages": ("Hidden messages never received (delayed)", "delayed"),
}


class QueueCollector:
    """Collects every queue of the given (connection, namespace) places when scraped."""

    def __init__(self, places: Sequence[tuple[Connection, str]]) -> None:
        self.places = places

    def collect(self) -> Iterator[Metric]:
        gauges = {
            name: GaugeMetricFamily(name, doc, labels=LABELS) for name, (doc, _) in GAUGES.items()
        }
        age = GaugeMetricFamily(
            "rsmq_queue_oldest_visible_age_seconds",
            "Seconds since the oldest visible message was sent (0: nothing visible)",
            labels=LABELS,
        )
        sent = CounterMetricFamily("rsmq_queue_sent", "Messages sent (totalsent)", labels=LABELS)
        received = CounterMetricFamily(
            "rsmq_queue_received", "Messages received (totalrecv)", labels=LABELS
        )
        unreadable = GaugeMetricFamily(
            "rsmq_queue_unreadable",
            "1: the queue's data can't be read (written by some other client), or its name "
            "is not an RSMQ queue name",
            labels=LABELS,
        )
        up = GaugeMetricFamily(
            "rsmq_up", "1 if the namespace was read in this scrape", labels=LABELS[:2]
        )
        for (conn, ns), stats in zip(self.places, stats_of_all(self.places), strict=True):
            if isinstance(stats, Exception):
                e = stats
                # One Redis down must not hide the others: its namespace reports up 0.
                log.warning(
                    "metrics: %s/%s unreadable at %s: %s", conn.name, ns, redacted(conn.url), e
                )
                up.add_metric([conn.name, ns], 0)
                continue
            up.add_metric([conn.name, ns], 1)
            for s in stats:
                if s.unreadable:
                    log.warning("metrics: %s/%s queue %r: %s", conn.name, ns, s.qname, s.unreadable)
                    unreadable.add_metric([conn.name, ns, s.qname], 1)
                    continue
                d = s.as_dict()
                labels = [conn.name, ns, d["name"]]
                for name, (_, field) in GAUGES.items():
                    gauges[name].add_metric(labels, d[field])
                age.add_metric(labels, d["oldest_age"] or 0.0)
                # created: a queue deleted and recreated starts its counters again.
                sent.add_metric(labels, d["totalsent"], created=d["created"])
                received.add_metric(labels, d["totalrecv"], created=d["created"])
        yield from gauges.values()
        yield from (age, sent, received, unreadable, up)


@require_safe
@token_or_viewer
def metrics(request: HttpRequest) -> HttpResponse:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector([(c, ns) for c in connections() for ns in c.namespaces]))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
