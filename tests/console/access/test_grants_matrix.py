"""Grants on every surface: a user granted admin on ``billing-*`` of the test namespace
only, and an API token scoped the same way, on every page, API route, export, metric and
search. A queue out of scope (``other-a``, which exists and holds messages) answers as one
that does not exist (``other-zz``, never made: the same status, the same body once the
name and message id are swapped), and on the read surfaces as a missing queue in scope
(``billing-zz``) does; it is absent from every list, total, /metrics and the timeline; and
after every action tried on it, Redis holds its data byte for byte as before.

The routes come from the URL resolver and the API's route table: a route that no probe
below exercises fails ``test_every_route_is_in_the_matrix``, naming it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from dashboard.access import tokens
from dashboard.alerting import acks
from dashboard.api import routes
from dashboard.audit import log as audit
from dashboard.models import (
    Alert,
    AlertRule,
    Annotation,
    AuditEntry,
    BulkJob,
    Grant,
    Ownership,
    SavedFilter,
    Silence,
    UndoEntry,
)
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

SEEN, HIDDEN, GHOST, MISSING = "billing-a", "other-a", "other-zz", "billing-zz"
FAKE_ID = "0" * 32  # a message id of the right shape that no queue holds
NO_PK = 987654  # a row that does not exist


@dataclass
class World:
    """What the test namespace holds: queues in and out of the grants, a message of each,
    and one of every row a page can show about a queue (of the hidden queue: its rule,
    alert, silence, owner, annotation, saved filter, job, Undo and audit row)."""

    ns: str
    ids: dict[str, str] = field(default_factory=dict)  # queue -> a message of it
    pks: dict[str, int] = field(default_factory=dict)  # kind -> the hidden queue's row
    undo: str = ""
    token: str = ""
    as_of: str = ""  # "?as_of=" a moment between its two snapshot runs


@pytest.fixture
def world(console, rsmq: RedisSMQ, add_snapshot) -> World:
    w = World(console.ns)
    for q in (SEEN, "billing-b", HIDDEN):
        rsmq.create_queue(q)
        w.ids[q] = rsmq.send_messages(q, [f"{q} one", f"{q} two", f"{q} three"])[0]
    rsmq.receive_message(HIDDEN, vt=600)  # one in flight
    rsmq.set_dead_letter_policy(HIDDEN, "billing-b", 5)  # billing-b: its dead-letter queue
    rsmq.record_failure(HIDDEN, w.ids[HIDDEN], error_type="E")
    w.ids[GHOST] = w.ids[MISSING] = FAKE_ID
    # an Undo of the hidden queue: its third message deleted, kept
    w.undo = rsmq.open_undo("delete", HIDDEN)
    third = rsmq.list_messages(HIDDEN, "all").items[-1].id
    rsmq.delete_messages(HIDDEN, [third], keep=w.undo)
    UndoEntry.objects.create(
        token=w.undo, connection="default", namespace=w.ns, queue=HIDDEN, action="delete",
        count=1, expires=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    now = int(timezone.now().timestamp() * 1000)
    between = dt.datetime.fromtimestamp((now - 90_000) / 1000, tz=dt.UTC)
    w.as_of = "?as_of=" + between.strftime("%Y-%m-%dT%H:%M:%S")
    for q in (SEEN, "billing-b", HIDDEN):
        add_snapshot(q, now - 120_000, msgs=3, totalsent=3)
        add_snapshot(q, now - 60_000, msgs=3, totalsent=3)
    rule = AlertRule.objects.create(
        name="other backlog", connection="default", namespace=w.ns, queue=HIDDEN,
        metric="visible", threshold=1,
    )  # fmt: skip
    alert = Alert.objects.create(rule=rule, connection="default", namespace=w.ns, queue=HIDDEN,
                                 state="firing", value=3, since=1, changed=1)  # fmt: skip
    silence = Silence.objects.create(
        connection="default", namespace=w.ns, pattern="other-*", reason="deploy",
        created_by="root", ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    owner = Ownership.objects.create(connection="default", namespace=w.ns, queue=HIDDEN,
                                     owner="other-team")  # fmt: skip
    Annotation.objects.create(at=now - 30_000, connection="default", namespace=w.ns,
                              queue=HIDDEN, text="other deploy", created_by="root")  # fmt: skip
    root = User.objects.create_superuser("root")
    saved = SavedFilter.objects.create(connection="default", namespace=w.ns, queue=HIDDEN,
                                       name="others", query="state=all", owner=root,
                                       shared=True)  # fmt: skip
    job = BulkJob.objects.create(kind="delete", connection="default", namespace=w.ns,
                                 queue=HIDDEN, filter={"state": "all"}, username="root",
                                 state=BulkJob.State.COUNTED, matched=2)  # fmt: skip
    audit.write(("default", w.ns), "delete", AuditEntry.Outcome.OK, actor="root", queue=HIDDEN,
                detail="other-a's delete")  # fmt: skip
    w.pks = {"rule": rule.pk, "alert": alert.pk, "silence": silence.pk, "owner": owner.pk,
             "filter": saved.pk, "job": job.pk}  # fmt: skip
    w.token = acks.token(alert)
    return w


@pytest.fixture
def bill(login, world: World) -> Client:
    """Admin of billing-* of the test namespace, nothing else."""
    client = login("bill")
    Grant.objects.create(user=client.user, role="admin", connection="default",
                         namespace=world.ns, queues="billing-*")  # fmt: skip
    return client


@pytest.fixture
def bill_token(world: World) -> str:
    """An API token of the same scope."""
    _, made = tokens.mint("bill-token", "admin", "root", 100_000, connection="default",
                          namespace=world.ns, queues="billing-*")  # fmt: skip
    return made


# -- the probes ------------------------------------------------------------------------

Path = Callable[[World, str], str]  # (world, queue) -> the path
Data = Callable[[World, str], dict[str, Any]]


@dataclass(frozen=True)
class Probe:
    """One request about a queue: sent about the hidden queue and about the ghost (it
    must answer 404, the same both ways); ``natural``: a read that answers a missing
    queue in scope with the same 404 too."""

    method: str
    path: Path
    data: Data = lambda w, q: {}
    natural: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    json: bool = False
    status: int = 404  # what both answer (htmx's polls of a page that is gone: 204)


def page(suffix: str = "") -> Path:
    return lambda w, q: f"/c/default/{w.ns}/q/{q}/{suffix}"


def msg(suffix: str = "") -> Path:
    return lambda w, q: f"/c/default/{w.ns}/q/{q}/m/{w.ids[q]}/{suffix}"


def act(action: str, **extra: Any) -> Probe:
    return Probe("POST", page("act/"), lambda w, q: {"action": action, "ids": [w.ids[q]],
                                                     "confirm": q, **extra})  # fmt: skip


def msg_act(action: str, **extra: Any) -> Probe:
    return Probe("POST", msg("act/"), lambda w, q: {"action": action, **extra})


GROUP = {"type": "E", "state": "retry", "count": "1"}

#: every page about a queue, by its URL name: the requests that try it
QUEUE_PAGES: dict[str, list[Probe]] = {
    "rsmq-queue": [
        Probe("GET", page(), natural=True),
        Probe("GET", lambda w, q: page()(w, q) + "?state=inflight", natural=True),
        Probe("GET", lambda w, q: page()(w, q) + f"?id={w.ids[q]}", natural=True),
        Probe("GET", lambda w, q: page()(w, q) + w.as_of),  # the queue page "as of"
    ],
    "rsmq-queue-charts": [
        Probe(
            "GET", page("charts/"), headers={"HTTP_HX_REQUEST": "true"}, natural=True, status=204
        ),
    ],
    "rsmq-queue-action": [
        act("send", body="x"),
        act("requeue"),
        act("delete"),
        act("move", to=SEEN),
        act("redrive", to=SEEN),
        act("requeue_all", state="all", **{"all-confirm": "x"}),
        act("delete_all", state="all", **{"all-confirm": "x"}),
        act("edit", vt="60", delay="0", maxsize="-1"),
        act("policy", dlq=SEEN, maxrc="3"),
        act("purge", **{"purge-confirm": "x"}),
        act("delete_queue", **{"delete-confirm": "x"}),
        act("clean_orphans", **{"orphans-confirm": "x"}),
        act("clean_leftover", **{"leftover-confirm": "x"}),
        act("pause", reason="x"),
        act("throttle", rate="5"),
        act("resume"),
        Probe(
            "POST",
            page("act/"),
            lambda w, q: {"action": "undo", "undo-token": w.undo, "undo-confirm": "yes"},
        ),  # fmt: skip
        Probe(
            "POST",
            page("act/"),
            lambda w, q: {
                "action": "import",
                "file": SimpleUploadedFile("x.jsonl", b'{"body": "x"}'),
            },
        ),
    ],  # fmt: skip
    "rsmq-queue-failing": [Probe("GET", page("failing/"), natural=True)],
    "rsmq-failing-action": [
        Probe(
            "POST",
            page("failing/act/"),
            lambda w, q, a=a: {"action": a, "where": q, "confirm": q, **GROUP},
        )
        for a in ("retry_group", "delete_group")
    ],  # fmt: skip
    "rsmq-message": [Probe("GET", msg(), natural=True)],
    "rsmq-message-action": [
        msg_act("requeue"),
        msg_act("delete"),
        msg_act("move", to=SEEN),
        msg_act("visibility", vt="0"),
        msg_act("resend", body="fixed", to=SEEN),
    ],  # fmt: skip
    "rsmq-filter-save": [
        Probe("POST", page("filters/"), lambda w, q: {"name": "mine", "query": "state=all"})
    ],
    "rsmq-filter-delete": [
        Probe("POST", lambda w, q: page(f"filters/{w.pks['filter']}/delete/")(w, q))
    ],
    "rsmq-queue-triage": [
        Probe("POST", page("triage/"), lambda w, q: {"action": "expect", "idle": "idle"})
    ],
    "rsmq-queue-annotate": [Probe("POST", page("annotate/"), lambda w, q: {"text": "x"})],
    "rsmq-job-start": [
        Probe("POST", page("jobs/"), lambda w, q, k=k: {"kind": k, "state": "all", "to": SEEN})
        for k in ("delete", "requeue", "move", "redrive", "visibility", "shift")
    ],
    "rsmq-job": [Probe("GET", lambda w, q: page(f"jobs/{w.pks['job']}/")(w, q))],
    "rsmq-job-control": [
        Probe(
            "POST",
            lambda w, q, verb=verb: page(f"jobs/{w.pks['job']}/{verb}/")(w, q),
            lambda w, q: {"confirm": "2"},
        )
        for verb in ("confirm", "pause", "resume", "cancel")
    ],  # fmt: skip
    "rsmq-queue-export": [Probe("GET", page("export/"), natural=True)],
    "rsmq-reveal": [Probe("POST", page("reveal/"), lambda w, q: {"reason": "ticket 7"})],
}

#: the pages of no one queue, and what is tried there (test functions below)
OTHER_PAGES = {
    "rsmq-overview": "test_the_overview_lists_and_counts_only_what_is_granted",
    "rsmq-queue-create": "test_a_queue_out_of_scope_is_not_created",
    "rsmq-home": "test_home_goes_to_a_granted_place",
    "rsmq-audit": "test_lists_leave_the_hidden_queue_out",
    "rsmq-audit-export": "test_lists_leave_the_hidden_queue_out",
    "rsmq-alerts": "test_lists_leave_the_hidden_queue_out",
    "rsmq-incidents": "test_lists_leave_the_hidden_queue_out",
    "rsmq-owners": "test_lists_leave_the_hidden_queue_out",
    "rsmq-metrics": "test_metrics_leave_the_hidden_queue_out",
    "rsmq-alert-rule": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-alert-rule-delete": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-silence-expire": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-alert-ack": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-alert-ack-link": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-owner": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-owner-delete": "test_rows_about_the_hidden_queue_are_missing_rows",
    "rsmq-alert-rule-create": "test_console_wide_writes_out_of_scope_are_refused",
    "rsmq-silence-create": "test_console_wide_writes_out_of_scope_are_refused",
    "rsmq-annotate": "test_console_wide_writes_out_of_scope_are_refused",
    "rsmq-tokens": "test_console_wide_writes_out_of_scope_are_refused",
    "rsmq-redis": "test_console_wide_writes_out_of_scope_are_refused",
}
#: pages that show no queue's data
EXEMPT = {"login", "logout", "login-sso", "login-sso-callback", "rsmq-healthz", "rsmq-readyz",
          "rsmq-favicon", "rsmq-set-refresh"}  # fmt: skip


def api(path: str) -> Callable[[World, str], str]:
    return lambda w, q: (
        f"/api/c/default/{w.ns}"
        + path.format(qname=q, msg_id=w.ids[q], pk=w.pks["job"], verb="cancel", token=w.undo)
    )


def posted(path: str, body: dict[str, Any], natural: bool = False) -> Probe:
    """A JSON POST to the API; ``"{msg_id}"`` in the body: the queue's message."""

    def data(w: World, q: str) -> dict[str, Any]:
        made = json.dumps(body).replace("{msg_id}", w.ids[q])
        return dict(json.loads(made))

    return Probe("POST", api(path), data, json=True, natural=natural)


