"""Grants (dashboard/access/grants.py): matching a queue against globs and taking the
highest role, a user's grants and their groups', what an admin may write, an API token's
scope and expiry, and the audit rows of grants and tokens."""

from __future__ import annotations

import datetime as dt
import difflib
import re

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.http import Http404
from django.test import Client
from django.utils import timezone

from dashboard.access import grants, tokens
from dashboard.access.grants import Rule, Scope
from dashboard.access.roles import Role
from dashboard.models import ApiToken, AuditEntry, Grant
from dashboard.probes import health
from queues import QueueNotFound, RedisSMQ

VI, OP, AD = Role.VIEWER, Role.OPERATOR, Role.ADMIN


def scope(*rules: tuple[Role, str, str, str]) -> Scope:
    return Scope(Rule(*r) for r in rules)


def test_a_queue_takes_the_highest_role_of_the_globs_that_match_it() -> None:
    s = scope(
        (VI, "*", "*", "*"), (OP, "prod", "shop", "billing-*"), (AD, "prod", "shop", "billing-eu-?")
    )
    assert s.role_at("prod", "shop", "billing-eu-1") == AD
    assert s.role_at("prod", "shop", "billing-eu-12") == OP
    assert s.role_at("prod", "shop", "billing-us") == OP
    assert s.role_at("prod", "shop", "orders") == VI
    assert s.role_at("staging", "shop", "billing-eu-1") == VI
    assert (s.highest, s.overall) == (AD, VI)


def test_globs_match_whole_names_case_sensitively_with_sets() -> None:
    s = scope((OP, "prod", "s*", "billing-[ab]*"), (VI, "prod", "s*", "x?"))
    assert s.role_at("prod", "shop", "billing-a1") == OP
    assert s.role_at("prod", "shop", "billing-c1") == Role.NONE
    assert s.role_at("prod", "shop", "Billing-a1") == Role.NONE
    assert s.role_at("prod", "shop", "xbilling-a") == Role.NONE
    assert s.role_at("prod", "shop", "xy") == VI
    assert s.role_at("prod", "other", "xy") == Role.NONE  # namespaces s* only
    assert s.role_at("production", "shop", "xy") == Role.NONE


def test_a_place_is_seen_with_any_grant_there_and_whole_with_one_on_every_queue() -> None:
    s = scope((OP, "prod", "shop", "billing-*"), (VI, "prod", "audit", "*"))
    assert (s.role_in("prod", "shop"), s.whole("prod", "shop")) == (OP, False)
    assert (s.role_in("prod", "audit"), s.whole("prod", "audit")) == (VI, True)
    assert s.role_in("prod", "other") == Role.NONE
    names = ["orders", "billing-1", "billing-2", "x"]
    assert s.visible("prod", "shop", names) == ["billing-1", "billing-2"]
    assert s.visible("prod", "audit", names) == names
    assert s.visible("prod", "other", names) == []


def test_a_glob_about_queues_is_seen_only_where_the_grants_cover_it() -> None:
    s = scope((AD, "prod", "shop", "billing-*"))
    assert s.shows("prod", "shop", "billing-eu-*")
    assert s.shows("prod", "shop", "billing-*")
    assert not s.shows("prod", "shop", "*")
    assert not s.shows("prod", "shop", "orders-*")
    assert s.shows("prod", "shop", "")  # the place as a whole: a grant there
    assert not s.shows("prod", "other", "")


def test_held_answers_a_queue_out_of_sight_as_one_that_does_not_exist() -> None:
    s = scope((OP, "prod", "shop", "billing-*"))
    assert s.held("prod", "shop", "billing-1") == OP
    assert s.held("prod", "shop") == OP
    with pytest.raises(QueueNotFound) as e:
        s.held("prod", "shop", "orders")
    assert str(e.value) == str(QueueNotFound("orders"))
    with pytest.raises(Http404):
        s.held("prod", "other", "billing-1")
    assert s.held("prod", "shop", "orders-*") == Role.NONE  # a glob: a 403, nothing named
    # no role anywhere: the 403 of a missing role, as before grants
    assert grants.EMPTY.held("prod", "shop", "orders") == Role.NONE


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (("prod", "shop", "billing-*"), None),
        (("*", "*", "*"), None),
        (("prod", "shop", "billing-[ab]"), None),
        (("prod", "shop", "billing/x"), "queues"),
        (("prod", "shop", "billing-[ab"), "queues"),
        (("prod", "shop", ""), "queues"),
        (("prod", "shop", "a b"), "queues"),
        (("pr od", "shop", "*"), "connection"),
        (("prod", "", "*"), "namespace"),
        (("prod", "a/b", "*"), "namespace"),
    ],
)
def test_scopes_are_checked_naming_the_field(
    fields: tuple[str, str, str], named: str | None
) -> None:
    if named is None:
        grants.check_scope(*fields)
        return
    with pytest.raises(ValidationError) as e:
        grants.check_scope(*fields)
    assert set(e.value.message_dict) == {named}
    assert e.value.message_dict[named][0].startswith(named)


