"""Spark needs Java 17+: where it is missing or too old, the pipeline says so in one line
with what to install (pipeline/spark.py, python -m pipeline)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.spark import java_major, java_problem

ROOT = Path(__file__).resolve().parents[2]


def fake_java(tmp_path: Path, version_line: str) -> Path:
    """A JAVA_HOME whose bin/java prints ``version_line`` as `java -version` does."""
    bin_dir = tmp_path / "jdk" / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return bin_dir.parent


@pytest.mark.parametrize(
    "output, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ("no version here", None),
    ],
)
def test_java_major_reads_java_version(output, major):
    assert java_major(output) == major


def test_no_java_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    problem = java_problem()
    assert "Java 17+" in problem and "no java on PATH" in problem
    assert "apt-get install openjdk-17-jre-headless" in problem
    assert "\n" not in problem


def test_an_old_java_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, 'openjdk version "11.0.2"')))
    assert "is Java 11" in java_problem()


def test_a_recent_java_is_fine(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, 'openjdk version "17.0.15"')))
    assert java_problem() is None


def test_the_command_line_says_it_in_one_line_and_fails(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "nothing")}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "rollups", "--lake", "x", "--out", "y"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "needs Java 17+" in line and "openjdk-17-jre-headless" in line
