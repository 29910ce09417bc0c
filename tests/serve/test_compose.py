"""docker-compose.yml, run without Docker: each service's command with its environment,
as local processes, in the order its depends_on asks.

What Docker would do is done here by hand, and only that: ``${…}`` interpolated from a
.env of the test's own; every service name mapped to 127.0.0.1 and every port a service
listens on (its "ports" and "expose") to a free one; the volume paths (/data, /app, /tmp)
to folders of the test; the image's ENV and build steps (collectstatic) from the
Dockerfile; the image's PATH (the project installed: this .venv). Redis and Postgres,
third-party images, are the embedded redis-server and an initdb cluster with the
service's user and database. Then a message sent to the queues' Redis shows on the
overview served by granian, the worker's snapshot lands in Postgres, and the rollups
that beat schedules run on the Spark master (spark-class from the installed pyspark),
their hours loaded into Postgres.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from support.postgres_fixtures import EmbeddedPostgres, postgres_bindir
from support.served import Served

from queues import RedisSMQ
from queues.server import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
# The shell's or .env's values, as a user would set them; fast intervals for a test.
DOTENV = {
    "SECRET_KEY": "compose-test-" + "x" * 40,
    "RSMQ_SNAPSHOT_INTERVAL": "1",
    "RSMQ_PIPELINE_INTERVAL": "15",
    "SPARK_WORKER_CORES": "1",
    "SPARK_WORKER_MEMORY": "1g",
}
VOLUMES = ("/data", "/app", "/tmp")
VOLUME_RE = re.compile(r"(?<![\w./-])/(data|app|tmp)(?=/|$)")
INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


class ComposeError(Exception):
    """What `docker compose` would refuse with."""


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}``, ``${NAME:?message}`` and ``$$``."""

    def one(m: re.Match[str]) -> str:
        if m[0] == "$$":
            return "$"
        name, op, arg = m[1], m[2], m[3]
        have = env.get(name)
        if op and op.startswith(":") and not have:
            have = None
        if have is not None:
            return have
        if op and op.endswith("?"):
            raise ComposeError(f"required variable {name} is missing a value: {arg}")
        return arg or ""

    return INTERPOLATION.sub(one, value)