#: every API route, by its name in the route table: its requests (JSON bodies)
API_ROUTES: dict[str, list[Probe]] = {
    "list_queues": [],  # a list: test_the_session_on_the_read_api_lists_only_what_is_granted
    "rest_rsmq_list_queues": [],
    "create_annotation": [
        Probe(
            "POST",
            lambda w, q: f"/api/c/default/{w.ns}/annotations/",
            lambda w, q: {"text": "x", "queue": q},
            json=True,
        )
    ],  # fmt: skip
    "describe_queue": [Probe("GET", api("/queues/{qname}/"), natural=True)],
    "queue_failures": [Probe("GET", api("/queues/{qname}/failures/"), natural=True)],
    "queue_messages": [Probe("GET", api("/queues/{qname}/messages/"), natural=True)],
    "create_queue": [],  # test_a_queue_out_of_scope_is_not_created
    "delete_queue": [Probe("DELETE", api("/queues/{qname}/"))],
    "purge_queue": [Probe("POST", api("/queues/{qname}/purge/"))],
    "undo": [],  # no queue in its path: test_the_hidden_queues_undo_is_a_missing_one
    "send": [posted("/queues/{qname}/messages/", {"message": "x"}, natural=True)],
    "receive": [posted("/queues/{qname}/receive/", {}, natural=True)],
    "delete_message": [Probe("DELETE", api("/queues/{qname}/messages/{msg_id}/"))],
    "change_visibility": [posted("/queues/{qname}/messages/{msg_id}/visibility/", {"vt": 0})],
    "requeue": [posted("/queues/{qname}/requeue/", {"ids": ["{msg_id}"]})],
    "move": [posted("/queues/{qname}/move/", {"ids": ["{msg_id}"], "to": SEEN})],
    "resend_message": [
        posted("/queues/{qname}/messages/{msg_id}/resend/", {"message": "x", "to": SEEN})
    ],
    "export_messages": [Probe("GET", api("/queues/{qname}/export/"), natural=True)],
    "import_messages": [Probe("POST", api("/queues/{qname}/import/"))],
    "rest_rsmq_get_queue_attributes": [
        Probe("GET", api("/rest-rsmq/queues/{qname}"), natural=True)
    ],
    "rest_rsmq_create_queue": [],  # test_a_queue_out_of_scope_is_not_created
    "rest_rsmq_delete_queue": [Probe("DELETE", api("/rest-rsmq/queues/{qname}"))],
    "rest_rsmq_send_message": [
        posted("/rest-rsmq/messages/{qname}", {"message": "x"}, natural=True)
    ],
    "rest_rsmq_receive_message": [Probe("GET", api("/rest-rsmq/messages/{qname}"), natural=True)],
    "rest_rsmq_delete_message": [Probe("DELETE", api("/rest-rsmq/messages/{qname}/{msg_id}"))],
    "rest_rsmq_change_message_visibility": [
        Probe("PUT", lambda w, q: api("/rest-rsmq/message/{qname}/{msg_id}")(w, q) + "?vt=0")
    ],
    "rest_rsmq_change_message_visibility_plural": [
        Probe("PUT", lambda w, q: api("/rest-rsmq/messages/{qname}/{msg_id}")(w, q) + "?vt=0")
    ],
    "pause_queue": [posted("/queues/{qname}/pause/", {"reason": "x"})],
    "throttle_queue": [posted("/queues/{qname}/throttle/", {"rate": 5})],
    "resume_queue": [Probe("POST", api("/queues/{qname}/resume/"))],
    "queue_flow": [Probe("GET", api("/queues/{qname}/flow/"), natural=True)],
    "queue_due": [Probe("GET", api("/queues/{qname}/due/"), natural=True)],
    "job_start": [posted("/queues/{qname}/jobs/", {"kind": "delete", "state": "all"})],
    "job_read": [Probe("GET", api("/queues/{qname}/jobs/{pk}/"))],
    "job_control": [Probe("POST", api("/queues/{qname}/jobs/{pk}/{verb}/"))],
}


