"""Who may do what: login everywhere, viewer reads, operator acts on messages, admin on
queues, RSMQ_READ_ONLY switches every action off; the UI shows only what a role may do."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Post:
    """One mutating action: where it posts, what, and the role it needs."""

    role: str
    url: Callable  # (console, ids) -> path
    data: Callable  # ids -> form data
    audited_as: str  # the audit row's action when it runs


def _queue_act(c, ids):
    return c.act("q1")


def _message_act(c, ids):
    return c.message_act(ids[0], "q1")


POSTS = {
    "send": Post("operator", _queue_act, lambda ids: {"action": "send", "body": "hi"}, "send"),
    "requeue": Post(
        "operator", _queue_act, lambda ids: {"action": "requeue", "ids": [ids[0]]}, "requeue"
    ),
    "delete": Post(
        "operator", _queue_act, lambda ids: {"action": "delete", "ids": [ids[1]]}, "delete"
    ),
    "move": Post(
        "operator", _queue_act, lambda ids: {"action": "move", "ids": [ids[1]], "to": "q2"}, "move"
    ),
    "message-requeue": Post("operator", _message_act, lambda ids: {"action": "requeue"}, "requeue"),
    "message-visibility": Post(
        "operator", _message_act, lambda ids: {"action": "visibility", "vt": "0"}, "visibility"
    ),
    "message-delete": Post("operator", _message_act, lambda ids: {"action": "delete"}, "delete"),
    "message-move": Post(
        "operator", _message_act, lambda ids: {"action": "move", "to": "q2"}, "move"
    ),
    "requeue_all": Post(
        "admin",
        _queue_act,
        lambda ids: {"action": "requeue_all", "state": "inflight", "all-confirm": "q1"},
        "requeue_all",
    ),
    "delete_all": Post(
        "admin",
        _queue_act,
        lambda ids: {"action": "delete_all", "state": "all", "all-confirm": "q1"},
        "delete_all",
    ),
    "edit": Post(
        "admin",
        _queue_act,
        lambda ids: {"action": "edit", "vt": "60", "delay": "0", "maxsize": "65536"},
        "edit_queue",
    ),
    "purge": Post(
        "admin", _queue_act, lambda ids: {"action": "purge", "purge-confirm": "q1"}, "purge"
    ),
    "delete_queue": Post(
        "admin",
        _queue_act,
        lambda ids: {"action": "delete_queue", "delete-confirm": "q1"},
        "delete_queue",
    ),
    "create": Post(
        "admin",
        lambda c, ids: c.create(),
        lambda ids: {"name": "q3", "vt": "30", "delay": "0", "maxsize": "65536"},
        "create_queue",
    ),
}
OPERATOR_POSTS = [k for k, p in POSTS.items() if p.role == "operator"]
ADMIN_POSTS = [k for k, p in POSTS.items() if p.role == "admin"]


@pytest.fixture
def ids(console, rsmq: RedisSMQ) -> list[str]:
    """q1 with three messages, the first in flight; an empty q2 to move to."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    ids = rsmq.send_messages("q1", ["one", "two", "three"])
    rsmq.receive_message("q1", vt=60)
    return ids


def _post(client: Client, console, ids: list[str], name: str):
    post = POSTS[name]
    return client.post(post.url(console, ids), post.data(ids))


def _assert_denied_row(client: Client, console, name: str) -> None:
    row = AuditEntry.objects.get()
    queue = "q3" if name == "create" else "q1"
    assert (row.user, row.username, row.connection, row.namespace) == (
        client.user,
        client.user.username,
        "default",
        console.ns,
    )
    assert (row.queue, row.action, row.outcome) == (queue, POSTS[name].audited_as, "denied")
    assert row.count is None


# -- login ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/", "overview", "queue", "message", "/audit/"],
)
def test_it_requires_login_for_every_page(console, ids, anon: Client, path: str) -> None:
    url = {
        "overview": console.overview(),
        "queue": console.queue(),
        "message": console.message(ids[0]),
    }.get(path, path)
    response = anon.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"


@pytest.mark.parametrize("name", list(POSTS))
def test_it_requires_login_for_every_action(
    console, ids, anon: Client, ns_state, name: str
) -> None:
    before = ns_state()
    response = _post(anon, console, ids, name)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")
    assert ns_state() == before
    assert not AuditEntry.objects.exists()


def test_it_requires_login_to_set_the_refresh_preference(anon: Client) -> None:
    response = anon.post("/preferences/refresh/", {"refresh_seconds": "2"})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


# -- no role -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["overview", "queue", "message", "audit"])
def test_it_forbids_pages_to_a_user_without_a_role(
    console, ids, outsider: Client, page: str
) -> None:
    url = {
        "overview": console.overview(),
        "queue": console.queue(),
        "message": console.message(ids[0]),
        "audit": "/audit/",
    }[page]
    response = outsider.get(url)
    assert response.status_code == 403
    assert "This needs the observer role." in response.content.decode()


