"""Each thread uses its own connection, and a thread's connection goes with the thread."""

from __future__ import annotations

import gc
import threading
import time

import redis

from queues import RedisSMQ


def client_count(r: redis.Redis, name: str) -> int:
    return sum(1 for c in r.client_list() if c.get("name") == name)


def settled_client_count(r: redis.Redis, name: str, at_most: int) -> int:
    """The count once Redis has seen the closed connections go (it reads their end a
    moment after they are closed), or after 2 s."""
    deadline = time.monotonic() + 2
    while (n := client_count(r, name)) > at_most and time.monotonic() < deadline:
        time.sleep(0.01)
    return n


def one_send_per_thread(rsmq: RedisSMQ, threads: int) -> list[BaseException]:
    """Threads that each send one message to q1 and end, one after another; their errors."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            rsmq.send_message("q1", "x")
        except BaseException as e:  # collected for the caller's assertion
            errors.append(e)

    for _ in range(threads):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    return errors


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

    assert settled_client_count(r, "closing", at_most=0) == 0


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


def test_hundreds_of_short_lived_threads_leave_no_connection_behind(
    redis_url: str, ns: str, r: redis.Redis
):
    rsmq = RedisSMQ(client=redis.Redis.from_url(redis_url, client_name="short"), ns=ns)
    rsmq.create_queue("q1")

    errors, counts = [], []
    for _ in range(3):
        errors += one_send_per_thread(rsmq, 100)
        gc.collect()
        counts.append(settled_client_count(r, "short", at_most=1))

    assert errors == []
    assert rsmq.get_queue_attributes("q1").msgs == 300
    assert counts == [1, 1, 1]  # the main thread's own, and none of the threads'
    rsmq.close()


def test_thread_connections_do_not_count_against_the_pool(redis_url: str, ns: str):
    pool = redis.ConnectionPool.from_url(redis_url, max_connections=5)
    rsmq = RedisSMQ(client=redis.Redis(connection_pool=pool), ns=ns)
    rsmq.create_queue("q1")

    errors = one_send_per_thread(rsmq, 50)

    assert errors == []
    assert rsmq.get_queue_attributes("q1").msgs == 50
    assert rsmq.redis.ping()  # the pool itself still has its connections to give
    rsmq.close()
    pool.disconnect()


def test_close_disconnects_the_connections_of_threads_still_alive(
    redis_url: str, ns: str, r: redis.Redis
):
    rsmq = RedisSMQ(client=redis.Redis.from_url(redis_url, client_name="alive"), ns=ns)
    rsmq.create_queue("q1")
    started, done = threading.Barrier(4), threading.Event()

    def work() -> None:
        rsmq.send_message("q1", "x")
        started.wait()
        done.wait()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    started.wait()
    assert client_count(r, "alive") == 4  # the main thread's and three others

    rsmq.close()

    assert settled_client_count(r, "alive", at_most=0) == 0
    done.set()
    for t in threads:
        t.join()