def _names(patterns: list[URLPattern | URLResolver], prefix: str = "") -> set[str]:
    found: set[str] = set()
    for p in patterns:
        if isinstance(p, URLResolver):
            if p.namespace in ("admin", "rsmq-api"):
                continue  # Django's admin (staff only); the API: its route table below
            found |= _names(p.url_patterns)
        elif p.name:
            found.add(p.name)
    return found


def test_every_route_is_in_the_matrix() -> None:
    pages = _names(get_resolver().url_patterns)
    covered = set(QUEUE_PAGES) | set(OTHER_PAGES) | EXEMPT
    assert not pages - covered, f"pages the grants matrix does not try: {sorted(pages - covered)}"
    assert not covered - pages, f"the matrix names pages that are gone: {sorted(covered - pages)}"
    table = {r.name for r in routes.TABLE}
    assert not table - set(API_ROUTES), (
        f"API routes the matrix does not try: {sorted(table - set(API_ROUTES))}"
    )
    assert not set(API_ROUTES) - table, sorted(set(API_ROUTES) - table)


# -- sending and comparing -------------------------------------------------------------

NOISE = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"'), 'name="csrfmiddlewaretoken"'),
    (re.compile(r'"x-csrftoken": "[^"]*"'), '"x-csrftoken"'),
    (re.compile(r'nonce="[^"]*"'), 'nonce=""'),
    # the banner of a stopped snapshot task counts the seconds
    (re.compile(r"Snapshots stopped [^<]* ago"), "Snapshots stopped a while ago"),
]