@pytest.mark.parametrize("name", ["send", "message-delete", "purge", "create"])
def test_it_forbids_actions_to_a_user_without_a_role(
    console, ids, outsider: Client, ns_state, name: str
) -> None:
    before = ns_state()
    response = _post(outsider, console, ids, name)
    assert response.status_code == 403
    assert ns_state() == before


@pytest.mark.parametrize("name", ["send", "message-delete", "purge", "create"])
def test_it_audits_the_denied_action_of_a_user_without_a_role(
    console, ids, outsider: Client, name: str
) -> None:
    _post(outsider, console, ids, name)
    _assert_denied_row(outsider, console, name)


# -- viewer ------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["overview", "queue", "message", "audit"])
def test_it_lets_a_viewer_read_every_page(console, ids, viewer: Client, page: str) -> None:
    url = {
        "overview": console.overview(),
        "queue": console.queue(),
        "message": console.message(ids[0]),
        "audit": "/audit/",
    }[page]
    assert viewer.get(url).status_code == 200


@pytest.mark.parametrize("name", list(POSTS))
def test_it_forbids_every_action_to_a_viewer(
    console, ids, viewer: Client, ns_state, name: str
) -> None:
    before = ns_state()
    response = _post(viewer, console, ids, name)
    assert response.status_code == 403
    assert f"This needs the {POSTS[name].role} role." in response.content.decode()
    assert ns_state() == before


@pytest.mark.parametrize("name", list(POSTS))
def test_it_audits_a_viewers_denied_action(console, ids, viewer: Client, name: str) -> None:
    _post(viewer, console, ids, name)
    _assert_denied_row(viewer, console, name)


# -- operator ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", OPERATOR_POSTS)
def test_it_lets_an_operator_act_on_messages(console, ids, operator: Client, name: str) -> None:
    response = _post(operator, console, ids, name)
    assert response.status_code == 302
    row = AuditEntry.objects.get()
    assert (row.username, row.action, row.outcome) == ("otto", POSTS[name].audited_as, "ok")


@pytest.mark.parametrize("name", ADMIN_POSTS)
def test_it_requires_the_admin_role_for_queue_actions(
    console, ids, operator: Client, ns_state, name: str
) -> None:
    before = ns_state()
    response = _post(operator, console, ids, name)
    assert response.status_code == 403
    assert "This needs the admin role." in response.content.decode()
    assert ns_state() == before


@pytest.mark.parametrize("name", ADMIN_POSTS)
def test_it_audits_an_operators_denied_admin_action(
    console, ids, operator: Client, name: str
) -> None:
    _post(operator, console, ids, name)
    _assert_denied_row(operator, console, name)


# -- admin -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(POSTS))
def test_it_lets_an_admin_do_everything(console, ids, admin: Client, name: str) -> None:
    response = _post(admin, console, ids, name)
    assert response.status_code == 302
    row = AuditEntry.objects.get()
    assert (row.username, row.action, row.outcome) == ("ada", POSTS[name].audited_as, "ok")


def test_it_lets_a_superuser_without_a_group_act_as_admin(console, ids, login) -> None:
    client = login("root")
    client.user.is_superuser = True
    client.user.save()
    response = _post(client, console, ids, "purge")
    assert response.status_code == 302
    assert console.rsmq.get_queue_attributes("q1").msgs == 0


# -- read-only ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(POSTS))
def test_it_turns_every_action_off_when_read_only(
    console, ids, settings, admin: Client, ns_state, name: str
) -> None:
    settings.RSMQ_READ_ONLY = True
    before = ns_state()
    response = _post(admin, console, ids, name)
    assert response.status_code == 403
    assert "The console is read-only (RSMQ_READ_ONLY)." in response.content.decode()
    assert ns_state() == before


@pytest.mark.parametrize("name", list(POSTS))
def test_it_audits_an_action_denied_by_read_only(
    console, ids, settings, admin: Client, name: str
) -> None:
    settings.RSMQ_READ_ONLY = True
    _post(admin, console, ids, name)
    _assert_denied_row(admin, console, name)


def test_it_still_lets_everyone_read_when_read_only(console, ids, settings, viewer: Client) -> None:
    settings.RSMQ_READ_ONLY = True
    assert viewer.get(console.queue()).status_code == 200


def test_it_shows_a_read_only_badge(console, ids, settings, admin: Client) -> None:
    settings.RSMQ_READ_ONLY = True
    response = admin.get(console.overview())
    assert '<span class="badge ro"' in response.content.decode()


