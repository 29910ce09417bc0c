"""Whether a Redis can lose RSMQ data without a word: its health, read-only.

``read_health(client)`` is one round trip of bounded commands — ``INFO`` (the default
sections), ``CONFIG GET save`` and ``SLOWLOG GET 10`` — and changes nothing on the
server. A managed Redis may refuse ``CONFIG`` or ``SLOWLOG`` (renamed commands, ACLs):
the reading then says so (``config_refused``, ``slowlog_refused``) and rests on INFO's
fields alone.

``risks(health, now, ...)`` is why RSMQ data could be lost silently, in words:

* an eviction policy other than ``noeviction`` (Redis deletes keys — queues, messages —
  when memory runs out, instead of refusing writes);
* persistence off (no AOF, no RDB schedule), or the last RDB save old while changes wait
  to be saved, or the last background save / AOF write failed;
* memory used over a share (80 %) of ``maxmemory``;
* keys evicted since the server started.

No Django here: the console caches readings and turns them into a banner, a page,
Prometheus gauges and alert values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis

#: the slow log entries read (SLOWLOG GET's count: bounded whatever the server keeps)
SLOWLOG_ENTRIES = 10
#: characters of a slow command shown (its arguments may be whole messages)
COMMAND_CHARS = 200
ARG_CHARS = 60


@dataclass(frozen=True, slots=True)
class SlowEntry:
    id: int
    started: int  # epoch s
    micros: int
    command: str  # its words, each cut to ARG_CHARS, the whole to COMMAND_CHARS
    client: str


@dataclass(frozen=True, slots=True)
class Replica:
    address: str
    state: str
    lag: int | None  # s


@dataclass(frozen=True, slots=True)
class Risk:
    code: str  # eviction_policy | persistence_off | save_old | save_failed | aof_failing
    #          | memory_high | evicted
    text: str


@dataclass(frozen=True, slots=True)
class RedisHealth:
    """One reading of a Redis server's INFO, ``save`` setting and slow log."""

    read_at: float  # epoch s, the server's clock when it says (else ours)
    version: str
    mode: str  # standalone | cluster | sentinel
    uptime: int  # s
    used_memory: int  # bytes
    maxmemory: int  # bytes; 0: no limit
    maxmemory_policy: str
    evicted_keys: int
    aof_enabled: bool
    aof_last_write_status: str
    aof_last_bgrewrite_status: str
    save: str | None  # the RDB schedule ("" none); None: CONFIG refused
    rdb_last_save_time: int  # epoch s
    rdb_changes_since_last_save: int
    rdb_last_bgsave_status: str
    connected_clients: int
    blocked_clients: int
    role: str  # master | slave
    master_link: str  # a replica's master_host:port (status)
    replicas: tuple[Replica, ...]
    slowlog: tuple[SlowEntry, ...] | None  # None: SLOWLOG refused
    config_refused: str = ""  # the server's answer to CONFIG GET, when it refused
    slowlog_refused: str = ""

    @property
    def memory_ratio(self) -> float | None:
        """Used memory over maxmemory; None without a limit."""
        return self.used_memory / self.maxmemory if self.maxmemory > 0 else None

    @property
    def persistence(self) -> bool | None:
        """AOF on or an RDB schedule set; None: no AOF, and the schedule is unknown."""
        if self.aof_enabled:
            return True
        if self.save is None:
            return None
        return bool(self.save.strip())

    @property
    def last_save_age(self) -> float:
        return max(0.0, self.read_at - self.rdb_last_save_time)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _int(info: dict[str, Any], key: str, default: int = 0) -> int:
    try:
        return int(info.get(key, default))
    except (TypeError, ValueError):
        return default


def _refusal(reply: Any) -> str:
    return _text(reply.args[0] if reply.args else reply) if isinstance(reply, Exception) else ""


def _slow(entry: Any) -> SlowEntry | None:
    """One SLOWLOG GET entry: [id, time, micros, [args...], client, name]; None if odd."""
    try:
        words = []
        for arg in entry[3]:
            word = _text(arg)
            words.append(word if len(word) <= ARG_CHARS else word[: ARG_CHARS - 1] + "…")
        command = " ".join(words)
        if len(command) > COMMAND_CHARS:
            command = command[: COMMAND_CHARS - 1] + "…"
        client = _text(entry[4]) if len(entry) > 4 else ""
        return SlowEntry(int(entry[0]), int(entry[1]), int(entry[2]), command, client)
    except (TypeError, ValueError, IndexError):
        return None


def _replicas(info: dict[str, Any]) -> tuple[Replica, ...]:
    out = []
    for i in range(min(_int(info, "connected_slaves"), 64)):
        r = info.get(f"slave{i}")
        if isinstance(r, dict):
            lag = r.get("lag")
            out.append(
                Replica(
                    f"{_text(r.get('ip'))}:{_text(r.get('port'))}",
                    _text(r.get("state")),
                    int(lag) if isinstance(lag, int) else None,
                )
            )
    return tuple(out)