def send(client: Client, probe: Probe, w: World, q: str, token: str = "") -> tuple[int, str]:
    headers = dict(probe.headers)
    if token:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    path, data = probe.path(w, q), probe.data(w, q)
    if probe.json:
        response = client.generic(probe.method, path, json.dumps(data),
                                   content_type="application/json", **headers)  # fmt: skip
    elif probe.method == "POST":
        response = client.post(path, data, **headers)
    else:
        response = client.generic(probe.method, path, **headers)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = body.decode(errors="replace")
    for pattern, plain in NOISE:
        text = pattern.sub(plain, text)
    return response.status_code, text


def hidden_as(w: World, text: str, other: str) -> str:
    """The hidden queue's answer as the ``other`` queue's would read: names and ids swapped."""
    return text.replace(w.ids[HIDDEN], w.ids[other]).replace(HIDDEN, other)


def check(client: Client, probe: Probe, w: World, token: str = "") -> None:
    hidden = send(client, probe, w, HIDDEN, token)
    ghost = send(client, probe, w, GHOST, token)
    where = f"{probe.method} {probe.path(w, HIDDEN)}"
    assert hidden[0] == probe.status, f"{where}: {hidden[0]} {hidden[1][:300]}"
    same(where, hidden, ghost, hidden_as(w, hidden[1], GHOST))
    if probe.natural:
        missing = send(client, probe, w, MISSING, token)
        same(where, hidden, missing, hidden_as(w, hidden[1], MISSING))


