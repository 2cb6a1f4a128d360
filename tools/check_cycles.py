"""Fail when any two modules of hopindex import each other, directly or through others.

import-linter's ``acyclic_siblings`` contract (pyproject.toml) keeps siblings acyclic
inside each top-level package, but it cannot be applied across the top level, where
monitoring and evaluation are by design in package-level cycles with the runtime. A
cycle of modules is never by design, wherever its modules live: this finds every one
with grimp (import-linter's graph library) and prints the shortest cycle through each
strongly connected group, one import per line with its line number.

Run from the repository root (``make lint``): like ``lint-imports``, it analyses the
``hopindex`` found from the current directory. Imports inside functions and under
``TYPE_CHECKING`` count, as they do for ``lint-imports``. Exit status 1 when a cycle
exists, 0 otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import grimp

PACKAGE = "hopindex"
CONTRACT = f"No module-level import cycles in {PACKAGE}"


def import_graph(package: str) -> grimp.ImportGraph:
    # As lint-imports does: the package found from the working directory comes first,
    # so a copy of the tree is analysed rather than the installed one.
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return grimp.build_graph(package, cache_dir=None)


def strongly_connected(edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (import chains can be deeper than the recursion
    limit); only the groups of two or more modules, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, next_child = work.pop()
            if next_child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            children = edges[node]
            if next_child < len(children):
                work.append((node, next_child + 1))
                child = children[next_child]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def shortest_cycle(graph: grimp.ImportGraph, group: Iterable[str]) -> list[str]:
    """The shortest cycle through the group's first module, as [a, b, ..., a]."""
    members = sorted(group)
    start = members[0]
    best: tuple[str, ...] | None = None
    for successor in sorted(graph.find_modules_directly_imported_by(start)):
        if successor not in members:
            continue
        chain = graph.find_shortest_chain(importer=successor, imported=start)
        if chain is not None and (best is None or len(chain) < len(best)):
            best = chain
    assert best is not None  # every module of a strongly connected group is on a cycle
    return [start, *best]


def describe(graph: grimp.ImportGraph, cycle: Sequence[str]) -> list[str]:
    lines = [f"  {cycle[0]}"]
    for importer, imported in pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = ", ".join(f"l.{detail['line_number']}" for detail in details)
        lines.append(f"  -> {imported} ({importer} {where})")
    return lines


def main() -> int:
    graph = import_graph(PACKAGE)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module))
             for module in graph.modules}
    groups = strongly_connected(edges)
    if not groups:
        print(f"{CONTRACT} KEPT")
        return 0
    print(f"{CONTRACT} BROKEN: {len(groups)} group(s) of modules import each other")
    for group in groups:
        print()
        print(f"{len(group)} modules: {', '.join(group)}")
        print("shortest cycle:")
        print("\n".join(describe(graph, shortest_cycle(graph, group))))
    return 1


if __name__ == "__main__":
    sys.exit(main())
