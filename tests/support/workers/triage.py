"""The worker app of tests/serve/test_triage_served.py (``rsmq worker
support.workers.triage:worker``): ``mail``'s handler fails every message (a crash loop),
``reports``'s takes 0.2 s a message one at a time (too slow for its traffic), the
``healthy-*`` queues' do nothing (they keep up). No records: nothing else fills up."""

from __future__ import annotations

import os
import time

from queues.models import Message
from queues.worker import Worker

worker = Worker(poll_interval=0.1)


class Broken(Exception):
    """What the crash-looping handler raises."""


@worker.handler("mail", vt=2, backoff=0.2, max_backoff=0.5, concurrency=4)
def mail(msg: Message) -> None:
    raise Broken(f"cannot send {msg.id}")


@worker.handler("reports", concurrency=1)
def reports(msg: Message) -> None:
    time.sleep(0.2)


for i in range(int(os.environ.get("TRIAGE_HEALTHY", "5"))):
    worker.handler(f"healthy-{i}", concurrency=2)(lambda msg: None)