def same(where: str, hidden: tuple[int, str], other: tuple[int, str], swapped: str) -> None:
    """The hidden queue's answer (``swapped``: its text, names swapped) is the other's."""
    diff = "\n".join(difflib.unified_diff(swapped.splitlines(), other[1].splitlines(),
                                            lineterm="", n=1))  # fmt: skip
    assert (hidden[0], swapped) == other, f"{where}: {hidden[0]} vs {other[0]}\n{diff[:2000]}"


@pytest.fixture
def hidden_state(world: World, ns_state) -> Callable[[], dict[str, Any]]:
    """Everything Redis holds of the queues out of scope (and whether they are queues)."""

    def read() -> dict[str, Any]:
        state = ns_state()
        out = {k: v for k, v in state.items() if ":other-" in k}
        queues = state.get(f"{world.ns}:QUEUES", ("set", []))[1]
        out["queues"] = sorted(q for q in queues if not q.startswith("billing-"))
        return out

    return read


# -- the matrix ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(QUEUE_PAGES))
def test_each_page_of_a_hidden_queue_is_a_missing_queue(
    bill: Client, world: World, hidden_state, name: str
) -> None:
    before = hidden_state()
    for probe in QUEUE_PAGES[name]:
        check(bill, probe, world)
    assert hidden_state() == before


