"""tests/serve's fixture: ``clone``, a fresh `git clone` of this branch sharing this .venv
(its helpers, to start `./run` in it and talk to it, are in tests/support/served.py)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.served import ROOT, installed_hash, kill_everything_in


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh `git clone` of this branch (what is committed), sharing this .venv."""
    stamps = [ROOT / ".venv" / ".installed", ROOT / ".venv" / ".installed[dev]"]
    if not any(s.exists() and s.read_text().strip() == installed_hash() for s in stamps):
        pytest.skip("this .venv is not installed for pyproject.toml: run ./run test once")
    where = tmp_path_factory.mktemp("clone") / "console"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where)], check=True)
    committed = hashlib.sha256((where / "pyproject.toml").read_bytes()).hexdigest()
    if committed != installed_hash():
        pytest.skip("pyproject.toml changed since the last commit: commit it first")
    (where / ".venv").symlink_to(ROOT / ".venv")
    yield where
    kill_everything_in(where)
