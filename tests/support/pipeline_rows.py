"""Rows for the pipeline's tests, built by hand: instants in UTC on 2026-11-21 and lake
snapshots of connection "c", namespace "n"."""

from __future__ import annotations

import datetime as dt

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    """``at("10:00:30")`` on 2026-11-21, or ``at("2026-11-22 00:00:10")``: UTC."""
    if " " not in text:
        text = f"2026-11-21 {text}"
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def ms(text: str) -> int:
    return round(at(text).timestamp() * 1000)


def utc(value: dt.datetime | None) -> dt.datetime | None:
    """A timestamp Spark handed back (naive, in this machine's time zone) in UTC."""
    return value.astimezone(UTC) if value is not None else None


def snap(time: str, sent: int, recv: int, queue: str = "q1", **counts: object) -> tuple:
    """A lake row (pipeline.lake.SCHEMA's order); the counts default to 0, the oldest
    age to None, created to 1."""
    c: dict[str, object] = {
        "msgs": 0, "hiddenmsgs": 0, "inflight": 0, "delayed": 0, "oldest_age": None,
        "created": 1, "connection": "c", "namespace": "n", **counts,
    }  # fmt: skip
    return (
        c["connection"], c["namespace"], queue, at(time), c["msgs"], c["hiddenmsgs"],
        c["inflight"], c["delayed"], sent, recv, c["oldest_age"], c["created"],
        *[None] * 10,  # the wait and processing times, the slow waits: none
    )  # fmt: skip