@pytest.mark.parametrize("name", [n for n, probes in API_ROUTES.items() if probes])
def test_each_api_route_of_a_hidden_queue_is_a_missing_queue(
    bill: Client, bill_token: str, world: World, hidden_state, name: str
) -> None:
    before = hidden_state()
    (route,) = [r for r in routes.TABLE if r.name == name]
    for probe in API_ROUTES[name]:
        check(Client(), probe, world, bill_token)
        if route.action is None:  # a read: for a session too
            check(bill, probe, world)
    assert hidden_state() == before


def test_the_hidden_queues_undo_is_a_missing_one(
    bill_token: str, world: World, hidden_state
) -> None:
    before = hidden_state()
    url = f"/api/c/default/{world.ns}/undo/"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {bill_token}"}
    hidden = Client().post(url + f"{world.undo}/", **auth)
    missing = Client().post(url + f"{'f' * 32}/", **auth)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"].replace(world.undo, "f" * 32) == missing.json()["error"]
    assert hidden_state() == before


def test_a_queue_out_of_scope_is_not_created(
    bill: Client, bill_token: str, world: World, hidden_state, rsmq: RedisSMQ
) -> None:
    before = hidden_state()
    create = f"/c/default/{world.ns}/create/"
    form = {"name": "other-new", "vt": "30", "delay": "0", "maxsize": "65536"}
    assert bill.post(create, form).status_code == 404
    auth = {"HTTP_AUTHORIZATION": f"Bearer {bill_token}"}
    base = f"/api/c/default/{world.ns}"
    assert Client().put(f"{base}/queues/other-new/", "{}", content_type="application/json",
                        **auth).status_code == 404  # fmt: skip
    assert Client().post(f"{base}/rest-rsmq/queues/other-new", "{}",
                         content_type="application/json", **auth).status_code == 404  # fmt: skip
    assert "other-new" not in rsmq.list_queues()
    assert hidden_state() == before
    # in scope, it is made
    assert bill.post(create, {**form, "name": "billing-new"}).status_code == 302
    assert "billing-new" in rsmq.list_queues()


def _shown_names(text: str) -> set[str]:
    return set(re.findall(r"(?:other|billing)-[a-z]+", text))


def test_the_overview_lists_and_counts_only_what_is_granted(bill: Client, world: World) -> None:
    base = f"/c/default/{world.ns}/"
    response = bill.get(base)
    assert response.status_code == 200
    assert _shown_names(response.content.decode()) == {SEEN, "billing-b"}
    totals = response.context["totals"]
    assert (totals["queues"], totals["msgs"]) == (2, 6)
    for query in ("?q=other", "?q=a", "?sort=name", "?sort=-msgs", "?leftovers=1"):
        text = bill.get(base + query).content.decode()
        assert HIDDEN not in text, query
    as_of = bill.get(base + world.as_of)
    assert as_of.status_code == 200
    assert _shown_names(as_of.content.decode()) <= {SEEN, "billing-b"}
    assert as_of.context["totals"]["queues"] == 2


