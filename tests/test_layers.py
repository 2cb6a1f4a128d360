"""The import checks of ``make lint`` catch what they are for, and the tree keeps them.

``lint-imports`` (the contracts under ``[tool.importlinter]`` in pyproject.toml) and
``tools/check_cycles.py`` run as ``make lint`` runs them, on a copy of the package in
``tmp_path``. With one violation planted in the copy — an upward import into core, a
scheduler import of the workers, a cycle inside a package, a cycle across packages —
each must fail and name what was broken. On a clean copy, the three module cycles
broken when the checks came in (the LLM rate limiters, the metrics exposition, the
JSON readers) must stay broken, and each contract's state is asserted one by one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CHECK_CYCLES = ROOT / "tools" / "check_cycles.py"
CONTRACTS: dict[str, str] = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())
    ["tool"]["importlinter"]["contracts"]}
TIMEOUT_S = 180


def _python_sources(folder: str, names: list[str]) -> list[str]:
    """What ``copytree`` leaves out: everything but packages and their modules."""
    return [name for name in names
            if name in {"__pycache__", "sample"}
            or (not name.endswith(".py") and not Path(folder, name).is_dir())]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the package and of the contracts, for violations to be planted in."""
    shutil.copytree(ROOT / "hopindex", tmp_path / "hopindex", ignore=_python_sources)
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(tree: Path, module: str, line: str) -> None:
    path = tree / module
    assert path.is_file(), f"{module} is gone: plant the violation in another module"
    with path.open("a") as fh:
        fh.write(f"\n{line}\n")


def run(tree: Path, *command: str | Path) -> subprocess.CompletedProcess[str]:
    # The copy comes first on the path (both tools also put the working directory
    # there), and wide lines keep each contract's verdict on the line with its name.
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "250", "NO_COLOR": "1"}
    return subprocess.run([str(part) for part in command], cwd=tree, env=env, text=True,
                          capture_output=True, timeout=TIMEOUT_S, check=False)


def lint_imports(tree: Path) -> str:
    result = run(tree, LINT_IMPORTS, "--no-cache", "--no-logo")
    assert result.returncode in (0, 1), result.stderr  # 1: a contract broken; else a crash
    return result.stdout


def verdict(output: str, contract_id: str) -> str:
    name = CONTRACTS[contract_id]
    for state in ("KEPT", "BROKEN"):
        if f"{name} {state}" in output:
            return state
    raise AssertionError(f"lint-imports did not report contract {name!r}:\n{output}")


def cycle_groups(tree: Path) -> list[set[str]]:
    """The groups of modules ``check_cycles.py`` reports as importing each other."""
    result = run(tree, sys.executable, CHECK_CYCLES)
    assert result.returncode in (0, 1), result.stderr
    groups = [set(line.split(": ", 1)[1].split(", ")) for line in result.stdout.splitlines()
              if line.split(" ", 1)[0].isdigit() and " modules: " in line]
    assert (result.returncode == 1) == bool(groups), result.stdout
    return groups


def in_one_cycle(groups: list[set[str]], *modules: str) -> bool:
    return any(set(modules) <= group for group in groups)


def test_upward_import_into_core_breaks_the_layers(tree: Path) -> None:
    """core importing the CLI is refused by the layers contract, with the import named."""
    plant(tree, "hopindex/core/errors.py", "import hopindex.api.cli")

    output = lint_imports(tree)

    assert verdict(output, "layers") == "BROKEN"
    assert "hopindex.core.errors -> hopindex.api.cli" in output


def test_scheduler_importing_the_workers_breaks_sending_by_name(tree: Path) -> None:
    """A scheduler import of the Celery tasks is refused by its own forbidden contract."""
    plant(tree, "hopindex/scheduler/__init__.py", "import hopindex.workers.tasks")

    output = lint_imports(tree)

    assert verdict(output, "scheduler-sends-by-name") == "BROKEN"
    assert "hopindex.scheduler -> hopindex.workers.tasks" in output


