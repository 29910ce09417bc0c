"""`manage.py check --deploy` with docs/production.md's HTTPS proxy block: nothing to say."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def production_block() -> str:
    guide = (ROOT / "docs" / "production.md").read_text()
    section = guide[guide.index("## Behind an HTTPS proxy") :]
    block = re.search(r"```sh\n(.*?)\n```", section, re.S)
    assert block, "the HTTPS proxy section has its settings in a sh block"
    return block[1]


def test_check_deploy_passes_with_the_documented_production_settings(tmp_path: Path) -> None:
    code = production_block()
    assert "check --deploy" in code
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "PYTEST_", "SECURE_")) and k not in ("DEBUG", "SECRET_KEY")
    }  # fmt: skip
    env.update(RSMQ_DATA_DIR=str(tmp_path), PATH=f"{ROOT / '.venv/bin'}:{os.environ['PATH']}")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


def test_check_deploy_warns_without_them(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "PYTEST_", "SECURE_")) and k not in ("DEBUG", "SECRET_KEY")
    }  # fmt: skip
    env["RSMQ_DATA_DIR"] = str(tmp_path)
    done = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "check", "--deploy", "--fail-level",
         "WARNING"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W009", "security.W012"):
        assert warning in done.stderr + done.stdout