def test_home_goes_to_a_granted_place(bill: Client, world: World) -> None:
    response = bill.get("/")
    assert response.status_code == 302
    assert response["Location"] == f"/c/default/{world.ns}/"


def test_places_out_of_scope_are_not_offered(bill: Client, world: World, settings) -> None:
    settings.RSMQ_CONNECTIONS = [
        {**settings.RSMQ_CONNECTIONS[0], "namespaces": [world.ns, "secret-ns"]}
    ]
    for url in (f"/c/default/{world.ns}/", "/incidents/", "/alerts/", "/owners/", "/alerts/new/"):
        response = bill.get(url)
        assert response.status_code == 200, url
        assert "secret-ns" not in response.content.decode(), url
    assert bill.get("/c/default/secret-ns/").status_code == 404
    assert bill.get("/c/default/nowhere/").status_code == 404


def test_lists_leave_the_hidden_queue_out(bill: Client, world: World) -> None:
    for url in ("/audit/", "/audit/export/", "/alerts/", "/incidents/",
                "/incidents/?format=json", "/incidents/?format=csv", "/owners/"):  # fmt: skip
        response = bill.get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode()
        assert HIDDEN not in text and "other-" not in text, url


def test_a_dead_letter_queue_out_of_scope_is_not_named(
    bill: Client, world: World, rsmq: RedisSMQ
) -> None:
    """billing-a dead-letters into the hidden queue: its page, its Failing view and the
    overview say it has one, never which."""
    rsmq.set_dead_letter_policy(SEEN, HIDDEN, 3)
    rsmq.record_failure(SEEN, world.ids[SEEN], error_type="E")
    for url in (f"/c/default/{world.ns}/q/{SEEN}/", f"/c/default/{world.ns}/q/{SEEN}/failing/",
                f"/c/default/{world.ns}/"):  # fmt: skip
        text = bill.get(url).content.decode()
        assert HIDDEN not in text, url
    assert (
        "a dead-letter queue your grants do not cover"
        in bill.get(f"/c/default/{world.ns}/q/{SEEN}/").content.decode()
    )


def test_the_session_on_the_read_api_lists_only_what_is_granted(
    bill: Client, bill_token: str, world: World
) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {bill_token}"}
    base = f"/api/c/default/{world.ns}"
    for client, headers in ((bill, {}), (Client(), auth)):
        listed = client.get(f"{base}/queues/", **headers).json()["queues"]
        assert {q["name"] for q in listed} == {SEEN, "billing-b"}
        assert set(client.get(f"{base}/rest-rsmq/queues", **headers).json()["queues"]) == {
            SEEN, "billing-b"
        }  # fmt: skip


def test_metrics_leave_the_hidden_queue_out(bill: Client, bill_token: str, world: World) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {bill_token}"}
    for client, headers in ((bill, {}), (Client(), auth)):
        response = client.get("/metrics", **headers)
        assert response.status_code == 200
        text = b"".join(response.streaming_content).decode()
        assert f'queue="{SEEN}"' in text
        assert "other-" not in text


def _rows() -> list[list[dict[str, Any]]]:
    return [list(m.objects.order_by("pk").values()) for m in (Alert, AlertRule, Silence, Ownership)]


def test_a_dead_letter_queue_in_scope_names_no_source_out_of_it(bill: Client, world: World) -> None:
    for suffix in ("", "failing/"):
        response = bill.get(f"/c/default/{world.ns}/q/billing-b/{suffix}")
        assert response.status_code == 200
        assert HIDDEN not in response.content.decode(), suffix