def test_a_tokens_queues_are_a_list_of_globs() -> None:
    grants.check_scope("*", "*", "billing-*, invoices", many=True)
    with pytest.raises(ValidationError) as e:
        grants.check_scope("*", "*", "billing-*,", many=True)
    assert "queues" in e.value.message_dict
    with pytest.raises(ValidationError) as e:
        grants.check_role("owner")
    assert e.value.message_dict["role"] == [
        "role must be one of observer, viewer, operator, admin: 'owner' is not"
    ]


@pytest.mark.django_db
def test_a_user_holds_the_highest_of_their_grants_and_their_groups() -> None:
    user = User.objects.create_user("uma")
    team = Group.objects.create(name="billing-team")
    user.groups.add(team)
    Grant.objects.create(group=team, role="operator", connection="prod", namespace="shop",
                         queues="billing-*")  # fmt: skip
    Grant.objects.create(user=user, role="viewer", connection="*", namespace="*", queues="*")
    Grant.objects.create(user=user, role="admin", connection="prod", namespace="shop",
                         queues="billing-eu")  # fmt: skip
    s = grants.of_user(User.objects.get(pk=user.pk))
    assert s.role_at("prod", "shop", "billing-eu") == AD
    assert s.role_at("prod", "shop", "billing-us") == OP
    assert s.role_at("prod", "shop", "orders") == VI
    assert grants.of_user(User.objects.create_superuser("root")).overall == AD
    inactive = User.objects.create_user("ina", is_active=False)
    Grant.objects.create(user=inactive, role="admin")
    assert grants.of_user(inactive).highest == Role.NONE


@pytest.mark.django_db
def test_a_requests_scope_is_read_once(django_assert_num_queries) -> None:
    user = User.objects.create_user("uma")
    Grant.objects.create(user=user, role="operator", queues="billing-*")
    user = User.objects.get(pk=user.pk)
    with django_assert_num_queries(1):
        for i in range(1000):
            grants.of_user(user).role_at("default", "rsmq", f"billing-{i}")


@pytest.mark.django_db
def test_the_role_groups_hold_their_role_at_every_queue_as_before(login) -> None:
    for group, role in (("viewer", VI), ("operator", OP), ("admin", AD)):
        client = login(f"in-{group}", group)
        s = grants.of_user(client.user)
        assert (s.overall, s.role_at("any", "where", "at-all")) == (role, role)


