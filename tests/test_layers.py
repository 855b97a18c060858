"""Imports run one way (README, "Layers"; issue 31): no import cycle among the package's
modules, and import-linter's contracts of pyproject.toml ([tool.importlinter]) kept.  grimp
sees every import, those inside functions too."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

grimp = pytest.importorskip("grimp")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative): each is a set of modules that import each other round a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
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
                    work.append((child, iter(sorted(
                        graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_the_modules():
    graph = grimp.build_graph("perceptron_oracle")
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for module in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(module)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.b")
    graph.add_import(importer="a.d", imported="a.b")
    assert cycles(graph) == [["a.b", "a.c"]]


def test_import_linter_contracts_are_kept():
    """The layers and the reference's forbidden imports (pyproject.toml), as .ci/lint runs
    them."""
    lint = shutil.which("lint-imports") or str(pathlib.Path(sys.executable).parent
                                                / "lint-imports")
    if not pathlib.Path(lint).exists():
        pytest.skip("import-linter is not installed (the test extra has it)")
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
