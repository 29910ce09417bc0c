"""Saved filters: a user saves the queue page's filter under a name (this queue or every
queue), admins share one with everyone, a saved filter is a link; delete your own (admin:
any); every save and delete audited, a refusal too."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from dashboard.models import AuditEntry, SavedFilter
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def save_url(console, qname: str = "q1") -> str:
    return f"{console.base}q/{qname}/filters/"


def saved_links(page: str) -> dict[str, str]:
    """name -> href of the filter bar's saved filters."""
    found = re.findall(r'<a href="([^"]*)" data-saved-filter="([^"]*)"', page)
    return {name: html.unescape(href) for href, name in found}


def test_save_a_filter_and_follow_its_link(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    ids = rsmq.send_messages("q1", ['{"amount": 150}', '{"amount": 5}'])
    got = viewer.post(save_url(console), {"name": "big orders", "scope": "queue",
                                          "where": "amount > 100", "state": "visible"})  # fmt: skip
    assert got.status_code == 302
    assert got["Location"].endswith("?state=visible&where=amount+%3E+100")
    row = SavedFilter.objects.get()
    assert (row.name, row.queue, row.shared) == ("big orders", "q1", False)
    page = viewer.get(console.queue("q1")).content.decode()
    links = saved_links(page)
    assert list(links) == ["big orders"]
    followed = viewer.get(links["big orders"])
    assert [m.id for m in followed.context["items"]] == [ids[0]]
    entry = AuditEntry.objects.get(action="filter_save")
    assert entry.outcome == "ok" and entry.params["query"] == row.query
    assert entry.username == "vera" and entry.queue == "q1"


def test_saving_again_under_the_same_name_replaces_it(console, q1, viewer: Client) -> None:
    for where in ("a = 1", "a = 2"):
        viewer.post(save_url(console), {"name": "x", "scope": "queue", "where": where})
    assert SavedFilter.objects.get().query == "where=a+%3D+2"


def test_every_queue_or_this_one(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    viewer.post(save_url(console), {"name": "mine here", "scope": "queue", "rc": "2"})
    viewer.post(save_url(console), {"name": "anywhere", "scope": "all", "rc": "3"})
    assert set(saved_links(viewer.get(console.queue("q1")).content.decode())) == {
        "mine here", "anywhere"}  # fmt: skip
    assert set(saved_links(viewer.get(console.queue("q2")).content.decode())) == {"anywhere"}


def test_a_bad_filter_or_name_is_a_400_and_saves_nothing(console, q1, viewer: Client) -> None:
    cases = [
        ({"name": "x", "scope": "queue", "where": "amount >"}, "where", "position 9"),
        ({"name": "", "scope": "queue", "where": "a = 1"}, "name", "required"),
        ({"name": "x" * 101, "scope": "queue", "rc": "1"}, "name", "at most 100"),
        ({"name": "x", "scope": "galaxy", "rc": "1"}, "scope", "valid choice"),
        ({"name": "x", "scope": "queue"}, "filter", "nothing to save"),
        ({"name": "x", "scope": "queue", "older": "-5"}, "older", "minutes"),
    ]
    for data, field, says in cases:
        got = viewer.post(save_url(console), data)
        assert got.status_code == 400, data
        page = html.unescape(got.content.decode())
        error = re.search(rf'data-save-error="{field}">(.*?)</small>', page, re.S)
        assert error and says in error.group(1), (data, page[:200] if not error else error.group(1))
    assert not SavedFilter.objects.exists()
    assert AuditEntry.objects.filter(action="filter_save", outcome="invalid").count() == len(cases)


def test_only_admins_share_and_everyone_sees_a_shared_one(
    console, q1, viewer: Client, admin: Client, operator: Client
) -> None:
    refused = operator.post(save_url(console), {"name": "s", "scope": "queue", "rc": "1",
                                                "shared": "on"})  # fmt: skip
    assert refused.status_code == 403
    assert not SavedFilter.objects.exists()
    assert AuditEntry.objects.filter(action="filter_share", outcome="denied").exists()
    ok = admin.post(save_url(console), {"name": "poison", "scope": "all", "rc": "5",
                                        "shared": "on"})  # fmt: skip
    assert ok.status_code == 302 and SavedFilter.objects.get().shared
    admin.post(save_url(console), {"name": "admin's own", "scope": "all", "rc": "6"})
    for who in (viewer, operator):
        page = who.get(console.queue("q1")).content.decode()
        assert list(saved_links(page)) == ["poison"]  # not the admin's private one
        assert "Delete saved filter poison" not in page  # nor may they delete it
    assert "shared with everyone" in admin.get(console.queue("q1", "?rc=1")).content.decode()
    assert "shared with everyone" not in viewer.get(console.queue("q1", "?rc=1")).content.decode()


def test_delete_your_own_and_admins_any(
    console, q1, viewer: Client, operator: Client, admin: Client
) -> None:
    viewer.post(save_url(console), {"name": "v", "scope": "queue", "rc": "1"})
    operator.post(save_url(console), {"name": "o", "scope": "queue", "rc": "2"})
    v_row, o_row = SavedFilter.objects.get(name="v"), SavedFilter.objects.get(name="o")
    delete = f"{console.base}q/q1/filters/{{}}/delete/"
    assert viewer.post(delete.format(o_row.pk)).status_code == 403  # not theirs
    assert SavedFilter.objects.filter(pk=o_row.pk).exists()
    assert AuditEntry.objects.filter(action="filter_delete", outcome="denied").exists()
    assert viewer.get(delete.format(v_row.pk)).status_code == 405  # a POST only
    assert viewer.post(delete.format(v_row.pk)).status_code == 302
    assert admin.post(delete.format(o_row.pk)).status_code == 302
    assert not SavedFilter.objects.exists()
    done = AuditEntry.objects.filter(action="filter_delete", outcome="ok")
    assert sorted(e.params["name"] for e in done) == ["o", "v"]
    assert admin.post(delete.format(o_row.pk)).status_code == 404


def test_someone_with_no_role_saves_nothing(console, q1, outsider: Client) -> None:
    got = outsider.post(save_url(console), {"name": "x", "scope": "queue", "rc": "1"})
    assert got.status_code == 403 and not SavedFilter.objects.exists()
