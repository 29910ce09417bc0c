"""A real Spark standalone cluster for the tests: a master and one worker started from the
installed pyspark's own ``spark-class`` (the same Spark the driver runs), on free ports,
with their work and logs in a temp dir; stopped at the end of the test session.

tests/pipeline/conftest.py imports its
``spark_cluster`` fixture (a ``Cluster``: its master URL and the environment a driver
process needs); bench/pipeline.py starts one with ``standalone()``. Drivers run as their
own processes (``python -m pipeline ... --master``):
a process has one SparkContext, and the tests' own local[2] one stays. Without Java the
tests that use it are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.spark import java_problem
from support.processes import stop

READY_WITHIN = 180.0  # s: two JVMs starting on a shared 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Cluster:
    master: str  # spark://127.0.0.1:PORT
    ui: str  # the master's web UI (its /json says which workers are alive)
    env: dict[str, str]  # for a driver process: executors run this interpreter
    logs: Path

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.ui}/json", timeout=5) as r:
            state = json.load(r)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def log_tail(self, lines: int = 40) -> str:
        out = []
        for f in sorted(self.logs.glob("*.log")):
            out.append(f"--- {f.name}")
            out += f.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out)


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _env(tmp: Path) -> dict[str, str]:
    import pyspark

    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        # The driver's choice of Python is the executors': this interpreter, whose
        # environment has pyspark, redis and pyarrow (and the project, installed).
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


@contextmanager
def standalone(tmp: Path) -> Iterator[Cluster]:
    """A master and one worker (2 cores, 2 GB) started in ``tmp``, stopped after."""
    (tmp / "logs").mkdir(parents=True, exist_ok=True)
    (tmp / "work").mkdir(exist_ok=True)
    env = _env(tmp)
    port, ui_port, worker_port, worker_ui = (free_port() for _ in range(4))
    master = f"spark://127.0.0.1:{port}"
    cluster = Cluster(master, f"http://127.0.0.1:{ui_port}", env, tmp / "logs")
    cls = str(spark_class())
    procs = [
        _start(
            [
                cls,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ],
            env,
            tmp / "logs" / "master.log",
        )  # fmt: skip
    ]
    try:
        procs.append(
            _start(
                [
                    cls,
                    "org.apache.spark.deploy.worker.Worker",
                    master,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(worker_port),
                    "--webui-port",
                    str(worker_ui),
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(tmp / "work"),
                ],
                env,
                tmp / "logs" / "worker.log",
            )  # fmt: skip
        )
        deadline = time.monotonic() + READY_WITHIN
        while True:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a Spark daemon exited:\n{cluster.log_tail()}")
            try:
                if cluster.alive_workers() >= 1:
                    break
            except OSError:
                pass  # the master's UI is not up yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"no worker alive after {READY_WITHIN:.0f} s:\n"
                                   f"{cluster.log_tail()}")  # fmt: skip
            time.sleep(0.5)
        yield cluster
    finally:
        for p in reversed(procs):
            stop(p)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    problem = java_problem()
    if problem:
        pytest.skip(problem)
    with standalone(tmp_path_factory.mktemp("spark-standalone")) as cluster:
        yield cluster
