"""Every Redis call a read can cause is bounded, whatever the bodies (issue 23 item 2).

On a redis-server of this module's own (its SLOWLOG configured here: every call over
5 ms), a queue with ``maxsize -1`` holds 8 MB bodies; body searches with pathological
needles (``a`` x 3900 + ``b``: a naive search costs body length x needle length), the
message browser, one message and the census read them. No script call may hold Redis
over 5 ms, no call at all over 50 ms, and another client's PING stays quick while
several searchers run. The results are checked against a plain Python search.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from queues import RedisSMQ
from queues.limits import BROWSE_FETCH_BYTES, LUA_BODY_MAX, LUA_NEEDLE_MAX
from queues.server import EmbeddedRedis

ROOT = Path(__file__).resolve().parents[2]
MB8 = 8 * 1024 * 1024
NEEDLE = "a" * 3900 + "b"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("bounds")) as s:
        r = redis.Redis.from_url(s.url)
        r.config_set("slowlog-log-slower-than", 5000)
        r.config_set("slowlog-max-len", 10_000)
        r.close()
        yield s


@pytest.fixture(scope="module")
def big(server: EmbeddedRedis) -> Iterator[tuple[RedisSMQ, dict[str, str]]]:
    """A queue with ``maxsize -1``: two 8 MB bodies (one ends with the needle), a 100 KB
    one, small ones; returns the client and the bodies by id."""
    q = RedisSMQ(url=server.url, ns="bounds")
    q.create_queue("big", maxsize=-1)
    bodies = {}
    for body in (
        "x" * 100,
        "a" * MB8,
        "a" * (MB8 - len(NEEDLE)) + NEEDLE,
        "ab" * 50_000 + NEEDLE[-10:],
        "small " + NEEDLE,
        "héllo wörld" * 10,
    ):
        bodies[q.send_message("big", body)] = body
    for i in range(40):
        bodies[q.send_message("big", f"filler {i} " + "ab" * 100)] = f"filler {i} " + "ab" * 100
    yield q, bodies
    q.close()


def slowlog(server: EmbeddedRedis) -> list[tuple[float, str, bytes]]:
    """(ms, command name, command) of every call over 5 ms since the last reset, then
    resets it and the command statistics."""
    r = redis.Redis.from_url(server.url)
    entries = [
        (e["duration"] / 1000, e["command"].split()[0].decode(), e["command"][:80])
        for e in r.slowlog_get(10_000)
    ]
    r.slowlog_reset()
    r.config_resetstat()
    r.close()
    return entries


def scripts_run(server: EmbeddedRedis) -> int:
    """Script calls since the last reset (INFO commandstats)."""
    r = redis.Redis.from_url(server.url)
    stats = r.info("commandstats")
    r.close()
    return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("evalsha", "eval"))


def check_bounds(server: EmbeddedRedis) -> None:
    """No call over 50 ms; no script call over 5 ms — but for the odd one on a shared,
    loaded machine (a call preempted mid-way, the tests' other workers on the same cores):
    at most 1 script in 100, and one call over 50 ms, none over 250 ms (before the
    bounds, every search call held Redis 1.3-1.9 s). Plain commands (an HGET of one long
    body, ~1 ms for 8 MB; a ZRANGE of a page) are held to the 50 ms alone."""
    calls = scripts_run(server)
    slow = slowlog(server)
    assert all(ms <= 250 for ms, *_ in slow), slow
    assert len([ms for ms, *_ in slow if ms > 50]) <= 1, slow
    scripts = [e for e in slow if e[1] in ("EVALSHA", "EVAL")]
    assert len(scripts) <= max(1, calls // 100), (calls, slow)


def search_all(q: RedisSMQ, needle: str) -> list[str]:
    """Every match of a body search, following ``resume`` until the queue's end."""
    ids: list[str] = []
    after = None
    for _ in range(1000):
        b = q.browse("big", contains=needle, limit=50, preview=100, after=after)
        ids += [m.id for m in b.items]
        if b.at_end:
            return ids
        after = b.last if b.complete and b.last else b.resume
    raise AssertionError("the search never reached the queue's end")


@pytest.mark.parametrize(
    "needle",
    [
        NEEDLE,
        "a" * 3900 + "c",
        "ab" * 2000 + "c",
        NEEDLE[-10:],
        "wörld",
        "a" * LUA_NEEDLE_MAX + "b",
    ],
)
def test_search_finds_what_python_finds_and_no_call_is_long(
    server: EmbeddedRedis, big: tuple[RedisSMQ, dict[str, str]], needle: str
) -> None:
    q, bodies = big
    slowlog(server)
    found = search_all(q, needle)
    order = [m.id for m in q.browse("big", limit=1000).items]
    assert found == [i for i in order if needle in bodies[i]]
    if needle == NEEDLE:  # the match at the end of an 8 MB body is found
        assert len(found) == 2
    check_bounds(server)


def test_listing_one_message_and_the_census_read_8mb_bodies_in_plain_hgets(
    server: EmbeddedRedis, big: tuple[RedisSMQ, dict[str, str]]
) -> None:
    q, bodies = big
    slowlog(server)
    ids = list(bodies)
    page = q.list_messages("big", limit=10)  # preview 0: whole bodies
    cut = q.browse("big", limit=10, preview=200)
    for items, preview in ((page.items, 0), (cut.items, 200)):
        assert [m.id for m in items] == ids[:10]
        # whole bodies up to the request's byte budget (after one at least), then a note
        read = 0
        for m in items:
            body = bodies[m.id]
            if m.note:
                assert m.message == "" and "was not read" in m.note
                assert read + len(body.encode()) > BROWSE_FETCH_BYTES
            else:
                assert m.message == (body[:preview] if preview else body)
                read += len(body.encode()) if len(body.encode()) > LUA_BODY_MAX else 0
        assert items[1].size == MB8 and items[1].message and items[2].message
    assert cut.items[1].truncated
    got = q.get_message("big", ids[1])
    assert got is not None and got.message == bodies[ids[1]] and got.size == MB8
    s = q.census_range("big", 0, 50, body=True)
    assert s.body == [bodies[i] for i in ids]
    assert s.size == [len(bodies[i].encode()) for i in ids]
    check_bounds(server)


def test_small_bodies_are_read_in_the_script_and_big_ones_are_not(
    server: EmbeddedRedis, big: tuple[RedisSMQ, dict[str, str]]
) -> None:
    """The split the bounds rest on: a body up to LUA_BODY_MAX comes in the script's
    reply, a longer one does not (false: the client reads it with a plain HGET)."""
    from queues import scripts as S

    _, bodies = big
    r = redis.Redis.from_url(server.url)
    for mid, body in list(bodies.items())[:4]:
        reply = r.eval(S.GET_MESSAGE.source, 2, "bounds:big", "bounds:big:Q", mid)
        assert reply[2] == len(body.encode())
        assert reply[3] == (body.encode() if len(body.encode()) <= LUA_BODY_MAX else None)
    r.close()


def test_searchers_leave_redis_to_other_clients(
    server: EmbeddedRedis, big: tuple[RedisSMQ, dict[str, str]]
) -> None:
    """Four viewer processes searching 8 MB bodies for 3 s: another client's PING stays quick
    (p90 under 100 ms on this shared machine; it was 762 ms when the script
    searched them) and no call takes
    over 50 ms."""
    p = redis.Redis.from_url(server.url)
    idle = []
    for _ in range(50):
        t0 = time.perf_counter()
        p.ping()
        idle.append((time.perf_counter() - t0) * 1000)
    slowlog(server)
    code = (
        "import sys, time\n"
        "from queues import RedisSMQ\n"
        "q = RedisSMQ(url=sys.argv[1], ns='bounds')\n"
        "n, end = 0, time.monotonic() + 3.0\n"
        "while time.monotonic() < end:\n"
        "    q.browse('big', contains=sys.argv[2], limit=50, preview=200)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    viewers = [
        subprocess.Popen(
            [sys.executable, "-c", code, server.url, NEEDLE], env=env, stdout=subprocess.PIPE
        )
        for _ in range(4)
    ]
    pings = []
    while any(v.poll() is None for v in viewers):
        t0 = time.perf_counter()
        p.ping()
        pings.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    searches = sum(int(v.communicate()[0]) for v in viewers)
    check_bounds(server)
    pings.sort()
    p90 = pings[int(0.9 * len(pings))]
    assert searches >= 4
    assert p90 < 100, (p90, statistics.median(idle))


def test_a_receive_reads_long_bodies_in_plain_hgets(server: EmbeddedRedis) -> None:
    """A receive hands out whole bodies, however long, and no script call copies more
    than MOVE_BYTES of them: long ones (and those past its room) are read with plain
    HGETs while the messages are in flight. A pop still reads them in its script (it
    deletes them there)."""
    q = RedisSMQ(url=server.url, ns="recv")
    q.create_queue("r", maxsize=-1)
    bodies = ["a" * MB8, "small", "é" * 20_000] + [f"{i:04d}" + "x" * 30_000 for i in range(60)]
    for b in bodies:
        q.send_message("r", b)
    q.create_queue("warm")
    q.send_message("warm", "w")
    q.receive_messages("warm", 1)  # its script loaded
    slowlog(server)
    got = q.receive_messages("r", 100, vt=600)
    assert [m.message for m in got] == bodies
    assert all(m.rc == 1 for m in got)
    check_bounds(server)
    q.send_message("r", "b" * MB8)
    popped = q.pop_message("r")
    assert popped is not None and popped.message == "b" * MB8
    q.close()


def test_a_batch_receive_past_the_scripts_room_reads_the_rest_in_hmgets(
    server: EmbeddedRedis,
) -> None:
    """A queue whose maxsize bounds its bodies (64 KB): the script reads them while its
    MOVE_BYTES room lasts, the rest come with plain HMGETs — all of them, in order."""
    q = RedisSMQ(url=server.url, ns="room")
    q.create_queue("r")  # maxsize 65536
    bodies = [f"{i:03d}" + "y" * 60_000 for i in range(40)]  # 2.4 MB in all
    q.send_messages("r", bodies)
    got = q.receive_messages("r", 100, vt=600)
    assert [m.message for m in got] == bodies
    q.close()
