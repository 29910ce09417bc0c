"""Each thread uses its own connection, and a thread's connection goes with the thread."""

from __future__ import annotations

import gc
import threading

import redis

from queues import RedisSMQ


def client_count(r: redis.Redis, name: str) -> int:
    return sum(1 for c in r.client_list() if c.get("name") == name)


def test_a_thread_per_call_does_not_pile_up_connections(redis_url: str, ns: str, r: redis.Redis):
    rsmq = RedisSMQ(client=redis.Redis.from_url(redis_url, client_name="pileup"), ns=ns)
    rsmq.create_queue("q1")

    def work() -> None:
        rsmq.send_message("q1", "x")

    for _ in range(30):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    gc.collect()

    assert rsmq.get_queue_attributes("q1").msgs == 30
    assert client_count(r, "pileup") <= 2
    rsmq.close()


def test_close_disconnects_every_live_connection(redis_url: str, ns: str, r: redis.Redis):
    rsmq = RedisSMQ(client=redis.Redis.from_url(redis_url, client_name="closing"), ns=ns)
    rsmq.create_queue("q1")
    assert client_count(r, "closing") == 1

    rsmq.close()

    assert client_count(r, "closing") == 0


def test_threads_share_one_client_safely(redis_url: str, ns: str):
    rsmq = RedisSMQ(url=redis_url, ns=ns)
    rsmq.create_queue("q1")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(200):
                rsmq.send_message("q1", f"{n}-{i}")
        except BaseException as e:  # collected for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert rsmq.get_queue_attributes("q1").totalsent == 800
    rsmq.close()
