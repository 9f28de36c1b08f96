"""The package's shape: no import cycle (type-checking and deferred imports included), small classes, a short driver."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reagent_local"


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports anywhere in its file: at the top, under TYPE_CHECKING, in functions."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            for alias in node.names:  # `from . import x` names a module when x is one
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in known and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    out.append(sorted(component))
    return out


def test_no_import_cycles_in_the_package():
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    assert graph["reagent_local.reasoning.driver"]  # the parser sees imports
    assert _cycles(graph) == []


def _top(module: str) -> str:
    """The top-level part of the package a module belongs to: its subpackage, or itself when loose."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "reagent_local"


def _package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Subpackages (and loose modules) and the ones each imports; for each edge, one import that makes it."""
    modules = _modules()
    graph: dict[str, set[str]] = {_top(name): set() for name in modules}
    why: dict[tuple[str, str], str] = {}
    for name, path in modules.items():
        for imported in _imports(name, path, set(modules)):
            a, b = _top(name), _top(imported)
            if a != b:
                graph[a].add(b)
                why.setdefault((a, b), f"{name} imports {imported}")
    return graph, why


def _a_cycle(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One cycle through the first member of a strongly connected component (breadth first: a shortest one)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                frontier.append(nxt)
    return component


def test_the_packages_import_each_other_one_way():
    """The top-level subpackages form no cycle: every import points down (functions' imports included)."""
    graph, why = _package_graph()
    assert {"agents", "core", "reasoning", "rules", "config"} <= set(graph) and graph["reasoning"]
    found = _cycles(graph)
    shown = []
    for component in found:
        cycle = _a_cycle(component, graph)
        shown.append(f"{', '.join(component)}, e.g. " + " -> ".join(cycle) + "\n" + "\n".join(f"    {why[a, b]}" for a, b in zip(cycle, cycle[1:])))
    assert not found, "the packages import each other in a cycle:\n" + "\n".join(shown)


def test_a_package_cycle_is_shown_with_the_imports_that_make_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _a_cycle(["a", "b", "c"], graph) == ["a", "b", "c", "a"]


def test_the_cycle_finder_finds_a_cycle_through_a_type_checking_import(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .other import X\n", encoding="utf-8")
    assert _imports("pkg.m", module, {"pkg.m", "pkg.other"}) == {"pkg.other"}


def test_no_class_over_300_lines_and_a_short_driver():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno - node.lineno < 300, f"{path}: class {node.name}"
    driver = PACKAGE / "reasoning" / "driver.py"
    # 300: the driver alone runs rounds and carries out the helpers' decisions (rollbacks, the roads' meeting), which
    # the helpers (roads.py, and backtrack.py until it was removed) did themselves before
    assert len(driver.read_text(encoding="utf-8").splitlines()) <= 300


def test_the_top_of_the_package_shows_the_architecture():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert {"reasoning", "agents", "rules", "core", "runtime", "retrieval", "kg", "commands", "serve", "bench",
            "trace", "cluster"} <= packages
    loose = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert len(loose) <= 11, sorted(loose)


def _driver_methods() -> set[str]:
    """The methods of the driver (QuestionRun) but ``execute``, the run's entry point."""
    tree = ast.parse((PACKAGE / "reasoning" / "driver.py").read_text(encoding="utf-8"))
    (run,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "QuestionRun"]
    return {f.name for f in run.body if isinstance(f, ast.FunctionDef)} - {"__init__", "execute"}


def _receiver(node: ast.expr) -> list[str]:
    """The names along an attribute chain, outermost first: ``run.team.assembler`` -> [run, team, assembler]."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return names[::-1]


# What changes the run: only the driver (driver.py) calls these; state.py defines them.
_CHANGES = {"deliver_round", "rollback_global", "rollback_local", "assert_statement", "retract", "hold", "take_plan",
            "roll_back", "doubt_all", "checkpoint"}


def _calls_back(path: Path, methods: set[str]) -> list[str]:
    """The calls in a module that reach the driver or change the run's state, each as 'line: text'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("driver"):
            found.append(f"{node.lineno}: imports the driver")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain = _receiver(node.func.value)
            by_role = "team" in chain  # a role's method of the same name (team.assembler.assemble)
            if {"driver", "loop"} & set(chain) or (node.func.attr in methods and not by_role):
                found.append(f"{node.lineno}: {ast.unparse(node.func)}(...) calls the driver")
            elif node.func.attr in _CHANGES:
                found.append(f"{node.lineno}: {ast.unparse(node.func)}(...) changes the run")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute) and _receiver(target.value)[-1:] == ["run"]:
                    found.append(f"{node.lineno}: {ast.unparse(target)} = ... changes the run")
        if isinstance(node, ast.arg) and node.arg in {"driver", "loop"}:
            found.append(f"{node.lineno}: takes the driver as {node.arg!r}")
    return found


def test_only_the_driver_runs_rounds_and_changes_the_run():
    """The loop's helpers return decisions (reasoning/decisions.py); none calls the driver or changes the run."""
    methods = _driver_methods()
    assert {"deliver", "solve_pending", "start", "assemble"} <= methods
    found = {}
    for path in (PACKAGE / "reasoning").glob("*.py"):
        if path.name in ("driver.py", "state.py"):  # the driver, and the one place each change is made
            continue
        calls = _calls_back(path, methods)
        if path.name == "pipeline.py":  # it makes the run and starts it: QuestionRun(...).execute()
            calls = [c for c in calls if not c.endswith("imports the driver")]
        if calls:
            found[path.name] = calls
    assert not found, found


def test_the_call_back_check_sees_a_helper_that_calls_the_driver(tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("class Helper:\n    def __init__(self, run, loop):\n        self.loop = loop\n"
                      "    def go(self):\n        self.loop.deliver()\n        self.run.steps = []\n"
                      "        self.run.ws.rollback_global(1, 'x')\n", encoding="utf-8")
    found = _calls_back(helper, {"deliver"})
    assert sorted(f.split(":")[0] for f in found) == ["2", "5", "6", "7"], found
