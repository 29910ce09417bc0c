"""The served console: `./run` from a fresh clone of this branch, as users start it
(the ``clone`` fixture is in conftest.py; these helpers are imported by name).

The clone shares this worktree's .venv by a symlink (./run installs nothing: the
pyproject.toml is the one installed), and gets its own data dir and free ports. Every
request is real HTTP over loopback; every process is found through /proc (psutil).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import http.client
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import pytest

from queues.server import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def request(
    port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None,
    body: bytes | None = None, timeout: float = 10,
) -> Response:  # fmt: skip
    """One request on a connection of its own, as curl, scripts and Prometheus make them."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        conn.close()


@dataclass
class Served:
    """A running ./run: its clone, ports, process and output."""

    clone: Path
    port: int
    redis_port: int
    process: subprocess.Popen[bytes]
    log: Path
    cookies: dict[str, str] = field(default_factory=dict)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return request(self.port, path, headers={"Cookie": cookie, **(headers or {})})

    def login(self, user: str = "admin", password: str = "admin") -> None:
        page = request(self.port, "/login/")
        self.cookies.update(cookies(page))
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, page.text[:500]
        form = urlencode(
            {"csrfmiddlewaretoken": html.unescape(token[1]), "username": user, "password": password}
        ).encode()
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        answer = request(
            self.port, "/login/", "POST", body=form,
            headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
                     "Referer": f"http://127.0.0.1:{self.port}/login/"},
        )  # fmt: skip
        assert answer.status == 302, answer.text[:500]
        self.cookies.update(cookies(answer))

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(
                    f"./run exited with {self.process.returncode}:\n{self.output()[-3000:]}"
                )
            try:
                # Serving, and ./run has said so (it prints the URL once /healthz answers).
                up = request(self.port, "/healthz", timeout=2).status == 200
                if up and "RSMQ Console: http" in self.output():
                    return
            except OSError:
                pass
            time.sleep(0.3)
        pytest.fail(f"./run did not serve /healthz in {timeout} s:\n{self.output()[-3000:]}")

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            kill_everything_in(self.clone)


def cookies(response: Response) -> dict[str, str]:
    out = {}
    for name, value in re.findall(
        r"(?:^|, )(\w+)=([^;]*);", response.headers.get("set-cookie", "")
    ):
        out[name] = value
    return out


def processes_in(directory: Path) -> list[psutil.Process]:
    """Every process started from ``directory`` (its cwd or its command line)."""
    found = []
    where = str(directory)
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            cmdline = " ".join(p.info["cmdline"] or [])
            if p.pid != os.getpid() and (
                where in cmdline or (p.info["cwd"] or "").startswith(where)
            ):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def kill_everything_in(directory: Path) -> None:
    """Never leave a process of a clone behind, whatever a test did (by pid, SIGKILL)."""
    for p in processes_in(directory):
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def installed_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def run_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: none of the test session's settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "DJANGO_", "PYTEST_", "CELERY_"))
        and k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "ALLOWED_HOSTS")
    }
    env["RSMQ_PIPELINE_INTERVAL"] = "0"  # no Spark started by beat in these tests
    env.update(extra)
    return env


def start(
    clone: Path, *args: str, log_name: str = "run.log", host: str = "127.0.0.1", **env: str
) -> Served:
    port, redis_port = free_port(), free_port()
    log = clone.parent / log_name
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(clone / "run"), f"{host}:{port}", "--redis-port", str(redis_port), *args],
            cwd=clone, env=run_env(**env), stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,  # no terminal, as systemd or Docker
        )  # fmt: skip
    return Served(clone, port, redis_port, process, log)


@contextlib.contextmanager
def serving(clone: Path, *args: str, log_name: str = "run.log", **env: str) -> Iterator[Served]:
    """``./run *args`` in ``clone``, ready and logged in as the admin; stopped after."""
    console = start(clone, *args, log_name=log_name, **env)
    try:
        console.wait_ready()
        console.login()
        yield console
    finally:
        console.stop()


# -- the HTTP API, as a script with a token uses it ------------------------------------


def make_token(served: Served, name: str, role: str, per_minute: int = 1000) -> str:
    """An API token made by the logged-in admin on /tokens/ (shown once, read from the page)."""
    page = served.get("/tokens/")
    served.cookies.update(cookies(page))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf, page.text[:500]
    form = {"csrfmiddlewaretoken": html.unescape(csrf[1]), "name": name, "role": role,
            "per_minute": str(per_minute)}  # fmt: skip
    answer = request(
        served.port, "/tokens/", "POST", body=urlencode(form).encode(),
        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in served.cookies.items()),
                 "Content-Type": "application/x-www-form-urlencoded",
                 "Referer": f"http://127.0.0.1:{served.port}/tokens/"},
    )  # fmt: skip
    assert answer.status == 200, answer.text[:500]
    found = re.search(r'<code id="new-token">([^<]+)</code>', answer.text)
    assert found, answer.text[:1000]
    return found[1]


def call(served: Served, method: str, path: str, token: str, body: Any = None) -> Response:
    """One API call with ``token`` (none: no Authorization header), a JSON body if any."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    return request(served.port, path, method, headers=headers, body=data)
