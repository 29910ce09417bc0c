"""Consumers named for any RSMQ client: a Node rsmq-worker (rsmq 0.12.4, tests/node/
worker.js) keeps up with a queue — *healthy*, and never listed as a live worker (only the
project's own register) — then stops: *no consumers* within two snapshot intervals. The
console reads only what every client leaves in Redis (totalrecv, msgs, rc)."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from django.test import Client
from support.node_rsmq import install
from support.workers.harness import wait_for

from dashboard.models import QueueCondition
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

INTERVAL = 1.2


def test_a_node_consumer_is_healthy_then_missed_when_it_stops(
    console, settings, lake, redis_server, redis_url: str, rsmq: RedisSMQ, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = INTERVAL
    settings.RSMQ_BACKLOG_WINDOW = INTERVAL
    settings.RSMQ_NO_CONSUMER_AFTER = 1
    driver = install()
    rsmq.create_queue("node-jobs")
    config = {"port": redis_server.port, "ns": console.ns, "qname": "node-jobs",
              "interval": [0, 0.05]}  # fmt: skip
    node = subprocess.Popen(
        ["node", "--no-deprecation", str(driver.with_name("worker.js")), json.dumps(config)],
        cwd=driver.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    stop = threading.Event()

    def send() -> None:
        with RedisSMQ(url=redis_url, ns=console.ns) as sender:
            while not stop.wait(0.1):
                sender.send_message("node-jobs", "job")

    sender = threading.Thread(target=send, daemon=True)
    try:
        assert node.stdout is not None and node.stdout.readline().strip() == b"ready"
        sender.start()
        wait_for(lambda: rsmq.get_queue_attributes("node-jobs").totalrecv >= 5, 15, "receives")
        take_snapshot()
        time.sleep(INTERVAL)
        take_snapshot()
        assert QueueCondition.objects.get(queue="node-jobs").state == "healthy"
        page = viewer.get(console.queue("node-jobs")).content.decode()
        assert 'data-consumer-state="healthy"' in page and "data-no-workers" in page

        node.terminate()
        node.wait(10)
        for _ in range(2):  # within two snapshot intervals
            time.sleep(INTERVAL)
            take_snapshot()
        condition = QueueCondition.objects.get(queue="node-jobs")
        assert condition.state == "no_consumers", condition.reason
        assert condition.reason.startswith("no consumer for ")
    finally:
        stop.set()
        if node.poll() is None:
            node.kill()
        node.wait(10)
