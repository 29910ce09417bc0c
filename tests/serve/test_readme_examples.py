"""Every block marked `<!-- runnable -->` in README.md and docs/*.md runs, in order, as typed,
against a fresh embedded Redis: an example that stops working fails the suite. Every other
fenced python / sh / console block says why it is not run (`<!-- not run: reason -->` on the
line before it), so a new example can't silently rot.

The order: README.md, then docs/*.md by name, each top to bottom.

Shell blocks run in bash (-euo pipefail) with .venv/bin on PATH, from a copy of the
worktree (what a user has after a clone); Python blocks run one after another in one
namespace (like a session typed in order). Options after `runnable`: `file=PATH` writes
the block to PATH instead of running it; `until=SIGTERM` runs a server-like command for a
few seconds, then expects it to stop cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues.server import EmbeddedRedis

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- runnable(?P<opts>[^>]*)-->\n```(?P<lang>\w+)\n(?P<code>.*?)\n```", re.S)
CHECKED = ("python", "sh", "console")  # the languages a reader would type
MARK = re.compile(r"<!-- (runnable\b[^>]*|not run: \S[^>]*)-->")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks() -> list[tuple[str, str, dict[str, str], str]]:
    """(document, language, options, code) of every runnable block, in order."""
    found = []
    for doc in documents():
        for m in BLOCK.finditer(doc.read_text()):
            opts = dict(o.split("=", 1) for o in m["opts"].split())
            found.append((str(doc.relative_to(ROOT)), m["lang"], opts, m["code"]))
    return found


def test_the_docs_mark_their_examples_runnable() -> None:
    langs = [lang for _, lang, _, _ in blocks()]
    assert langs.count("sh") >= 5 and langs.count("python") >= 3, langs
    # Every marker is followed by a fenced block it applies to.
    markers = sum(doc.read_text().count("<!-- runnable") for doc in documents())
    assert markers == len(langs)


def test_every_example_is_run_or_says_why_not() -> None:
    unmarked = []
    for doc in documents():
        lines = doc.read_text().splitlines()
        inside = False
        for i, line in enumerate(lines):
            if not line.startswith("```"):
                continue
            if not inside and line[3:].strip() in CHECKED:
                before = lines[i - 1] if i else ""
                if not MARK.fullmatch(before.strip()):
                    unmarked.append(f"{doc.relative_to(ROOT)}:{i + 1}: {line}")
            inside = not inside
    assert not unmarked, "mark these <!-- runnable --> or <!-- not run: why -->:\n" + "\n".join(
        unmarked
    )


@pytest.fixture
def copy(tmp_path: Path) -> Iterator[Path]:
    """The worktree's files (as they are now, committed or not) and its .venv."""
    where = tmp_path / "console"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for name in files:
        if (ROOT / name).is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, where / name)
    (where / ".venv").symlink_to(ROOT / ".venv")
    yield where


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A fresh Redis of this test's own, stopped whatever happens."""
    with EmbeddedRedis(tmp_path / "redis") as server:
        yield server


def test_every_runnable_readme_block_runs_in_order(
    copy: Path, redis: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "PYTEST_", "CELERY_")) and k not in ("DEBUG", "SECRET_KEY")
    }  # fmt: skip
    env.update(
        RSMQ_REDIS_URL=redis.url,
        RSMQ_DATA_DIR=str(copy / ".data"),
        PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # What `./run` did before the README's examples are typed in another terminal.
    (copy / ".data").mkdir()
    subprocess.run(
        [str(ROOT / ".venv/bin/python"), "manage.py", "migrate", "-v0"], cwd=copy, env=env,
        check=True,
    )  # fmt: skip
    namespace: dict[str, object] = {"__name__": "readme"}
    java = shutil.which("java") is not None
    for doc, lang, opts, code in blocks():
        if not java and ("pipeline" in code and "manage.py check" not in code):
            continue  # Spark needs Java 17+ (installed here and by .ci/run)
        where = f"{doc} block:\n{code}"
        if "file" in opts:
            (copy / opts["file"]).parent.mkdir(parents=True, exist_ok=True)
            (copy / opts["file"]).write_text(code + "\n")
        elif lang == "python":
            monkeypatch.chdir(copy)
            exec(compile(code, doc, "exec"), namespace)  # noqa: S102
        elif opts.get("until") == "SIGTERM":
            run_until_sigterm(code, copy, env, where)
        else:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code], cwd=copy, env=env,
                capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert done.returncode == 0, f"{where}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"


def run_until_sigterm(code: str, cwd: Path, env: dict[str, str], where: str) -> None:
    process = subprocess.Popen(
        ["bash", "-c", f"exec {code.strip()}"], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        time.sleep(6)
        assert process.poll() is None, f"{where}\nexited:\n{process.communicate()[0][-3000:]}"
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0, f"{where}\n{out[-3000:]}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
