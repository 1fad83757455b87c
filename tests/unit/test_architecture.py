"""The layers and the order of capabilities of docs/ARCHITECTURE.md hold: no module imports a higher layer, no
capability imports one of its own rank or above (the kernel none), and no import circle joins modules.

Read from the source with ``ast`` (nothing is imported). Every import counts, at module level or inside a
function; an import under ``if TYPE_CHECKING:`` counts for the layers and the order but not for circles, as it
never runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ledger", "projections", "api")

# Lowest first. A module may import modules of its own layer or of a lower one, never of a higher one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground floor", ("ledger.core",)),
    ("read models", ("projections",)),
    ("kernel", ("ledger.kernel",)),
    (
        "capabilities",
        (
            "ledger.keys",
            "ledger.sessions",
            "ledger.anchor",
            "ledger.memory",
            "ledger.workflow",
            "ledger.enforcement",
            "ledger.hooks",
            "ledger.brain",
            "ledger.audit",
        ),
    ),
    ("façade", ("ledger.service", "ledger.compose", "ledger")),  # the façade and the composition root
    ("adapters", ("api",)),
)


# The order of capabilities, lowest first: a package of ``ledger`` may import packages of a lower rank only — not
# one of its own rank, not one above. The kernel is the floor: it imports no capability. What two capabilities
# share moves down (to a lower capability, or to ``ledger.core``), never sideways.
ORDER: tuple[tuple[str, ...], ...] = (
    ("kernel",),
    ("keys",),
    ("sessions",),
    ("anchor", "hooks", "memory"),
    ("audit", "brain"),
    ("workflow",),
    ("enforcement",),
)
OUTSIDE_THE_ORDER = ("core", "service", "compose")  # the ground floor below it; the façade and the root above


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the longest prefix naming ``module``."""
    best, depth = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = i, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer of docs/ARCHITECTURE.md: add it to LAYERS and the document")
    return best


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    runtime: bool  # False under ``if TYPE_CHECKING:``


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """The imports of one module that name a module of this project (``from a import b`` names ``a.b`` when
    ``b`` is a module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, runtime: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit_stmt(stmt, False)
                for stmt in child.orelse:
                    visit_stmt(stmt, runtime)
                continue
            visit_stmt(child, runtime)

    def visit_stmt(node: ast.AST, runtime: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, runtime)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base, node.lineno, runtime)
        else:
            visit(node, runtime)

    def add(target: str, line: int, runtime: bool) -> None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append(Import(name, target, line, runtime))

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return found


def import_graph() -> list[Import]:
    known = modules()
    return [imp for name, path in known.items() for imp in imports_of(name, path, known)]


def circles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over runtime imports."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.runtime:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def package_of(module: str) -> str | None:
    """The capability (or ``kernel``) a module of ``ledger`` belongs to; ``None`` outside the order."""
    parts = module.split(".")
    if parts[0] != "ledger" or len(parts) < 2 or parts[1] in OUTSIDE_THE_ORDER:
        return None
    return parts[1]


def rank_of(package: str, order: tuple[tuple[str, ...], ...] = ORDER) -> int:
    for rank, names in enumerate(order):
        if package in names:
            return rank
    raise AssertionError(
        f"ledger.{package} has no rank in the order of docs/ARCHITECTURE.md: add it to ORDER and the document"
    )


def out_of_order(edges: list[Import], order: tuple[tuple[str, ...], ...] = ORDER) -> list[str]:
    """The imports from one package of the order to another of the same rank or above."""
    found = []
    for e in edges:
        source, target = package_of(e.source), package_of(e.target)
        if source is None or target is None or source == target:
            continue
        if rank_of(target, order) >= rank_of(source, order):
            found.append(f"{e.source} (line {e.line}, {source}) imports {e.target} ({target})")
    return found


def package_graph(edges: list[Import]) -> dict[str, set[str]]:
    """Which packages of the order import which (runtime and type-checking imports alike)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        source, target = package_of(e.source), package_of(e.target)
        if source is not None and target is not None and source != target:
            graph.setdefault(source, set()).add(target)
    return graph


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{e.source} (line {e.line}, {LAYERS[layer_of(e.source)][0]}) imports {e.target} "
        f"({LAYERS[layer_of(e.target)][0]})"
        for e in import_graph()
        if layer_of(e.target) > layer_of(e.source)
    ]
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_each_capability_imports_only_capabilities_below_it() -> None:
    found = out_of_order(import_graph())
    assert not found, "imports against the order of capabilities:\n" + "\n".join(found)


