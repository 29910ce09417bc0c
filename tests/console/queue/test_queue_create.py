"""Creating a queue from the overview (admins only): validated, audited, htmx or plain."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

NEW = {"name": "orders", "vt": "45", "delay": "2", "maxsize": "2048"}


def test_it_creates_the_queue(console, admin: Client, rsmq: RedisSMQ) -> None:
    admin.post(console.create(), NEW)
    a = rsmq.get_queue_attributes("orders")
    assert (a.vt, a.delay, a.maxsize, a.msgs) == (45, 2, 2048, 0)


def test_it_goes_to_the_new_queues_page(console, admin: Client) -> None:
    response = admin.post(console.create(), NEW, follow=True)
    assert response.redirect_chain == [(console.queue("orders"), 302)]
    assert console.flashes(response) == ["Created queue orders."]


def test_it_answers_htmx_with_the_overview_partial(console, admin: Client) -> None:
    response = admin.post(
        console.create(), NEW, **console.htmx(current=console.overview("?sort=name"))
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<div id="content">')
    assert "<html" not in page
    assert console.flashes(response) == ["Created queue orders."]
    assert f'<a href="{console.queue("orders")}">orders</a>' in page
    # The answer itself links to the new queue; the audit log keeps the plain text.
    assert f'flash success">Created queue <a href="{console.queue("orders")}">orders</a>.' in page
    assert console.audit().detail == "Created queue orders."


def test_it_keeps_the_search_in_the_sort_links_after_an_htmx_create(console, admin: Client) -> None:
    current = console.overview("?q=ord&sort=-msgs")
    response = admin.post(console.create(), NEW, **console.htmx(current=current))
    page = response.content.decode()
    assert 'aria-sort="descending">\n              <a href="?q=ord&amp;sort=msgs">Messages' in page


def test_it_audits_a_creation(console, admin: Client) -> None:
    admin.post(console.create(), NEW)
    row = AuditEntry.objects.get()
    assert (row.user, row.username, row.connection, row.namespace, row.queue) == (
        admin.user,
        "ada",
        "default",
        console.ns,
        "orders",
    )
    assert (row.action, row.ids, row.count, row.params, row.outcome, row.detail) == (
        "create_queue",
        [],
        None,
        {"vt": 45, "delay": 2, "maxsize": 2048},
        "ok",
        "Created queue orders.",
    )


def test_it_reports_a_queue_that_exists(console, admin: Client, rsmq: RedisSMQ, ns_state) -> None:
    rsmq.create_queue("orders", vt=99)
    before = ns_state()
    response = admin.post(console.create(), NEW)
    assert response.status_code == 422
    assert console.flashes(response) == ["Queue exists: orders"]
    assert ns_state() == before


def test_it_audits_creating_a_queue_that_exists(console, admin: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("orders")
    admin.post(console.create(), NEW)
    row = AuditEntry.objects.get()
    assert (row.action, row.queue, row.outcome, row.detail) == (
        "create_queue",
        "orders",
        "error",
        "Queue exists: orders",
    )


def test_it_keeps_the_typed_values_after_an_error(console, admin: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("orders")
    page = admin.post(console.create(), NEW).content.decode()
    assert 'name="vt" value="45"' in page


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("name", "", "This field is required."),
        ("name", "bad name!", "(1 to 160 characters of a-z A-Z 0-9 _ -)"),
        ("name", "x" * 161, "(1 to 160 characters of a-z A-Z 0-9 _ -)"),
        ("vt", "-1", "vt must be an integer between 0 and 9999999"),
        ("vt", "10000000", "vt must be an integer between 0 and 9999999"),
        ("delay", "1.5", "delay must be seconds (90) or a number with a unit"),
        ("maxsize", "1023", "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited"),
        ("maxsize", "0", "maxsize must be between 1024 and 65536 bytes, or -1 for unlimited"),
    ],
)
def test_it_rejects_bad_input(
    console, admin: Client, ns_state, field: str, value: str, error: str
) -> None:
    before = ns_state()
    response = admin.post(console.create(), NEW | {field: value})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_says_the_name_of_the_queue_list_is_reserved(console, admin: Client, ns_state) -> None:
    before = ns_state()
    response = admin.post(console.create(), NEW | {"name": "QUEUES"})
    assert response.status_code == 422
    assert "is reserved (the key of the queue list)" in response.content.decode()
    assert "already exists" not in response.content.decode()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"  # refused, and recorded


def test_it_answers_htmx_form_errors_with_the_partial(console, admin: Client) -> None:
    response = admin.post(
        console.create(), NEW | {"vt": "-1"}, **console.htmx(current=console.overview())
    )
    assert response.status_code == 422
    assert "<html" not in response.content.decode()
    assert "vt must be an integer between 0 and 9999999" in response.content.decode()


def test_it_accepts_an_unlimited_maxsize(console, admin: Client, rsmq: RedisSMQ) -> None:
    admin.post(console.create(), NEW | {"maxsize": "-1"})
    assert rsmq.get_queue_attributes("orders").maxsize == -1


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_it_requires_the_admin_role(console, as_role, ns_state, role: str) -> None:
    before = ns_state()
    response = as_role(role).post(console.create(), NEW)
    assert response.status_code == 403
    assert ns_state() == before


def test_it_rejects_get(console, admin: Client) -> None:
    assert admin.get(console.create()).status_code == 405
