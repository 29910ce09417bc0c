"""The Lua scripts, one file each under scripts/, each prefixed by scripts/_prelude.lua."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files

# Read as package data, not by path: the same code runs from a zip (the copy of queues/
# that Spark ships to its executors) as from a checkout or an installed wheel.
_DIR = files(__package__ or "queues") / "scripts"


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: bytes
    sha: str


def _load(name: str) -> Script:
    prelude = (_DIR / "_prelude.lua").read_text(encoding="utf-8")
    source = (prelude + "\n" + (_DIR / f"{name}.lua").read_text(encoding="utf-8")).encode()
    return Script(name, source, hashlib.sha1(source).hexdigest())


CREATE_QUEUE = _load("create_queue")
DELETE_QUEUE = _load("delete_queue")
GET_QUEUE_ATTRIBUTES = _load("get_queue_attributes")
SET_QUEUE_ATTRIBUTES = _load("set_queue_attributes")
SEND = _load("send")
RECEIVE = _load("receive")
CHANGE_VISIBILITY = _load("change_visibility")
DELETE = _load("delete")
DELETE_MEMBERS = _load("delete_members")
STATS = _load("stats")
GET_MESSAGE = _load("get_message")
REQUEUE = _load("requeue")
PURGE_DETACH = _load("purge_detach")
PURGE_DRAIN = _load("purge_drain")
MOVE = _load("move")
BROWSE = _load("browse")
BULK = _load("bulk")
POLICY = _load("policy")
REDRIVE = _load("redrive")
DLQ_SOURCES = _load("dlq_sources")
CENSUS = _load("census")
RECORD_FAILURE = _load("record_failure")
FAILURE_SCAN = _load("failure_scan")
FAILURE_HISTORY = _load("failure_history")
TIMINGS_RECORD = _load("timings_record")
WAIT_SCAN = _load("wait_scan")