def resolve(node: Any, env: dict[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [resolve(n, env) for n in node]
    if isinstance(node, dict):
        return {k: resolve(v, env) for k, v in node.items()}
    return node


def compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE.read_text())
    return resolve(raw, DOTENV if env is None else env)


def image_env() -> dict[str, str]:
    """The Dockerfile's ENV (comment lines inside a continued ENV are Docker's too)."""
    lines = [ln for ln in DOCKERFILE.read_text().splitlines() if not ln.strip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def build_steps() -> list[str]:
    """The Dockerfile's RUN steps that are the project's own (not apt, not pip)."""
    return [
        ln[4:]
        for ln in DOCKERFILE.read_text().splitlines()
        if ln.startswith("RUN ") and "manage.py" in ln
    ]


def own_ports(service: dict[str, Any]) -> list[int]:
    ports = [int(str(p).rsplit(":", 1)[-1]) for p in service.get("ports", [])]
    return ports + [int(p) for p in service.get("expose", [])]


@dataclass
class Topology:
    """The compose file's services on this machine."""

    root: Path
    services: dict[str, dict[str, Any]]
    ports: dict[tuple[str, int], int] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    redis: EmbeddedRedis | None = None
    postgres: EmbeddedPostgres | None = None

    def __post_init__(self) -> None:
        for name, service in self.services.items():
            for port in own_ports(service):
                self.ports[(name, port)] = free_port()
        for volume in VOLUMES:
            (self.root / volume.strip("/")).mkdir(parents=True, exist_ok=True)

    # -- what Docker does ----------------------------------------------------------------

    def rewrite(self, value: str, service: str) -> str:
        for (name, port), local in self.ports.items():
            value = re.sub(
                rf"(?<![\w.-]){re.escape(name)}:{port}(?!\d)", f"127.0.0.1:{local}", value
            )
        for (name, port), local in self.ports.items():
            if name == service:
                value = re.sub(rf"(?<![\w.]){port}(?!\d)", str(local), value)
        value = value.replace("0.0.0.0", "127.0.0.1")
        return VOLUME_RE.sub(lambda m: str(self.root / m[1]), value)

    def argv(self, args: list[str], service: str) -> list[str]:
        out = [self.rewrite(a, service) for a in args]
        return [
            "127.0.0.1" if i and out[i - 1] == "--host" and a in self.services else a
            for i, a in enumerate(out)
        ]

    def env(self, service: str) -> dict[str, str]:
        env = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "HOME": str(self.root / "home"),
            "LANG": "C.UTF-8",
            "HOSTNAME": socket.gethostname(),  # Docker sets it; `celery inspect` uses it
        }
        if "JAVA_HOME" in os.environ:
            env["JAVA_HOME"] = os.environ["JAVA_HOME"]
        (self.root / "home").mkdir(exist_ok=True)
        declared = {**image_env(), **(self.services[service].get("environment") or {})}
        for key, value in declared.items():
            value = "" if value is None else str(value)
            env[key] = "127.0.0.1" if value in self.services else self.rewrite(value, service)
        return env

    def log(self, service: str) -> Path:
        return self.root / f"{service}.log"

    def output(self, service: str) -> str:
        path = self.log(service)
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    # -- starting ------------------------------------------------------------------------

    def build(self) -> None:
        """The image's build steps (collectstatic into its STATIC_ROOT)."""
        env = self.env("web")
        for step in build_steps():
            subprocess.run(
                ["/bin/sh", "-c", self.rewrite(step, "web")], cwd=ROOT, env=env, check=True
            )

    def start(self, service: str) -> None:
        spec = self.services[service]
        for dep, cond in self.depends_on(service).items():
            self.wait_for(dep, cond)
        if spec.get("image", "").startswith("redis:"):
            port = self.ports[(service, own_ports(spec)[0])]
            # Its command's arguments (--appendonly yes) on the embedded redis-server.
            self.redis = EmbeddedRedis(
                self.root / "redis", port=port, extra_args=spec["command"][1:]
            ).start()
            self.ready.add(service)
        elif spec.get("image", "").startswith("postgres:"):
            env = spec["environment"]
            bindir = postgres_bindir()
            assert bindir is not None
            pg = EmbeddedPostgres(bindir, user=env["POSTGRES_USER"], dbname=env["POSTGRES_DB"])
            self.postgres = pg.start(port=self.ports[(service, 5432)])
            self.ready.add(service)
        else:
            with self.log(service).open("wb") as out:
                self.processes[service] = subprocess.Popen(
                    self.argv(spec["command"], service), cwd=ROOT, env=self.env(service),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip

    def depends_on(self, service: str) -> dict[str, str]:
        deps = self.services[service].get("depends_on") or {}
        if isinstance(deps, list):
            return dict.fromkeys(deps, "service_started")
        return {name: d.get("condition", "service_started") for name, d in deps.items()}

    def wait_for(self, service: str, condition: str, timeout: float = 240) -> None:
        if condition == "service_started" or service in self.ready:
            return
        deadline = time.monotonic() + timeout
        process = self.processes[service]
        while time.monotonic() < deadline:
            code = process.poll()
            if condition == "service_completed_successfully":
                if code is not None:
                    assert code == 0, f"{service} exited with {code}:\n{self.output(service)}"
                    self.ready.add(service)
                    return
            else:
                assert code is None, f"{service} exited with {code}:\n{self.output(service)}"
                if self.healthy(service):
                    self.ready.add(service)
                    return
            time.sleep(2)
        pytest.fail(f"{service} not {condition} in {timeout} s:\n{self.output(service)}")

    def healthy(self, service: str) -> bool:
        test = self.services[service]["healthcheck"]["test"]
        args = ["/bin/sh", "-c", test[1]] if test[0] == "CMD-SHELL" else test[1:]
        try:
            done = subprocess.run(
                self.argv(args, service), cwd=ROOT, env=self.env(service),
                capture_output=True, timeout=60,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.stop()


def started_order(services: dict[str, dict[str, Any]]) -> list[str]:
    """Every service after what it depends on; those that wait for nothing first (compose
    starts them at once)."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            for dep in services[name].get("depends_on") or {}:
                visit(dep)
            order.append(name)

    for name in sorted(services, key=lambda n: len(services[n].get("depends_on") or {})):
        visit(name)
    return order


def default_services() -> dict[str, dict[str, Any]]:
    """`docker compose up`: the services of no profile."""
    return {k: v for k, v in compose()["services"].items() if not v.get("profiles")}


def project_image(service: dict[str, Any]) -> bool:
    return "build" in service


# -- the file itself ---------------------------------------------------------------------


def test_it_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in DOTENV.items() if k != "SECRET_KEY"}
    with pytest.raises(ComposeError, match="SECRET_KEY is missing a value: set SECRET_KEY"):
        compose(env)


def test_every_service_of_the_image_has_a_healthcheck_but_the_one_off_migrate():
    services = compose()["services"]
    ours = sorted(k for k, v in services.items() if project_image(v))
    assert ours == ["beat", "migrate", "spark-master", "spark-worker", "web", "worker"]
    assert sorted(k for k, v in services.items() if "healthcheck" not in v) == ["migrate"]


def test_the_console_runs_its_jobs_on_the_spark_master():
    services = compose()["services"]
    for name in ("web", "worker", "beat", "migrate"):
        assert services[name]["environment"]["RSMQ_SPARK_MASTER"] == "spark://spark-master:7077"
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    assert 7077 in own_ports(services["spark-master"])


def test_the_sentinel_profile_has_a_master_a_replica_and_three_sentinels():
    sentinel = {k: v for k, v in compose()["services"].items() if v.get("profiles") == ["sentinel"]}
    assert sorted(sentinel) == [
        "redis-master",
        "redis-replica",
        "sentinel-1",
        "sentinel-2",
        "sentinel-3",
    ]
    assert "--replicaof" in sentinel["redis-replica"]["command"]
    assert "sentinel monitor rsmq redis-master 6379 2" in sentinel["sentinel-1"]["command"][-1]


# -- the stack, run ------------------------------------------------------------------------


@pytest.fixture
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    if postgres_bindir() is None:
        pytest.skip("Postgres is not installed (apt-get install postgresql)")
    root = tmp_path_factory.mktemp("compose")
    topology = Topology(root, default_services())
    try:
        yield topology
    finally:
        topology.stop()


def eventually(check: Callable[[], Any], what: str, stack: Topology, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(2)
    logs = "\n".join(f"--- {s}\n{stack.output(s)}" for s in stack.processes)
    pytest.fail(f"{what}: not in {timeout} s\n{logs}")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_stack_serves_snapshots_into_postgres_and_rolls_up_on_spark(stack: Topology):
    order = started_order(stack.services)
    stack.build()
    for service in order:
        stack.start(service)
    for service in order:  # every healthcheck passes
        if service in stack.processes and service != "migrate":
            stack.wait_for(service, "service_healthy")

    web_env = stack.env("web")
    queues = RedisSMQ(url=web_env["RSMQ_REDIS_URL"], ns=web_env["RSMQ_NAMESPACE"])
    queues.create_queue("orders")
    queues.send_message("orders", "hello from compose")
    queues.close()

    # A login as docs/production.md says (docker compose run --rm web … createsuperuser).
    subprocess.run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", "admin",
         "--email", "admin@example.com"],
        cwd=ROOT, env={**web_env, "DJANGO_SUPERUSER_PASSWORD": "compose-admin"}, check=True,
    )  # fmt: skip
    port = stack.ports[("web", 8000)]
    web = Served(ROOT, port, 0, stack.processes["web"], stack.log("web"))
    web.login("admin", "compose-admin")
    page = web.get(f"/c/default/{web_env['RSMQ_NAMESPACE']}/")
    assert page.status == 200, page.text[:500]
    row = re.search(
        r'q/orders/">orders</a>.*?<td class="num"><span class="n"[^>]*>(\d+)<', page.text, re.S
    )
    assert row and row[1] == "1", page.text[:2000]  # its one message

    url = stack.postgres.url if stack.postgres else ""

    def rows(sql: str) -> int:
        with psycopg.connect(url) as db:
            return int(db.execute(sql).fetchone()[0])  # type: ignore[index]

    eventually(
        lambda: rows("SELECT count(*) FROM dashboard_snapshot WHERE queue = 'orders' AND msgs = 1"),
        "a snapshot of the queue in Postgres", stack,
    )  # fmt: skip

    # Beat → the worker → `manage.py pipeline rollups` → the Spark master's executors.
    eventually(
        lambda: rows("SELECT count(*) FROM dashboard_rollup WHERE queue = 'orders'"),
        "the queue's rollups, run on the Spark master, in Postgres", stack, timeout=480,
    )  # fmt: skip
    master = f"http://127.0.0.1:{stack.ports[('spark-master', 8080)]}/json/"
    with urllib.request.urlopen(master, timeout=10) as answer:
        state = json.load(answer)
    apps = [a["name"] for a in state["completedapps"] + state["activeapps"]]
    assert apps, state
    assert [w["state"] for w in state["workers"]] == ["ALIVE"]
