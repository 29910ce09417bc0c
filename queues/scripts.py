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


def _read(name: str) -> str:
    return (_DIR / f"{name}.lua").read_text(encoding="utf-8")


def _load(name: str) -> Script:
    source = (_read("_prelude") + "\n" + _read(name)).encode()
    return Script(name, source, hashlib.sha1(source).hexdigest())


def _audited(name: str) -> Script:
    """Script ``name`` that also writes its audit record (scripts/_audited.lua), and may
    count the API token's call first (scripts/_audited_head.lua): its own keys and
    arguments are taken off the end of KEYS and ARGV before the operation's part runs,
    so that part is unchanged."""
    source = (
        _read("_prelude")
        + "\n"
        + _read("_audited_head")
        + "local function __op()\n"
        + _read(name)
        + "\nend\n"
        + _read("_audited")
    ).encode()
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
ACT_CHECKED = _load("act_checked")
COUNT_PRESENT = _load("count_present")
BROWSE = _load("browse")
BULK = _load("bulk")
POLICY = _load("policy")
REDRIVE = _load("redrive")
DLQ_SOURCES = _load("dlq_sources")
CENSUS = _load("census")
RECORD_FAILURE = _load("record_failure")
FAILURE_SCAN = _load("failure_scan")
FAILURE_HISTORY = _load("failure_history")
REDRIVE_IDS = _load("redrive_ids")
IMPORT = _load("import")
RESEND = _load("resend")
API_RATE = _load("api_rate")
AUDIT_ACK = _load("audit_ack")

#: the data-plane scripts an API call runs with its audit record (ops/console_api.py's audited)
AUDITED = {s.name: _audited(s.name) for s in (SEND, RECEIVE, DELETE, CHANGE_VISIBILITY)}
WORKER_BEAT = _load("worker_beat")
WORKERS = _load("workers")
ORPHANS = _load("orphans")
LEFTOVER = _load("leftover")
TIMINGS_RECORD = _load("timings_record")
WAIT_SCAN = _load("wait_scan")
#: undo stashes (queues/ops/undo.py)
UNDO_OPEN = _load("undo_open")
UNDO_DRAIN = _load("undo_drain")
UNDO_RESTORE = _load("undo_restore")
UNDO_SIZE = _load("undo_size")
UNDO_DISCARD = _load("undo_discard")
#: pause / throttle, and what is coming due (queues/ops/flow.py)
FLOW_SET = _load("flow_set")
FLOW_CLEAR = _load("flow_clear")
FLOW_READ = _load("flow_read")
FLOW_INDEX = _load("flow_index")
DUE = _load("due")
DUE_STORE = _load("due_store")
RESCHEDULE = _load("reschedule")