def test_rows_about_the_hidden_queue_are_missing_rows(bill: Client, world: World) -> None:
    p = world.pks
    before = _rows()
    tries = [
        ("GET", "/alerts/{}/", p["rule"]), ("POST", "/alerts/{}/", p["rule"]),
        ("POST", "/alerts/{}/delete/", p["rule"]),
        ("POST", "/alerts/silences/{}/expire/", p["silence"]),
        ("POST", "/alerts/ack/{}/", p["alert"]), ("GET", "/owners/{}/", p["owner"]),
        ("POST", "/owners/{}/", p["owner"]), ("POST", "/owners/{}/delete/", p["owner"]),
    ]  # fmt: skip
    for method, url, pk in tries:
        here, there = url.format(pk), url.format(NO_PK)
        hidden = send(bill, Probe(method, lambda w, q, at=here: at), world, "")
        missing = send(bill, Probe(method, lambda w, q, at=there: at), world, "")
        assert hidden[0] == missing[0] == 404, url
        assert hidden[1].replace(here, there) == missing[1], url
    for method in ("GET", "POST"):
        assert bill.generic(method, f"/alerts/ack/link/{world.token}/").status_code == 404
    assert _rows() == before


def test_console_wide_writes_out_of_scope_are_refused(
    bill: Client, bill_token: str, world: World
) -> None:
    place = f"default/{world.ns}"
    rule = {"name": "mine", "place": place, "queue": HIDDEN, "pattern": "", "metric": "visible",
            "op": "gt", "threshold": "1", "for_seconds": "60", "enabled": "on",
            "webhook_url": "", "slack_url": "", "emails": "ops@example.com"}  # fmt: skip
    assert bill.post("/alerts/new/", rule).status_code == 404
    assert bill.post("/alerts/new/", {**rule, "queue": "", "pattern": "other-*"}).status_code == 403
    assert bill.post("/alerts/new/", {**rule, "queue": "", "pattern": "*"}).status_code == 403
    assert not AlertRule.objects.filter(name="mine").exists()
    assert bill.post("/alerts/new/", {**rule, "queue": SEEN}).status_code == 302
    silence = {"place": place, "pattern": "other-*", "reason": "x", "hours": "1"}
    assert bill.post("/alerts/silences/", silence).status_code == 403
    assert bill.post("/alerts/silences/", {**silence, "pattern": ""}).status_code == 403
    assert Silence.objects.count() == 1
    note = {"place": place, "queue": HIDDEN, "text": "mine"}
    assert bill.post("/incidents/annotate/", note).status_code == 404
    whole = {"place": place, "queue": "", "pattern": "", "text": "mine"}  # every queue
    assert bill.post("/incidents/annotate/", whole).status_code == 403
    api = f"/api/c/default/{world.ns}/annotations/"
    token = Client(HTTP_AUTHORIZATION=f"Bearer {bill_token}")
    assert token.post(api, {"text": "mine"}, content_type="application/json").status_code == 403
    assert not Annotation.objects.filter(text="mine").exists()
    assert bill.post("/incidents/annotate/", {**whole, "pattern": "billing-*"}).status_code == 302
    assert bill.get("/tokens/").status_code == 403  # a token may reach any queue
    assert bill.get("/redis/default/").status_code == 404  # its slow log names keys


def test_an_operator_of_a_queue_is_refused_its_admin_actions(
    login, world: World, rsmq: RedisSMQ
) -> None:
    """A queue one may see but not act on gets the 403 of a missing role, as before."""
    otto = login("otto-billing")
    Grant.objects.create(user=otto.user, role="viewer", connection="default",
                         namespace=world.ns, queues="billing-*")  # fmt: skip
    Grant.objects.create(user=otto.user, role="operator", connection="default",
                         namespace=world.ns, queues="billing-a")  # fmt: skip
    url = f"/c/default/{world.ns}/q/"
    assert (
        otto.post(url + f"{SEEN}/act/", {"action": "purge", "purge-confirm": SEEN}).status_code
        == 403
    )
    assert otto.post(url + "billing-b/act/", {"action": "send", "body": "x"}).status_code == 403
    assert otto.post(url + f"{SEEN}/act/", {"action": "send", "body": "x"}).status_code == 302
    assert otto.get(url + f"{HIDDEN}/").status_code == 404
    assert rsmq.get_queue_attributes(SEEN).msgs == 4
