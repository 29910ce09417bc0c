"""Export and import from the queue page: Export streams the JSON Lines of the page's
filter (message_filter.checked: a bad field is a 400 naming it), audited; Import (an
operator's) checks every line first (a bad one is the form's error, by line number,
nothing written), writes in atomic batches and reports exactly what it wrote."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import StreamingHttpResponse
from django.test import Client

from dashboard.acting.exports import EXPORT_CHUNK, IMPORT_MAX_BYTES
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> dict[str, list[str]]:
    """q1: 2 in flight (received once), 3 visible, 1 delayed by an hour; an empty q2."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    inflight = rsmq.send_messages("q1", ["a", "b"])
    rsmq.receive_messages("q1", 2, vt=600)
    visible = rsmq.send_messages("q1", ['{"n": 1}', '{"n": 2}', "plain ünïcode\u2028x"])
    delayed = [rsmq.send_message("q1", "later", delay=3600)]
    return {"visible": visible, "inflight": inflight, "delayed": delayed}


def export_url(console, qname: str = "q1", query: str = "") -> str:
    return console.queue(qname, "export/") + query


def lines(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    data = b"".join(response.streaming_content)
    return [json.loads(line) for line in data.split(b"\n") if line]


def test_a_viewer_exports_a_state_streamed_and_audited(console, q1, viewer: Client) -> None:
    response = viewer.get(export_url(console, query="?state=visible"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == 'attachment; filename="q1-visible.jsonl"'
    assert not response.has_header("Content-Length")
    got = lines(response)
    assert [g["id"] for g in got] == q1["visible"]
    assert [g["body"] for g in got] == ['{"n": 1}', '{"n": 2}', "plain ünïcode\u2028x"]
    assert set(got[0]) >= {"id", "body", "rc", "fr", "sent", "visible_at"}
    row = AuditEntry.objects.get()
    # the default masking rules name every queue: a viewer's export is masked, and says so
    assert (row.action, row.outcome, row.queue, row.params, row.count) == (
        "export", "ok", "q1", {"state": "visible", "bodies": "masked"}, 3
    )  # fmt: skip


def test_it_exports_a_filters_matches(console, q1, viewer: Client) -> None:
    got = lines(viewer.get(export_url(console, query="?rc=1")))
    assert [g["id"] for g in got] == q1["inflight"]
    got = lines(viewer.get(export_url(console, query="?search=%22n%22")))
    assert [g["body"] for g in got] == ['{"n": 1}', '{"n": 2}']


def test_the_page_links_its_current_filter(console, q1, viewer: Client) -> None:
    page = viewer.get(console.queue("q1", "?state=inflight&rc=1&search=a")).content.decode()
    link = console.queue("q1", "export/?state=inflight&amp;rc=1&amp;search=a")
    assert f'href="{link}"' in page


@pytest.mark.parametrize(("query", "field"), [("?state=nope", "state"), ("?rc=-1", "rc")])
def test_a_bad_filter_is_a_400_naming_it(console, q1, viewer: Client, query, field) -> None:
    response = viewer.get(export_url(console, query=query))
    assert response.status_code == 400
    assert response.content.decode().startswith(f"{field}: ")
    assert AuditEntry.objects.get().outcome == "invalid"


def test_a_missing_queue_is_a_404(console, q1, viewer: Client) -> None:
    assert viewer.get(export_url(console, "nope")).status_code == 404


def test_a_big_export_comes_in_pieces(console, rsmq: RedisSMQ, viewer: Client) -> None:
    rsmq.create_queue("big")
    for _ in range(3):
        rsmq.send_messages("big", ["x" * 500] * 200)
    response = viewer.get(export_url(console, "big"))
    pieces = list(response.streaming_content)
    assert len(pieces) > 1 and all(len(p) < EXPORT_CHUNK + 2000 for p in pieces)
    assert sum(p.count(b"\n") for p in pieces) == 600


def imp(client: Client, console, data: bytes, keep: bool = False, qname: str = "q2"):
    post = {"action": "import", "file": SimpleUploadedFile("x.jsonl", data)}
    if keep:
        post["keep_ids"] = "on"
    return client.post(console.act(qname), post, follow=True)


def test_export_then_import_round_trip(
    console, q1, viewer: Client, operator: Client, rsmq: RedisSMQ
) -> None:
    data = b"".join(viewer.get(export_url(console)).streaming_content)
    response = imp(operator, console, data)
    imported = rsmq.browse("q2").items
    assert len(imported) == 6
    ids = sorted(m.id for m in imported)  # a batch's new ids increase in import order
    assert console.flashes(response) == [
        f"Imported 6 messages in 1 batch (ids {ids[0]} … {ids[-1]})."
    ]
    originals = {m.message: m for m in rsmq.browse("q1").items}
    for m in imported:  # byte-identical bodies, new ids, rc reset (documented)
        assert m.message in originals and m.id != originals[m.message].id and m.rc == 0
    # relative delays kept: "later" still about an hour away, the in-flight ones ~10 min
    later = next(m for m in imported if m.message == "later")
    assert 3_500_000 < later.visible_at - later.read_at <= 3_600_000
    row = AuditEntry.objects.filter(action="import").get()
    assert (row.outcome, row.count, row.params["report"]["imported"]) == ("ok", 6, 6)


def test_keep_ids_keeps_ids_rc_and_fr_and_skips_ids_already_there(
    console, q1, viewer: Client, operator: Client, rsmq: RedisSMQ
) -> None:
    data = b"".join(viewer.get(export_url(console)).streaming_content)
    rsmq.delete_message("q1", q1["visible"][0])
    response = imp(operator, console, data, keep=True, qname="q1")
    [text] = console.flashes(response)
    assert text.startswith("Imported 1 message in 1 batch") and "Skipped 5" in text
    back = rsmq.get_message("q1", q1["visible"][0])
    assert back is not None and back.message == '{"n": 1}'
    exported = [json.loads(x) for x in data.split(b"\n") if x]
    again = b"".join(viewer.get(export_url(console)).streaming_content)
    assert {x["id"]: (x["body"], x["rc"], x["fr"]) for x in exported} == {
        x["id"]: (x["body"], x["rc"], x["fr"]) for x in map(json.loads, again.split(b"\n")[:-1])
    }


def test_bad_lines_are_refused_by_number_and_nothing_is_written(
    console, q1, operator: Client, rsmq: RedisSMQ, ns_state
) -> None:
    data = b'{"body": "ok"}\n\nnot json\n{"body": 5}\n{"body": "fine"}\n'
    before = ns_state()
    response = operator.post(
        console.act("q2"), {"action": "import", "file": SimpleUploadedFile("x.jsonl", data)}
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "line 3: not JSON" in page and "line 4: body must be a string" in page
    assert ns_state() == before
    row = AuditEntry.objects.get(action="import")
    assert row.outcome == "invalid"
    assert "line 3: not JSON" in row.detail and "line 4: body must be a string" in row.detail
    assert "2 line(s) can't be imported, nothing was" in row.detail


def test_bad_lines_are_the_forms_error_for_htmx(console, q1, operator: Client) -> None:
    response = operator.post(
        console.act("q2"),
        {"action": "import", "file": SimpleUploadedFile("x.jsonl", b"[1]\n")},
        **console.htmx(console.queue("q2")),
    )
    assert response.status_code == 422
    assert "line 1: not a JSON object" in response.content.decode()


def test_a_file_over_the_limit_is_refused(console, q1, operator: Client, rsmq) -> None:
    big = (json.dumps({"body": "x" * 1000}) + "\n").encode() * (IMPORT_MAX_BYTES // 1000 + 10)
    response = operator.post(
        console.act("q2"),
        {"action": "import", "file": SimpleUploadedFile("x.jsonl", big)},
        **console.htmx(console.queue("q2")),
    )
    assert response.status_code == 422
    assert "rsmq message import" in response.content.decode()
    assert rsmq.browse("q2").items == []


def test_a_viewer_may_not_import(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    response = viewer.post(
        console.act("q2"),
        {"action": "import", "file": SimpleUploadedFile("x.jsonl", b'{"body": "x"}\n')},
    )
    assert response.status_code == 403
    assert rsmq.browse("q2").items == []
    assert AuditEntry.objects.get().outcome == "denied"


def test_a_request_over_the_servers_body_limit_is_refused_by_its_length(
    console, q1, operator: Client, rsmq
) -> None:
    big = b'{"body": "x"}\n' * 250_000  # 3.5 MB: past the served process's 2.5 MB
    response = operator.post(
        console.act("q2"),
        {"action": "import", "file": SimpleUploadedFile("x.jsonl", big)},
        **console.htmx(console.queue("q2")),
    )
    assert response.status_code == 422
    assert "rsmq message import" in response.content.decode()
    assert rsmq.browse("q2").items == []


# A response's close() ends its request as served (the connection closed): a real transaction.
@pytest.mark.django_db(transaction=True)
def test_exports_are_capped_per_process_and_say_when_to_come_back(
    console, q1, viewer: Client, settings
) -> None:
    """At most RSMQ_EXPORTS at once in a web process (they hold no thread, but memory): one
    more is a 503 with Retry-After, audited as nothing exported; the slot is free again
    once the first is closed (its end, its client gone, or idle past RSMQ_EXPORT_IDLE)."""
    settings.RSMQ_EXPORTS = 1
    first = viewer.get(export_url(console))
    assert first.status_code == 200

    second = viewer.get(export_url(console))

    assert second.status_code == 503 and second["Retry-After"] == "30"
    assert second.content.decode() == (
        "1 export is already running in this web process (at most 1 at a time:"
        " RSMQ_EXPORTS); try again when it ends, or use `rsmq message export`.\n"
    )
    assert AuditEntry.objects.count() == 1  # the first only
    first.close()  # the client went away before the end
    assert len(lines(viewer.get(export_url(console)))) == 6
    settings.RSMQ_EXPORTS = 3
    held = [viewer.get(export_url(console)) for _ in range(3)]
    assert [r.status_code for r in held] == [200, 200, 200]
    assert viewer.get(export_url(console)).status_code == 503
    for r in held:
        r.close()
