"""The single sign-on tests' OpenID Connect provider (tests/support/oidc_provider/): a real
django-oauth-toolkit server in a process of its own on a free port, and its commands (a
user's groups changed, their sessions revoked) run as the provider's own processes; and
a browser's part of a sign-in, for the tests that drive the console with Django's test
client (requests: the provider's login form, its redirect back with the code)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from queues.server import free_port
from support.processes import stop

TESTS = Path(__file__).resolve().parents[1]
CLIENT_ID, CLIENT_SECRET = "rsmq-console", "console-secret-for-tests"
USER, PASSWORD = "alice", "alice-password"
MAIN = "support.oidc_provider.main"


@dataclass
class Provider:
    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/o"

    def settings(self) -> dict[str, object]:
        """The console's settings for this provider (pytest-django's ``settings``)."""
        return {
            "RSMQ_OIDC_ISSUER": self.issuer,
            "RSMQ_OIDC_CLIENT_ID": CLIENT_ID,
            "RSMQ_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "RSMQ_OIDC_SCOPES": ["openid", "profile", "email", "groups"],
        }

    def run(self, *args: str) -> None:
        """One of the provider's commands (main.py), in a process of its own."""
        subprocess.run([sys.executable, "-m", MAIN, *args],
                       env=_env(self.directory), check=True, timeout=60)  # fmt: skip

    def set_groups(self, user: str, *groups: str) -> None:
        self.run("groups", user, *groups)

    def revoke(self, user: str) -> None:
        self.run("revoke", user)

    def log(self) -> str:
        return (self.directory / "provider.log").read_text(errors="replace")


def _env(directory: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(PYTHONPATH=str(TESTS), PROVIDER_DIR=str(directory),
               DJANGO_SETTINGS_MODULE="support.oidc_provider.settings", **extra)  # fmt: skip
    return env


@contextlib.contextmanager
def provider(
    directory: Path, redirect_uris: list[str], groups: tuple[str, ...] = (),
    access_token_seconds: int = 36000,
) -> Iterator[Provider]:  # fmt: skip
    """The provider serving (user ``alice`` in ``groups``), stopped after."""
    port = free_port()
    env = _env(directory, PROVIDER_GROUPS=",".join(groups),
               PROVIDER_ACCESS_TOKEN_SECONDS=str(access_token_seconds))  # fmt: skip
    with open(directory / "provider.log", "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", MAIN, "serve", str(port), *redirect_uris], env=env,
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    served = Provider(port, directory, process)
    try:
        _wait(served)
        yield served
    finally:
        stop(process)


def _wait(served: Provider, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise RuntimeError(f"the provider exited:\n{served.log()[-3000:]}")
        try:
            found = requests.get(f"{served.issuer}/.well-known/openid-configuration", timeout=2)
            if found.status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the provider did not serve in {timeout} s:\n{served.log()[-3000:]}")


def sign_in_at(authorize_url: str, user: str = USER, password: str = PASSWORD) -> str:
    """What a browser does at the provider: open the authorization URL, sign in on its
    form, and follow it back: the console's callback URL it redirects to (with the code)."""
    browser = requests.Session()
    page = browser.get(authorize_url, timeout=10)  # to the provider's login form
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    form = {"csrfmiddlewaretoken": token[1], "username": user, "password": password,
            "next": parse_qs(urlsplit(page.url).query)["next"][0]}  # fmt: skip
    answer = browser.post(page.url, data=form, headers={"Referer": page.url},
                          allow_redirects=False, timeout=10)  # fmt: skip
    assert answer.status_code == 302, answer.text[:500]
    # The login's redirect to the authorization endpoint, which redirects to the console.
    back = browser.get(urljoin(page.url, answer.headers["Location"]), allow_redirects=False,
                       timeout=10)  # fmt: skip
    assert back.status_code == 302, back.text[:500]
    return back.headers["Location"]