# -- the migration -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_every_role_holder_a_grant_on_every_queue() -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("dashboard", "0027_masking")]
    after = [("dashboard", "0028_grants")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    old_group, old_user = apps.get_model("auth", "Group"), apps.get_model("auth", "User")
    perm = apps.get_model("auth", "Permission")
    names = ["observer", "viewer", "operator", "admin"]
    groups = {g.name: g for g in old_group.objects.filter(name__in=names)}
    members = {}
    for name in groups:
        members[name] = old_user.objects.create(username=f"m-{name}")
        members[name].groups.add(groups[name])
    # a group of the company's own holding the operator's permissions, a user holding the
    # viewer's directly, and a group with none
    ops = old_group.objects.create(name="ops")
    ops.permissions.set(perm.objects.filter(codename__in=["view_console", "operate_messages"]))
    direct = old_user.objects.create(username="direct")
    direct.user_permissions.add(perm.objects.get(codename="view_console"))
    old_group.objects.create(name="nobody")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    made = sorted(
        (g.group.name if g.group else g.user.username, g.role, g.connection, g.namespace, g.queues)
        for g in Grant.objects.select_related("group", "user")
    )
    assert made == [
        ("admin", "admin", "*", "*", "*"),
        ("direct", "viewer", "*", "*", "*"),
        ("observer", "observer", "*", "*", "*"),
        ("operator", "operator", "*", "*", "*"),
        ("ops", "operator", "*", "*", "*"),
        ("viewer", "viewer", "*", "*", "*"),
    ]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    for name, role in (("viewer", VI), ("operator", OP), ("admin", AD)):
        user = User.objects.get(username=f"m-{name}")
        assert grants.of_user(user).overall == role  # the same role, everywhere, as before


# -- tokens: scope and expiry -------------------------------------------------------------


@pytest.mark.django_db
def test_an_expired_token_is_refused_as_a_revoked_one(console, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1")
    row, token = tokens.mint("late", "operator", "root", 600,
                             expires_at=timezone.now() + dt.timedelta(hours=1))  # fmt: skip
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert Client().get("/api/queues/q1/", **auth).status_code == 200
    ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    tokens._seen.clear()
    response = Client().get("/api/queues/q1/", **auth)
    assert response.status_code == 401
    assert response.json() == {"error": "API token late has expired."}
    assert response["WWW-Authenticate"] == 'Bearer realm="rsmq-console"'
    sent = Client().post("/api/queues/q1/messages/", '{"message": "x"}',
                         content_type="application/json", **auth)  # fmt: skip
    assert sent.status_code == 401
    assert rsmq.get_queue_attributes("q1").msgs == 0


@pytest.mark.django_db
def test_a_scoped_token_acts_only_in_its_scope(console, rsmq: RedisSMQ) -> None:
    for q in ("billing-1", "orders"):
        rsmq.create_queue(q)
    _, token = tokens.mint("billing", "operator", "root", 600, queues="billing-*")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = '{"message": "x"}'
    sent = Client().post("/api/queues/billing-1/messages/", body, content_type="application/json",
                         **auth)  # fmt: skip
    assert sent.status_code == 201
    refused = Client().post("/api/queues/orders/messages/", body, content_type="application/json",
                            **auth)  # fmt: skip
    assert (refused.status_code, refused.json()) == (
        404,
        {"error": "Queue orders does not exist (any more)."},
    )
    assert rsmq.get_queue_attributes("orders").msgs == 0
    # an admin's call of an operator's token, in its scope: the 403 of its role
    purge = Client().post("/api/queues/billing-1/purge/", **auth)
    assert purge.status_code == 403


# -- the audit log -------------------------------------------------------------------------


@pytest.fixture
def root(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root"))
    return client


def test_grants_made_changed_and_deleted_in_the_admin_are_audited(root: Client, db) -> None:
    user = User.objects.create_user("uma")
    add = {"user": user.pk, "group": "", "role": "operator", "connection": "default",
           "namespace": "shop", "queues": "billing-*"}  # fmt: skip
    assert root.post("/admin/dashboard/grant/add/", add).status_code == 302
    grant = Grant.objects.get(user=user)
    change = f"/admin/dashboard/grant/{grant.pk}/change/"
    assert root.post(change, {**add, "role": "admin", "queues": "billing-eu-*"}).status_code == 302
    assert (
        root.post(f"/admin/dashboard/grant/{grant.pk}/delete/", {"post": "yes"}).status_code == 302
    )
    assert not Grant.objects.filter(user=user).exists()
    rows = AuditEntry.objects.order_by("id")
    assert [(r.action, r.username, r.queue, r.outcome) for r in rows] == [
        ("grant_create", "root", "billing-*", "ok"),
        ("grant_change", "root", "billing-eu-*", "ok"),
        ("grant_delete", "root", "billing-eu-*", "ok"),
    ]
    was = {"to": "user:uma", "role": "operator", "connection": "default", "namespace": "shop",
           "queues": "billing-*"}  # fmt: skip
    now = {**was, "role": "admin", "queues": "billing-eu-*"}
    assert [r.params for r in rows] == [
        {"before": None, "after": was},
        {"before": was, "after": now},
        {"before": now, "after": None},
    ]


@pytest.mark.parametrize(
    ("add", "field"),
    [
        ({"queues": "billing/[x"}, "queues"),
        ({"namespace": "a b"}, "namespace"),
        ({"group": "GROUP"}, "user"),  # both a user and a group
    ],
)
def test_the_admin_refuses_a_grant_it_cannot_read_naming_the_field(
    root: Client, db, add: dict[str, str], field: str
) -> None:
    user = User.objects.create_user("uma")
    team = Group.objects.create(name="team")
    given = {k: team.pk if v == "GROUP" else v for k, v in add.items()}
    form = {"user": user.pk, "group": "", "role": "viewer", "connection": "*", "namespace": "*",
            "queues": "*", **given}  # fmt: skip
    response = root.post("/admin/dashboard/grant/add/", form)
    assert response.status_code == 200  # the form again, with its errors
    assert field in response.context["adminform"].form.errors
    assert not Grant.objects.filter(user=user).exists() and not AuditEntry.objects.exists()


def test_tokens_minted_with_a_scope_and_revoked_are_audited(console, admin: Client) -> None:
    form = {"name": "billing", "role": "operator", "per_minute": "600", "connection": "default",
            "namespace": console.ns, "queues": "billing-*, invoices",
            "expires_days": "30"}  # fmt: skip
    made = admin.post("/tokens/", form)
    assert made.status_code == 200
    row = ApiToken.objects.get()
    assert (row.connection, row.namespace, row.queues) == (
        "default",
        console.ns,
        "billing-*,invoices",
    )
    assert row.expires_at is not None
    assert dt.timedelta(days=29) < row.expires_at - timezone.now() <= dt.timedelta(days=30)
    page = admin.get("/tokens/").content.decode()
    assert f"default/{console.ns}/billing-*,invoices" in page
    admin.post("/tokens/", {"revoke": str(row.pk)})
    rows = AuditEntry.objects.order_by("id")
    scope = f"default/{console.ns}/billing-*,invoices"
    assert [(r.action, r.username, r.params["scope"], r.params["role"]) for r in rows] == [
        ("create_token", "ada", scope, "operator"),
        ("revoke_token", "ada", scope, "operator"),
    ]
    assert rows[0].params["expires_at"] == row.expires_at.isoformat(timespec="seconds")


def test_a_token_scope_the_form_cannot_read_is_refused(console, admin: Client) -> None:
    response = admin.post("/tokens/", {"name": "bad", "role": "operator", "per_minute": "600",
                                       "queues": "billing-[x"})  # fmt: skip
    assert response.status_code == 422
    assert "queues must be globs" in response.content.decode()
    assert not ApiToken.objects.exists()


# -- cost: one read of the grants a request, whatever the number of queues ---------------


def _queries(client: Client, url: str, **headers: str) -> list[str]:
    """The statements a request made (their verbs and tables: a query, not its values)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as seen:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return [re.sub(r"'[^']*'|\b\d+\b", "?", q["sql"])[:160] for q in seen]


def _make(rsmq: RedisSMQ, start: int, stop: int) -> None:
    for i in range(start, stop):
        rsmq.create_queue(f"billing-{i:03}")
        rsmq.create_queue(f"other-{i:03}")


def test_the_overview_asks_the_database_as_often_at_300_queues_as_at_10(
    console, login, admin: Client, rsmq: RedisSMQ, monkeypatch
) -> None:
    # what a process reads at most every few seconds (a token's row, the newest snapshot)
    # read once for the test, not again whenever its time is up
    monkeypatch.setattr(tokens, "CACHE_TTL", 3600)
    monkeypatch.setattr(health, "CACHE_SECONDS", 3600)
    bill = login("bill")
    Grant.objects.create(user=bill.user, role="operator", connection="default",
                         namespace=console.ns, queues="billing-*")  # fmt: skip
    _, token = tokens.mint("bill", "operator", "root", 100_000, queues="billing-*")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    overview, api = console.overview(), f"/api/c/default/{console.ns}/queues/"
    _make(rsmq, 0, 10)
    # (a first request writes what later ones need not: a token's "last used")
    first = [_queries(bill, overview), _queries(admin, overview), _queries(Client(), api, **auth)]
    small = [_queries(bill, overview), _queries(admin, overview), _queries(Client(), api, **auth)]
    assert [len(q) for q in small] <= [len(q) for q in first]
    _make(rsmq, 10, 300)
    large = [_queries(bill, overview), _queries(admin, overview), _queries(Client(), api, **auth)]
    for before, after in zip(small, large, strict=True):
        diff = "\n".join(difflib.unified_diff(before, after, lineterm="", n=0))
        assert after == before, diff
    listed = Client().get(api, **auth).json()["queues"]
    assert len(listed) == 300 and all(q["name"].startswith("billing-") for q in listed)
    assert bill.get(overview).context["totals"]["queues"] == 300
    assert admin.get(overview).context["totals"]["queues"] == 600
