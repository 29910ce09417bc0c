"""The original Node rsmq 0.12.4 as a test peer: ``NodeRsmq`` runs a batch of its operations
in one node process (tests/node/driver.js, rsmq pinned by tests/node/package-lock.json).

Test modules import the fixtures ``node_driver`` and ``node`` from here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.parallel import exclusive

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
RSMQ_VERSION = "0.12.4"


# -- the Node side ------------------------------------------------------------------


class NodeError(AssertionError):
    pass


class NodeRsmq:
    """The original rsmq 0.12.4 on one namespace: ``run`` a batch of ops in one node process."""

    def __init__(self, driver: Path, port: int, ns: str, realtime: bool = False) -> None:
        self.driver = driver
        self.config = json.dumps({"port": port, "ns": ns, "realtime": realtime})

    def run(self, *ops: tuple[str, dict[str, Any]]) -> list[Any]:
        """Each op is (method, options); returns each result or {"error", "message"}."""
        proc = subprocess.run(
            ["node", str(self.driver), self.config],
            input=json.dumps(ops),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if proc.returncode != 0:
            raise NodeError(f"node driver failed ({proc.returncode}): {proc.stderr}")
        return json.loads(proc.stdout)

    def call(self, method: str, **options: Any) -> Any:
        """One op; an rsmq error raises NodeError."""
        (result,) = self.run((method, options))
        if isinstance(result, dict) and "error" in result:
            raise NodeError(f"{method}: {result}")
        return result


def ref(index: int, field: str | None = None) -> dict[str, Any]:
    """In a batch: the ``field`` of the result of op ``index`` (see driver.js)."""
    return {"$ref": [index, field]}


def install() -> Path:
    """tests/node/driver.js, with rsmq 0.12.4 installed by npm when node_modules is missing."""
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        pytest.skip("the Node interop tests need `node` and `npm` on PATH")
    installed = NODE_DIR / "node_modules" / "rsmq" / "package.json"
    with exclusive(NODE_DIR):  # one worker installs, the others wait for it
        if not installed.exists():
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=NODE_DIR,
                check=True,
                capture_output=True,
                timeout=300,
            )
    assert json.loads(installed.read_text())["version"] == RSMQ_VERSION
    return NODE_DIR / "driver.js"
