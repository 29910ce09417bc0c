"""Competing consumers: each message is delivered to exactly one of several processes."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from queues import RedisSMQ

MESSAGES = 2000
WORKERS = 4


def consume(redis_url: str, ns: str, qname: str, out: str, start: Barrier) -> None:
    """Receive and delete until the queue is empty; write each id received to ``out``."""
    received = []
    with RedisSMQ(url=redis_url, ns=ns) as client:
        client.ping()
        start.wait(30)  # every worker connected: they start receiving together
        while (msg := client.receive_message(qname, vt=30)) is not None:
            received.append(msg.id)
            client.delete_message(qname, msg.id)
    Path(out).write_text("\n".join(received))


@pytest.mark.slow
def test_four_processes_receive_every_message_exactly_once(
    rsmq: RedisSMQ, queue: str, redis_url: str, ns: str, tmp_path: Path
):
    sent = []
    for k in range(0, MESSAGES, 500):
        sent += rsmq.send_messages(queue, [f"m{i}" for i in range(k, k + 500)])
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WORKERS + 1)
    outs = [tmp_path / f"worker{w}.txt" for w in range(WORKERS)]
    workers = [
        ctx.Process(target=consume, args=(redis_url, ns, queue, str(out), start)) for out in outs
    ]
    for p in workers:
        p.start()
    start.wait(30)
    for p in workers:
        p.join(60)
    assert [p.exitcode for p in workers] == [0] * WORKERS

    per_worker = [out.read_text().split() for out in outs]
    delivered = Counter(mid for ids in per_worker for mid in ids)

    assert all(per_worker), "every worker took part"
    assert sorted(delivered) == sorted(sent)
    assert set(delivered.values()) == {1}
    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.totalrecv, attrs.msgs) == (MESSAGES, 0)