def test_the_kernel_imports_no_capability() -> None:
    assert not package_graph(import_graph()).get("kernel")


def test_every_package_of_the_ledger_has_a_place() -> None:
    """A new package under ``ledger/`` is a capability: it gets a rank (or is named outside the order)."""
    packages = {p.name for p in (ROOT / "ledger").iterdir() if (p / "__init__.py").exists()}
    modules_ = {p.stem for p in (ROOT / "ledger").glob("*.py") if p.stem != "__init__"}
    for name in sorted(packages | modules_):
        if name not in OUTSIDE_THE_ORDER:
            rank_of(name)


# --- the checker itself, on made-up graphs -----------------------------------------------------------------------


def test_a_circle_is_found_and_a_chain_is_not() -> None:
    def edge(a: str, b: str, runtime: bool = True) -> Import:
        return Import(a, b, 1, runtime)

    assert circles([edge("a", "b"), edge("b", "c")]) == []
    assert circles([edge("a", "b"), edge("b", "c"), edge("c", "a")]) == [["a", "b", "c"]]
    assert circles([edge("a", "b"), edge("b", "a", runtime=False)]) == []


def test_an_import_against_the_order_is_seen_and_one_down_it_is_not() -> None:
    order = (("kernel",), ("low",), ("left", "right"), ("high",))

    def edge(a: str, b: str) -> Import:
        return Import(f"ledger.{a}.m", f"ledger.{b}.n", 1, True)

    downward = [edge("high", "left"), edge("left", "low"), edge("low", "kernel"), edge("high", "kernel")]
    assert out_of_order(downward, order) == []
    assert out_of_order([edge("low", "low"), Import("ledger.high.m", "ledger.core.x", 1, True)], order) == []
    assert len(out_of_order([edge("low", "left")], order)) == 1  # upward
    assert len(out_of_order([edge("left", "right")], order)) == 1  # sideways, within a rank
    assert len(out_of_order([edge("kernel", "low")], order)) == 1  # the kernel carries, it imports none
    assert len(out_of_order([Import("ledger.kernel", "ledger.low", 1, False)], order)) == 1  # type-checking too
    assert out_of_order([Import("ledger.service", "ledger.high.m", 1, True)], order) == []  # the façade composes
    with pytest.raises(AssertionError, match="no rank"):
        out_of_order([edge("low", "nowhere")], order)


def test_the_package_graph_names_who_imports_whom() -> None:
    edges = [
        Import("ledger.brain.handlers", "ledger.memory.handlers", 1, True),
        Import("ledger.brain.report", "ledger.sessions.report", 1, True),
        Import("ledger.brain.decisions", "ledger.brain.report", 1, True),
        Import("ledger.memory.reads", "ledger.kernel", 1, True),
        Import("ledger.service", "ledger.brain.handlers", 1, True),
    ]
    assert package_graph(edges) == {"brain": {"memory", "sessions"}, "memory": {"kernel"}}


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("ledger.core.events", 0),
        ("projections.runner", 1),
        ("ledger.kernel", 2),
        ("ledger.memory.handlers", 3),
        ("ledger.service", 4),
        ("api.cli", 5),
    ],
)
def test_layers_are_read_by_longest_prefix(module: str, layer: int) -> None:
    assert layer_of(module) == layer


def test_an_upward_import_is_seen(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nfrom ledger.core import events\nif TYPE_CHECKING:\n"
        "    from api import cli\ndef f():\n    from ledger import service\n",
        encoding="utf-8",
    )
    known = {
        "ledger.core.events": source,
        "ledger.core": source,
        "api.cli": source,
        "api": source,
        "ledger.service": source,
        "ledger": source,
        "projections.x": source,
    }
    found = imports_of("projections.x", source, known)
    assert [(i.target, i.runtime) for i in found] == [
        ("ledger.core.events", True),
        ("api.cli", False),
        ("ledger.service", True),
    ]
    assert [layer_of(i.target) > layer_of("projections.x") for i in found] == [False, True, True]


MAX_MODULE_LINES = 400


def test_every_module_is_short_and_says_what_it_is_for() -> None:
    """No module over 400 lines; each opens with a docstring whose first paragraph is at most three lines."""
    problems = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            problems.append(f"{name}: {lines} lines (split it: one concept per module)")
        doc = ast.get_docstring(ast.parse(text))
        if not doc:
            problems.append(f"{name}: no module docstring")
        elif doc.split("\n\n")[0].count("\n") > 2:
            problems.append(f"{name}: the docstring's first paragraph is over three lines")
    assert not problems, "\n".join(problems)