def test_it_shows_no_read_only_badge_normally(console, ids, admin: Client) -> None:
    response = admin.get(console.overview())
    assert '<span class="badge ro"' not in response.content.decode()


# -- the UI reflects the role ------------------------------------------------------------

OPERATOR_BUTTONS = ['value="send"', 'value="requeue"', 'value="delete"', 'value="move"']
ADMIN_BUTTONS = [
    'value="edit"',
    'value="purge"',
    'value="delete_queue"',
    'value="delete_all"',
    'value="requeue_all"',
]


def _queue_page(client: Client, console) -> str:
    # The in-flight tab: the only one that offers "Requeue all".
    return client.get(console.queue("q1", "?state=inflight")).content.decode()


@pytest.mark.parametrize("button", OPERATOR_BUTTONS + ADMIN_BUTTONS)
def test_it_shows_a_viewer_no_action_button(console, ids, viewer: Client, button: str) -> None:
    assert button not in _queue_page(viewer, console)


@pytest.mark.parametrize("button", OPERATOR_BUTTONS)
def test_it_shows_an_operator_the_message_buttons(
    console, ids, operator: Client, button: str
) -> None:
    assert button in _queue_page(operator, console)


@pytest.mark.parametrize("button", ADMIN_BUTTONS)
def test_it_hides_the_admin_buttons_from_an_operator(
    console, ids, operator: Client, button: str
) -> None:
    assert button not in _queue_page(operator, console)


@pytest.mark.parametrize("button", OPERATOR_BUTTONS + ADMIN_BUTTONS)
def test_it_shows_an_admin_every_button(console, ids, admin: Client, button: str) -> None:
    assert button in _queue_page(admin, console)


@pytest.mark.parametrize("button", OPERATOR_BUTTONS + ADMIN_BUTTONS)
def test_it_hides_every_button_when_read_only(
    console, ids, settings, admin: Client, button: str
) -> None:
    settings.RSMQ_READ_ONLY = True
    assert button not in _queue_page(admin, console)


def test_it_shows_a_viewer_the_attributes_read_only(console, ids, viewer: Client) -> None:
    page = _queue_page(viewer, console)
    assert "<dt>Visibility timeout</dt><dd>30 s</dd>" in page
    assert 'name="vt"' not in page


@pytest.mark.parametrize(
    ("role", "shown"), [("viewer", False), ("operator", True), ("admin", True)]
)
def test_it_shows_message_actions_to_operators_and_admins(
    console, ids, as_role, role: str, shown: bool
) -> None:
    page = as_role(role).get(console.message(ids[0])).content.decode()
    for button in ['value="requeue"', 'value="visibility"', 'value="move"', 'value="delete"']:
        assert (button in page) is shown


def test_it_hides_message_actions_when_read_only(console, ids, settings, admin: Client) -> None:
    settings.RSMQ_READ_ONLY = True
    page = admin.get(console.message(ids[0])).content.decode()
    assert 'name="action"' not in page


@pytest.mark.parametrize(
    ("role", "shown"), [("viewer", False), ("operator", False), ("admin", True)]
)
def test_it_offers_queue_creation_to_admins_only(
    console, ids, as_role, role: str, shown: bool
) -> None:
    page = as_role(role).get(console.overview()).content.decode()
    assert ('value="create"' in page) is shown


def test_it_hides_queue_creation_when_read_only(console, ids, settings, admin: Client) -> None:
    settings.RSMQ_READ_ONLY = True
    assert 'value="create"' not in admin.get(console.overview()).content.decode()


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_it_shows_the_users_role_in_the_header(console, ids, as_role, role: str) -> None:
    page = as_role(role).get(console.overview()).content.decode()
    assert f'<small class="muted">{role}</small>' in page


# -- CSRF --------------------------------------------------------------------------------


def test_it_gives_htmx_the_csrf_token(console, ids, admin: Client) -> None:
    page = admin.get(console.queue()).content.decode()
    token = re.search(r"""<body hx-headers='\{"x-csrftoken": "(\w+)"\}'>""", page)
    assert token and len(token[1]) == 64


def test_it_accepts_an_htmx_action_with_the_csrf_header(
    console, ids, admin: Client, rsmq: RedisSMQ
) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin.user)
    page = strict.get(console.queue()).content.decode()
    token = re.search(r'"x-csrftoken": "(\w+)"', page)[1]
    data = {"action": "purge", "purge-confirm": "q1"}
    response = strict.post(console.act(), data, HTTP_X_CSRFTOKEN=token, **console.htmx())
    assert response.status_code == 200
    assert rsmq.get_queue_attributes("q1").msgs == 0


def test_it_rejects_an_action_without_a_csrf_token(console, ids, admin: Client, ns_state) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin.user)
    before = ns_state()
    response = strict.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    assert response.status_code == 403
    assert ns_state() == before
