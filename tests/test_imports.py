"""Layers go one way. Every import of the package counts, at module level or inside a function
(a late import still runs the lower module's code against the upper one's state): none goes to
a higher layer, none closes a circle, and every module imports on its own in a fresh
interpreter. Only `if TYPE_CHECKING:` blocks are left out: they never run."""
import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import reorder

ROOT = Path(reorder.__file__).parent
PKG = "reorder"

# Lowest first. A module may import its own layer and the layers below, never one above.
# Within a layer the import graph must still be free of circles.
LAYERS = [
    ("reorder._version", "reorder.core", "reorder.testing"),
    # compiled: they import nothing of ours but Cython's shared memoryview module
    ("reorder._kernels", "reorder._convert", "reorder._lowbit", "reorder._cyutility"),
    ("reorder.kernels",),
    ("reorder.plan",),
    ("reorder.quant",),
    ("reorder.front",),
    ("reorder.opencl",),
    ("reorder.plot",),
    ("reorder.models",),
    ("reorder.tools",),
    ("reorder", "reorder.__main__"),
]


def layer_of(name):
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                    best is None or len(prefix) > len(best[1])):
                best = (rank, prefix)
    return best[0]


def module_names():
    names = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join((PKG,) + parts)] = path
    # compiled modules are leaves: they import nothing of ours. Their sources sit in
    # csrc/<family>/<name>.pyx and build the extension reorder._<name> (setup.py).
    for path in ROOT.rglob("*.pyx"):
        names[f"{PKG}._{path.stem}"] = None
    for ext in LAYERS[1]:
        names.setdefault(ext, None)
    return names


def _is_package(path):
    return path is not None and path.name == "__init__.py"


def _imports(tree):
    """Every import statement that can run: anywhere in the module, functions and methods
    included, except under `if TYPE_CHECKING:`."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
            yield node


def import_graph():
    names = module_names()
    graph = {}
    for name, path in names.items():
        edges = set()
        if path is not None:
            package = name if _is_package(path) else name.rpartition(".")[0]
            for node in _imports(ast.parse(path.read_text(), str(path))):
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


def upward_imports(graph):
    return sorted((a, b) for a, edges in graph.items() for b in edges
                  if layer_of(b) > layer_of(a))


def test_the_graph_sees_known_edges():
    # the checker must be able to see an edge, or "no cycle" would mean nothing
    graph = import_graph()
    assert "reorder.kernels.base" in graph["reorder.plan.normalise"]
    assert "reorder.kernels.convert" in graph["reorder.plan.planner"]
    assert "reorder._kernels" in graph["reorder.kernels.move"]
    assert "reorder.front.api" in graph["reorder"]
    assert "reorder.core.errors" in graph["reorder.models.errors"]
    # imports inside functions are edges too
    assert "reorder.opencl" in graph["reorder.plot"]
    assert "reorder.models.cli" in graph["reorder.__main__"]


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_late_import_is_an_edge(tmp_path):
    source = "def f():\n    from .b import g\n    return g\nif TYPE_CHECKING:\n    from .c import h\n"
    nodes = list(_imports(ast.parse(source)))
    assert [n.module for n in nodes] == ["b"]


def test_no_import_cycle():
    assert find_cycle(import_graph()) is None, find_cycle(import_graph())


def test_every_module_has_a_layer():
    for name in module_names():
        assert layer_of(name) is not None, name


def test_no_import_runs_back_up():
    assert upward_imports(import_graph()) == []
    # and the check sees one when it is there
    assert upward_imports({"reorder.core.desc": {"reorder.plot"}, "reorder.plot": set()}) == [
        ("reorder.core.desc", "reorder.plot")]


def test_the_leaves_import_nothing_of_ours():
    graph = import_graph()
    for leaf in ("reorder.core.errors", "reorder.testing.reference", "reorder._version"):
        assert graph[leaf] == set(), (leaf, graph[leaf])
    # the planner's shared types take only the machine's facts (cache size), which take only errors
    assert graph["reorder.kernels.base"] == {"reorder.core.machine"}, graph["reorder.kernels.base"]
    assert graph["reorder.core.machine"] == {"reorder.core.errors"}, graph["reorder.core.machine"]
    # the layout layer is pure Python
    for name, edges in graph.items():
        if name.startswith("reorder.core"):
            assert all(e.startswith("reorder.core") for e in edges), (name, edges)


@pytest.mark.slow                   # one interpreter per module of the package
def test_each_module_imports_in_a_fresh_interpreter():
    names = sorted(n for n, path in module_names().items() if path is not None or n in LAYERS[1])

    def run(name):
        p = subprocess.run([sys.executable, "-c", f"import {name}"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        return name, p.returncode, p.stdout[-2000:]
    # a few at a time: each is a separate interpreter, and the machine may have few cores
    with ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        failed = {n: out for n, code, out in pool.map(run, names) if code}
    assert not failed, failed
    assert len(names) > 40
