"""The Lua scripts load from a zipped copy of queues/ (as Spark ships it to executors)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import queues
from queues import scripts as S


def test_the_scripts_load_from_a_zipped_copy_of_the_package(tmp_path: Path) -> None:
    package = Path(queues.__file__).parent
    archive = tmp_path / "queues.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in package.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(package.parent))
    code = "import queues, queues.scripts as s; print(queues.__file__); print(s.STATS.sha)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(archive)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == [str(archive / "queues" / "__init__.py"), S.STATS.sha]