def test_method_importing_another_breaks_their_independence(tree: Path) -> None:
    """One method reaching into another is refused by the independence contract."""
    plant(tree, "hopindex/methods/naive.py", "import hopindex.methods.bridgerag")

    output = lint_imports(tree)

    assert verdict(output, "methods-independent") == "BROKEN"
    assert "hopindex.methods.naive -> hopindex.methods.bridgerag" in output


def test_importing_hopindex_testing_breaks_its_contract(tree: Path) -> None:
    """The shipped doubles and contract suites (which need pytest) stay out of the
    runtime: an import of them is refused from the top-level module and from a package
    added after the contract was written, each named."""
    plant(tree, "hopindex/__init__.py", "import hopindex.testing.contracts.vector_store")
    (tree / "hopindex" / "later").mkdir()
    (tree / "hopindex" / "later" / "__init__.py").write_text("import hopindex.testing.waiting\n")

    output = lint_imports(tree)

    assert verdict(output, "testing-unused-by-package") == "BROKEN"
    assert "hopindex -> hopindex.testing.contracts.vector_store" in output
    assert "hopindex.later -> hopindex.testing.waiting" in output


def test_cycle_inside_a_package_is_refused_by_both_checks(tree: Path) -> None:
    """Restoring the JSON readers' cycle breaks the acyclic contract and check_cycles."""
    assert not in_one_cycle(cycle_groups(tree), "hopindex.readers.jsonfile",
                            "hopindex.readers.jsonl")
    plant(tree, "hopindex/readers/jsonfile.py", "import hopindex.readers.jsonl")

    output = lint_imports(tree)

    assert verdict(output, "acyclic-within-packages") == "BROKEN"
    assert "No cycles are allowed in hopindex.readers." in output
    assert in_one_cycle(cycle_groups(tree), "hopindex.readers.jsonfile",
                        "hopindex.readers.jsonl")


def test_cycle_across_packages_is_refused_by_check_cycles(tree: Path) -> None:
    """workers and monitoring may import each other's modules, so only check_cycles.py
    sees two of their modules importing each other: it must fail and name both."""
    assert not in_one_cycle(cycle_groups(tree), "hopindex.workers", "hopindex.monitoring")
    plant(tree, "hopindex/workers/__init__.py", "import hopindex.monitoring")
    plant(tree, "hopindex/monitoring/__init__.py", "import hopindex.workers")

    result = run(tree, sys.executable, CHECK_CYCLES)

    assert result.returncode == 1
    assert "No module-level import cycles in hopindex BROKEN" in result.stdout
    assert in_one_cycle(cycle_groups(tree), "hopindex.workers", "hopindex.monitoring")


@pytest.fixture(scope="module")
def clean_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One clean copy, checked once, shared by the clean-run tests."""
    copy = tmp_path_factory.mktemp("clean")
    shutil.copytree(ROOT / "hopindex", copy / "hopindex", ignore=_python_sources)
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


@pytest.fixture(scope="module")
def clean_output(clean_tree: Path) -> str:
    return lint_imports(clean_tree)


@pytest.mark.parametrize("pair", [
    ("hopindex.backends.llm.ratelimit", "hopindex.backends.llm.ratelimit_redis"),
    ("hopindex.monitoring.exposition", "hopindex.monitoring.multiprocess"),
    ("hopindex.readers.jsonfile", "hopindex.readers.jsonl"),
], ids=["ratelimit", "exposition", "readers"])
def test_broken_cycles_stay_broken(clean_tree: Path, pair: tuple[str, str]) -> None:
    """The two modules no longer import each other, directly or through others."""
    assert not in_one_cycle(cycle_groups(clean_tree), *pair)


@pytest.mark.parametrize("contract_id", CONTRACTS)
def test_clean_tree_keeps_contract(clean_output: str, contract_id: str) -> None:
    """The package as it stands keeps this contract."""
    assert verdict(clean_output, contract_id) == "KEPT", clean_output


def test_clean_tree_has_no_module_cycle(clean_tree: Path) -> None:
    """No module of hopindex imports itself through others."""
    assert cycle_groups(clean_tree) == []
