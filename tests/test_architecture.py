"""The layout's rules, read from the source with ``ast`` (ARCHITECTURE.md): no import
cycles in queues/, dashboard/ and pipeline/; the console's pages and its API are two
surfaces that depend on the same modules, never on each other; queues/ and pipeline/
never import Django; no Redis key is spelled outside queues/.

What counts as an import: every ``import`` and ``from … import`` anywhere in a module —
at module level, inside a function (a lazy import that dodges a cycle at load time is
still a cycle), and under ``if TYPE_CHECKING:`` (a type-only import back is still two
modules that each need the other). Importing ``a.b.c`` runs ``a/b/__init__.py`` first,
so it is an edge to ``a.b`` as well (but not to the importer's own packages, which are
loaded before it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("queues", "dashboard", "pipeline")

Graph = Mapping[str, frozenset[str]]


def modules(packages: tuple[str, ...] = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """Every module of ``packages``: its dotted name → (file, is it a package)."""
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def _imported(name: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The dotted names an import statement asks for (modules or names in modules)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        here = name.split(".") if is_package else name.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join(here + ([node.module] if node.module else []))
    for alias in node.names:
        yield f"{base}.{alias.name}"


def graph(known: Mapping[str, tuple[Path, bool]]) -> dict[str, frozenset[str]]:
    """Module → the modules of ours it imports (package ``__init__``s included)."""
    out: dict[str, frozenset[str]] = {}
    for name, (path, is_package) in known.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(name, is_package, node):
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:i])
                    own = name == prefix or name.startswith(prefix + ".")
                    if prefix in known and not own:
                        edges.add(prefix)
        out[name] = frozenset(edges)
    return out


def cycles(g: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative),
    each as one cycle through it: a → b → … → a."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(g[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(_cycle_through(g, set(component)))
    return components


def _cycle_through(g: Graph, component: set[str]) -> list[str]:
    """One cycle inside a strongly connected component, by breadth-first search back to
    its first module: the shortest, so the message names the imports to look at."""
    start = min(component)
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(g[node] & component):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if nxt not in came:
                    came[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"{sorted(component)} is no cycle")


def layers(g: Graph, depth: int) -> dict[str, frozenset[str]]:
    """The graph with every module named by its first ``depth`` parts (dashboard.api.x
    → dashboard.api): which parts of the code depend on which."""

    def cut(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for name, edges in g.items():
        out.setdefault(cut(name), set()).update(cut(e) for e in edges if cut(e) != cut(name))
    return {k: frozenset(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def ours() -> dict[str, frozenset[str]]:
    return graph(modules())


def test_no_module_imports_one_that_imports_it_back(ours: Graph) -> None:
    found = cycles(ours)
    assert not found, "import cycles: " + "; ".join(" → ".join(c) for c in found)


def test_the_pages_and_the_api_do_not_import_each_other(ours: Graph) -> None:
    """dashboard/views/ and dashboard/api/ are two surfaces over the same modules (the
    action table is dashboard/acting/actions.py): neither imports the other, nor does anything
    below them (no subpackage of the console imports another in both directions)."""
    subpackages = layers(ours, 2)
    assert "dashboard.api" not in subpackages["dashboard.views"]
    assert "dashboard.views" not in subpackages["dashboard.api"]
    console = {k for k in subpackages if k.startswith("dashboard.")}
    found = cycles({k: subpackages[k] & console for k in console})
    assert not found, "parts of the console that import each other: " + "; ".join(
        " → ".join(c) for c in found
    )


#: dashboard/'s rooms, lowest first: a room imports only rooms above it in this list (a
#: room's modules import each other freely). ARCHITECTURE.md describes each.
ROOMS = [
    ("dashboard.settings", "dashboard.celery", "dashboard.beat", "dashboard.models"),
    ("dashboard.places",),  # which Redis, which namespace
    ("dashboard.web",),  # the error table, what every request meets
    ("dashboard.audit",),
    ("dashboard.access",),
    ("dashboard.snapshots",),
    ("dashboard.display",),
    ("dashboard.triage",),
    ("dashboard.acting",),
    ("dashboard.analytics",),
    ("dashboard.api",),
    ("dashboard.probes",),
    ("dashboard.alerting",),
    ("dashboard.templatetags",),
    ("dashboard.views",),
    ("dashboard.serving",),
    ("dashboard.management",),
    ("dashboard", "dashboard.urls", "dashboard.tasks", "dashboard.apps", "dashboard.admin",
     "dashboard.asgi", "dashboard.wsgi", "dashboard.migrations"),
]  # fmt: skip


def test_each_room_of_the_console_imports_only_the_rooms_below_it(ours: Graph) -> None:
    rank = {room: i for i, rooms in enumerate(ROOMS) for room in rooms}
    rooms = layers(ours, 2)
    unknown = sorted(r for r in rooms if r.startswith("dashboard") and r not in rank)
    assert not unknown, f"rooms that ROOMS does not place: {unknown}"
    upward = [
        f"{a} → {b}"
        for a, edges in rooms.items()
        if a in rank
        for b in edges
        if b in rank and rank[b] >= rank[a] and not (rank[a] == 0 and rank[b] == 0)
    ]
    assert not upward, "imports of a room at or above the importer's: " + "; ".join(sorted(upward))


def test_the_console_has_a_few_top_level_modules() -> None:
    """Django's own (settings, urls, models, apps, admin, asgi, wsgi), Celery's app and
    tasks: everything else lives in a room, so a folder name answers "where is X"."""
    top = sorted(p.stem for p in (ROOT / "dashboard").glob("*.py") if p.stem != "__init__")
    assert top == [
        "admin", "apps", "asgi", "beat", "celery", "models", "settings", "tasks", "urls", "wsgi"
    ]  # fmt: skip


@pytest.mark.parametrize("package", ["queues", "pipeline"])
def test_the_core_and_the_pipeline_never_import_django(package: str) -> None:
    offenders = []
    for name, (path, _) in modules((package,)).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(name, False, node):
                    if target.split(".")[0] == "django" or (
                        isinstance(node, ast.ImportFrom) and node.module == "django"
                    ):
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"{package}/ imports Django: {offenders}"


#: The key parts only RSMQ's layout uses (queues/ops/base.py): the set of queue names
#: ({ns}:QUEUES), a queue's hash ({ns}:{q}:Q), the console's own keys ({ns}:{q}:x:…).
KEY_PARTS = (":QUEUES", ":Q", ":x:")


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_redis_key_is_spelled_outside_the_core() -> None:
    """No string outside queues/ holds a part of an RSMQ key (a docstring's prose that
    names the layout is no key: only strings that end with or hold a key part as code
    would, without spaces)."""
    offenders = []
    for path, _ in modules(("dashboard", "pipeline")).values():
        for line, text in _strings(ast.parse(path.read_text(), str(path))):
            if " " in text or "\n" in text:
                continue  # prose, not a key
            if text.endswith((":Q", ":QUEUES")) or ":x:" in text or text in ("QUEUES", ":Q"):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert not offenders, f"Redis keys built outside queues/: {offenders}"


def test_the_key_check_sees_a_key_when_there_is_one() -> None:
    """The check above can fail: a key spelled as the core spells it is found."""
    tree = ast.parse('KEY = "rsmq:" + "orders" + ":Q"\nF = f"{ns}:{q}:x:failures"')
    found = [t for _, t in _strings(tree) if t.endswith(":Q") or ":x:" in t]
    assert found == [":Q", ":x:failures"]


def test_the_cycle_check_finds_a_cycle_and_names_it(tmp_path: Path) -> None:
    """The checker itself, on a package of its own: a lazy import inside a function and
    a TYPE_CHECKING import are edges; ``from . import x`` is an edge to x; a parent
    package's ``__init__`` is an edge of whoever imports below it."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "sub" / "__init__.py").write_text("from . import d\n")
    (pkg / "sub" / "d.py").write_text("")
    (pkg / "e.py").write_text("from pkg.sub.d import x\n")
    (pkg / "f.py").write_text("from .sub import d\n")
    known: dict[str, tuple[Path, bool]] = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(tmp_path).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        known[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    g = graph(known)
    assert g["pkg.e"] == {"pkg.sub", "pkg.sub.d"}
    assert g["pkg.f"] == {"pkg.sub", "pkg.sub.d"}
    assert g["pkg.sub"] == {"pkg.sub.d"}  # its own module; not itself
    assert cycles(g) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    (pkg / "c.py").write_text("")
    assert cycles(graph(known)) == []


def test_every_action_in_the_table_has_a_handler_on_its_page() -> None:
    """The pages bind the action table (dashboard/acting/actions.py) to handlers: the same
    names, so no button is in one and not the other."""
    from dashboard.acting.actions import FAILING_ACTIONS, MESSAGE_ACTIONS, QUEUE_ACTIONS
    from dashboard.views.failing import FAILING_HANDLERS
    from dashboard.views.message import MESSAGE_HANDLERS
    from dashboard.views.queue_actions import QUEUE_HANDLERS

    assert set(QUEUE_HANDLERS) == set(QUEUE_ACTIONS)
    assert set(MESSAGE_HANDLERS) == set(MESSAGE_ACTIONS)
    assert set(FAILING_HANDLERS) == set(FAILING_ACTIONS)


def test_htmx_headers_are_set_by_django_htmx() -> None:
    """HX-* response headers come from django_htmx.http's helpers, never spelled by hand."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path, _ in modules(("dashboard",)).values()
        for line, text in _strings(ast.parse(path.read_text(), str(path)))
        if text.upper().startswith("HX-")
    ]
    assert not offenders, f"HX-* headers set by hand: {offenders}"


def test_tests_are_test_modules_and_their_helpers_are_in_tests_support() -> None:
    """Under tests/, a folder holds its test modules and its conftest.py; every helper they
    share is a module of tests/support/ (imported as ``support.…``), and no test module
    imports another (nor a folder's conftest)."""
    tests = ROOT / "tests"
    support = tests / "support"
    files = [p for p in sorted(tests.rglob("*.py")) if "node_modules" not in p.parts]
    helpers = [
        str(p.relative_to(ROOT))
        for p in files
        if support not in p.parents and not p.name.startswith("test_") and p.name != "conftest.py"
    ]
    assert not helpers, f"helpers outside tests/support/: {helpers}"
    local = {p.stem for p in files if support not in p.parents}  # test modules, conftest
    offenders = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
                for name in names
                if name.split(".")[0] in local or name.split(".")[-1].startswith("test_")
            ]
    assert not offenders, f"test modules imported: {offenders}"
