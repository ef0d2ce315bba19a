"""Layers go one way: no module of the package imports, at module level, a module that imports
it back (directly or through others), and every module imports on its own in a fresh
interpreter. Imports inside functions are deliberate late bindings (optional front ends) and
are not edges here."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

import reorder

ROOT = Path(reorder.__file__).parent
PKG = "reorder"


def module_names():
    names = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join((PKG,) + parts)] = path
    # compiled modules are leaves: they import nothing of ours at module level
    for path in ROOT.rglob("*.pyx"):
        names[".".join((PKG,) + path.relative_to(ROOT).with_suffix("").parts)] = None
    return names


def _is_package(path):
    return path is not None and path.name == "__init__.py"


def _top_level(body):
    """Statements run at import: module level, and inside module-level if/try/with blocks
    (except `if TYPE_CHECKING:`), never inside def or class."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" not in test:
                yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)


def import_graph():
    names = module_names()
    graph = {}
    for name, path in names.items():
        edges = set()
        if path is not None:
            package = name if _is_package(path) else name.rpartition(".")[0]
            for node in _top_level(ast.parse(path.read_text(), str(path)).body):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    if node.level:
                        base = package.split(".")
                        base = base[:len(base) - node.level + 1]
                        if node.module:
                            base += node.module.split(".")
                        mod = ".".join(base)
                    else:
                        mod = node.module
                    # `from pkg import sub` imports the submodule; `from mod import name` the module
                    targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in names else mod
                               for a in node.names]
                edges.update(t for t in targets if t in names and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph):
    """One cycle as a list of module names, or None (iterative depth-first search)."""
    state = {}                          # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_graph_sees_known_edges():
    # the checker must be able to see an edge, or "no cycle" would mean nothing
    graph = import_graph()
    assert "reorder.problem" in graph["reorder.planner"] | graph["reorder.normalise"]
    assert "reorder.conversion" in graph["reorder.planner"]
    assert "reorder._kernels" in graph["reorder.move_kernels"]
    assert "reorder.api" in graph["reorder"]
    assert "reorder.errors" in graph["reorder.models.errors"]
    assert "reorder.plot" not in graph["reorder.desc"]          # a late import, inside a method


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None, find_cycle(import_graph())


def test_the_leaves_import_nothing_of_ours():
    graph = import_graph()
    for leaf in ("reorder.errors", "reorder.reference", "reorder._version"):
        assert graph[leaf] == set(), (leaf, graph[leaf])
    # the planner's shared types take only the machine's facts (cache size), which take only errors
    assert graph["reorder.problem"] == {"reorder.machine"}, graph["reorder.problem"]
    assert graph["reorder.machine"] == {"reorder.errors"}, graph["reorder.machine"]


@pytest.mark.slow                   # one interpreter per module of the package
def test_each_module_imports_in_a_fresh_interpreter():
    names = sorted(module_names())
    # all at once: each is a separate interpreter, and the machine may have few cores
    procs = {n: subprocess.Popen([sys.executable, "-c", f"import {n}"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for n in names}
    failed = {}
    for n, p in procs.items():
        out, _ = p.communicate(timeout=120)
        if p.returncode:
            failed[n] = out[-2000:]
    assert not failed, failed
    assert len(names) > 40
