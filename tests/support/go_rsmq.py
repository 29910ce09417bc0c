"""go-rsmq's writes (github.com/ebuckley/rsmq, ``q/rsmq.go`` and ``q/scripts.go``: the Go
port the seed posts 000/001 describe), replayed with raw redis-py: the same commands, in
the same order, with the same values. No Go toolchain builds here (``which go``: none),
so this is how the console meets a Go service's data.

What the console must read as it is: ``created`` / ``modified`` as RFC 3339 text (go-redis
formats the ``time.Time`` of ``TIME`` with ``time.RFC3339Nano``), an extra ``createdby``
field, message ids of 22 random characters with no time in them, scores in epoch ms;
and what it leaves behind: deleteMessage keeps the body field, deleteQueue the ``:Q`` hash.
"""

from __future__ import annotations

import datetime as dt
import secrets
import string

import redis

LETTERS = string.ascii_lowercase + string.ascii_uppercase + string.digits  # makeUID's


def _time(r: redis.Redis) -> dt.datetime:
    sec, usec = r.time()
    return dt.datetime.fromtimestamp(sec + usec / 1e6, dt.UTC)


def rfc3339nano(at: dt.datetime) -> str:
    """Go's ``t.Format(time.RFC3339Nano)`` of a UTC time: trailing zeros of the fraction
    dropped (none at all when it is 0), ``Z`` for UTC."""
    text = at.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{at.microsecond:06d}".rstrip("0")
    return text + ("." + fraction if fraction else "") + "Z"


def make_uid(n: int = 22) -> str:
    return "".join(secrets.choice(LETTERS) for _ in range(n))


class GoRsmq:
    """One go-rsmq ``RedisSMQ`` (``q.New``) on a namespace, by its commands."""

    def __init__(self, r: redis.Redis, ns: str) -> None:
        self.r = r
        self.ns = ns

    def create_queue(self, qname: str) -> None:
        """CreateQueue: TIME, then HMSET of the attributes (created / modified the
        ``time.Time`` TIME returned), then SADD to the queue set."""
        now = rfc3339nano(_time(self.r))
        key = f"{self.ns}:{qname}:Q"
        self.r.hset(key, mapping={"createdby": "ersin", "vt": 30, "delay": 0,
                                  "maxsize": 65536, "created": now, "modified": now})  # fmt: skip
        self.r.sadd(f"{self.ns}:QUEUES", qname)

    def _queue(self, qname: str) -> tuple[dt.datetime, list[bytes | None]]:
        """getQueue: TIME and HMGET vt delay maxsize in one pipeline."""
        p = self.r.pipeline(transaction=False)
        p.time()
        p.hmget(f"{self.ns}:{qname}:Q", "vt", "delay", "maxsize")
        (sec, usec), attrs = p.execute()
        return dt.datetime.fromtimestamp(sec + usec / 1e6, dt.UTC), attrs

    def send_message(self, qname: str, message: str) -> str:
        """SendMessage: getQueue, then ZADD (score: the send time in ms plus ``delay``
        *milliseconds*, as the port computes it), HSET of the body, HINCRBY totalsent."""
        sent, attrs = self._queue(qname)
        uid = make_uid(22)
        delay = int(attrs[1] or 0)
        score = int((sent + dt.timedelta(milliseconds=delay)).timestamp() * 1000)
        key = f"{self.ns}:{qname}"
        p = self.r.pipeline(transaction=False)
        p.zadd(key, {uid: score})
        p.hset(key + ":Q", uid, message)
        p.hincrby(key + ":Q", "totalsent", 1)
        p.execute()
        return uid

    def receive_message(self, qname: str, vt: int | None = None) -> tuple[str, str] | None:
        """ReceiveMessage: getQueue, then its receive script's commands (ZRANGEBYSCORE
        -inf..now LIMIT 0 1, ZADD at now + vt, HINCRBY totalrecv, HGET the body, HINCRBY
        rc, HSET fr on the first receive), run here in one MULTI for the same effect."""
        sent, attrs = self._queue(qname)
        now = int(sent.timestamp() * 1000)
        until = int((sent + dt.timedelta(seconds=vt or int(attrs[0] or 30))).timestamp() * 1000)
        key = f"{self.ns}:{qname}"
        got = self.r.zrangebyscore(key, "-inf", now, start=0, num=1)
        if not got:
            return None
        mid = got[0]
        p = self.r.pipeline(transaction=True)
        p.zadd(key, {mid: until})
        p.hincrby(key + ":Q", "totalrecv", 1)
        p.hget(key + ":Q", mid)
        p.hincrby(key + ":Q", mid + b":rc", 1)
        _, _, body, rc = p.execute()
        if rc == 1:
            self.r.hset(key + ":Q", mid + b":fr", now)
        return mid.decode(), body.decode()

    def delete_message(self, qname: str, mid: str) -> None:
        """DeleteMessage: ZREM, then HDEL of ``<id>:rc`` and ``<id>:fr`` only — the body
        field ``<id>`` stays behind (an orphan)."""
        key = f"{self.ns}:{qname}"
        p = self.r.pipeline(transaction=False)
        p.zrem(key, mid)
        p.hdel(key + ":Q", mid + ":rc", mid + ":fr")
        p.execute()

    def delete_queue(self, qname: str) -> None:
        """DeleteQueue: DEL of the zset and SREM of the name — the ``:Q`` hash stays."""
        p = self.r.pipeline(transaction=False)
        p.delete(f"{self.ns}:{qname}")
        p.srem(f"{self.ns}:QUEUES", qname)
        p.execute()
