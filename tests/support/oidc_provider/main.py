"""The provider's commands, each in a process of its own (tests/support/oidc.py runs them):

serve PORT REDIRECT_URI…   make the database, the user and the client, then serve
groups USER [GROUP…]       set the user's groups (what the groups claim says next)
revoke USER                end the user's sessions: every token of theirs deleted
"""

from __future__ import annotations

import os
import sys

import django

CLIENT_ID, CLIENT_SECRET = "rsmq-console", "console-secret-for-tests"
USER, PASSWORD = "alice", "alice-password"


def serve(port: str, *redirect_uris: str) -> None:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    user = User.objects.create_user(USER, email="alice@example.com", password=PASSWORD)
    for name in os.environ.get("PROVIDER_GROUPS", "").split(","):
        if name:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    Application.objects.create(
        name="RSMQ Console", client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(redirect_uris), algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )  # fmt: skip
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, use_threading=True)


def groups(username: str, *names: str) -> None:
    from django.contrib.auth.models import Group, User

    user = User.objects.get(username=username)
    user.groups.set([Group.objects.get_or_create(name=n)[0] for n in names])


def revoke(username: str) -> None:
    from oauth2_provider.models import AccessToken, Grant, IDToken, RefreshToken

    for model in (RefreshToken, AccessToken, IDToken, Grant):
        model.objects.filter(user__username=username).delete()


def rename(username: str, new: str) -> None:
    from django.contrib.auth.models import User

    User.objects.filter(username=username).update(username=new)


def add(username: str, password: str) -> None:
    from django.contrib.auth.models import User

    User.objects.create_user(username, password=password)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "support.oidc_provider.settings")
    django.setup()
    command, *args = sys.argv[1:]
    commands = {"serve": serve, "groups": groups, "revoke": revoke, "rename": rename, "add": add}
    commands[command](*args)