def read_health(client: redis.Redis) -> RedisHealth:
    """The server's health in one round trip of bounded, read-only commands."""
    pipe: Any = client.pipeline(transaction=False)  # redis-py's execute_command is untyped
    pipe.info()
    pipe.execute_command("CONFIG", "GET", "save")
    pipe.execute_command("SLOWLOG", "GET", SLOWLOG_ENTRIES)
    info_reply, config_reply, slow_reply = pipe.execute(raise_on_error=False)
    if isinstance(info_reply, Exception):
        raise info_reply
    info: dict[str, Any] = info_reply if isinstance(info_reply, dict) else {}
    save: str | None = None
    if isinstance(config_reply, dict):
        save = _text(config_reply.get("save", config_reply.get(b"save")))
    elif isinstance(config_reply, list) and len(config_reply) >= 2:
        save = _text(config_reply[1])
    slowlog: tuple[SlowEntry, ...] | None = None
    if isinstance(slow_reply, list):
        slowlog = tuple(e for e in map(_slow, slow_reply[:SLOWLOG_ENTRIES]) if e is not None)
    usec = _int(info, "server_time_usec")
    master_link = ""
    if _text(info.get("role")) == "slave":
        master_link = (
            f"{_text(info.get('master_host'))}:{_text(info.get('master_port'))}"
            f" ({_text(info.get('master_link_status'))})"
        )
    return RedisHealth(
        read_at=usec / 1e6 if usec else time.time(),
        version=_text(info.get("redis_version")),
        mode=_text(info.get("redis_mode")) or "standalone",
        uptime=_int(info, "uptime_in_seconds"),
        used_memory=_int(info, "used_memory"),
        maxmemory=_int(info, "maxmemory"),
        maxmemory_policy=_text(info.get("maxmemory_policy")),
        evicted_keys=_int(info, "evicted_keys"),
        aof_enabled=_int(info, "aof_enabled") == 1,
        aof_last_write_status=_text(info.get("aof_last_write_status")) or "ok",
        aof_last_bgrewrite_status=_text(info.get("aof_last_bgrewrite_status")) or "ok",
        save=save,
        rdb_last_save_time=_int(info, "rdb_last_save_time"),
        rdb_changes_since_last_save=_int(info, "rdb_changes_since_last_save"),
        rdb_last_bgsave_status=_text(info.get("rdb_last_bgsave_status")) or "ok",
        connected_clients=_int(info, "connected_clients"),
        blocked_clients=_int(info, "blocked_clients"),
        role=_text(info.get("role")) or "master",
        master_link=master_link,
        replicas=_replicas(info),
        slowlog=slowlog,
        config_refused=_refusal(config_reply) if save is None else "",
        slowlog_refused=_refusal(slow_reply) if slowlog is None else "",
    )


def _ago(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def risks(h: RedisHealth, save_age_limit: float, memory_share: float = 0.8) -> list[Risk]:
    """Why RSMQ data on this server could be lost without a word ([]: it can't, as far as
    the reading tells)."""
    out: list[Risk] = []
    if h.maxmemory_policy and h.maxmemory_policy != "noeviction":
        out.append(
            Risk(
                "eviction_policy",
                f"maxmemory-policy is {h.maxmemory_policy}: when memory runs out Redis deletes"
                " keys (queues, messages) instead of refusing writes; set noeviction",
            )
        )
    if h.persistence is False:
        out.append(
            Risk(
                "persistence_off",
                "persistence is off (no AOF, no RDB save schedule): a restart loses every message",
            )
        )
    elif not h.aof_enabled and h.rdb_changes_since_last_save > 0:
        age = h.last_save_age
        if age > save_age_limit:
            out.append(
                Risk(
                    "save_old",
                    f"last save {_ago(age)} ago with {h.rdb_changes_since_last_save:,} changes"
                    " unsaved, and no AOF: a restart loses them",
                )
            )
    if h.rdb_last_bgsave_status != "ok":
        out.append(Risk("save_failed", "the last background save (BGSAVE) failed"))
    if h.aof_enabled and (h.aof_last_write_status, h.aof_last_bgrewrite_status) != ("ok", "ok"):
        out.append(Risk("aof_failing", "writes to the append-only file (AOF) are failing"))
    ratio = h.memory_ratio
    if ratio is not None and ratio > memory_share:
        out.append(
            Risk(
                "memory_high",
                f"memory {_bytes(h.used_memory)} of maxmemory {_bytes(h.maxmemory)}"
                f" ({ratio:.0%}, over {memory_share:.0%})",
            )
        )
    if h.evicted_keys > 0:
        out.append(
            Risk(
                "evicted",
                f"{h.evicted_keys:,} keys evicted since Redis started: RSMQ data may be gone",
            )
        )
    return out
