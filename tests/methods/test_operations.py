"""Method operations: what registering one checks, how its parameters are checked
before it runs, and one a plug-in registers, found and run through the registry and
the local client like kgbridge's own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from hopindex.api.client.local import LocalOperations
from hopindex.backends.protocols import StateStore
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.methods import registry
from hopindex.methods.operations import MethodOperation, OperationAccess, OperationParam
from hopindex.methods.plugin import MethodRegistry


def _count(state: StateStore, index: str, params: Mapping[str, str]) -> dict[str, Any]:
    return {"index": index, "params": dict(params)}


def operation(name: str = "notes.count", method: str = "notes",
              *params: OperationParam) -> MethodOperation:
    return MethodOperation(method=method, name=name, summary="Count the notes.",
                           access=OperationAccess.READ, run=_count, params=params)


PARAMS = (OperationParam(name="note_id", help="a note", required=True, max_chars=8),
          OperationParam(name="tag", help="a tag"))


@pytest.mark.parametrize("name", ["notes", "notes.", ".count", "Notes.count", "notes.count.x",
                                  "notes.count-all", "notes.count2", ""])
def test_a_badly_named_operation_is_refused(name: str) -> None:
    """A name is ``group.verb`` in lowercase letters and '_' (the CLI's group and
    command); anything else is refused naming the operation and its method."""
    with pytest.raises(ConfigError, match=re.escape(f"operation name {name!r} of method 'notes'")):
        MethodRegistry().add_operation(operation(name))


def test_an_operation_registered_twice_is_refused_and_two_methods_may_share_a_name() -> None:
    found = MethodRegistry()
    found.add_operation(operation())
    with pytest.raises(ConfigError, match=re.escape(
            "operation 'notes.count' of method 'notes' is registered twice")):
        found.add_operation(operation())
    found.add_operation(operation("notes.count", "other"))
    assert sorted(found.operations) == [("notes", "notes.count"), ("other", "notes.count")]


@pytest.mark.parametrize(("given", "where", "message"), [
    ({"note_id": "n1", "colour": "red"}, "colour",
     "operation 'notes.count' takes no parameter 'colour'; it takes ['note_id', 'tag']"),
    ({"tag": "x"}, "note_id", "operation 'notes.count' needs it"),
    ({"note_id": "n" * 9}, "note_id", "is 9 characters, over the limit of 8"),
    ({"note_id": 7}, "note_id", "must be a string, not int"),
    ({"note_id": ["n1"]}, "note_id", "must be a string, not list"),
    ({"note_id": "n1", "tag": "bad\udcff"}, "tag", "holds an unpaired surrogate (U+DCFF)"),
])
def test_check_params_refuses_naming_the_parameter(given: dict[str, Any], where: str,
                                                   message: str) -> None:
    """Unknown, missing required, too long, non-string and unstorable parameters are
    input errors naming the parameter (what the CLI and the API print as its field)."""
    with pytest.raises(InvalidInputError, match=re.escape(message)) as refused:
        operation("notes.count", "notes", *PARAMS).check_params(given)
    assert refused.value.where == where


def test_check_params_keeps_what_is_given_and_leaves_out_an_absent_optional() -> None:
    op = operation("notes.count", "notes", *PARAMS)
    assert op.check_params({"note_id": "n" * 8}) == {"note_id": "n" * 8}
    assert op.check_params({"note_id": "n1", "tag": ""}) == {"note_id": "n1", "tag": ""}
    assert operation().check_params({}) == {}
    with pytest.raises(InvalidInputError, match="it takes none") as refused:
        operation().check_params({"tag": "x"})
    assert refused.value.where == "tag"


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> MethodRegistry:
    """The process's registry replaced by one holding a plug-in's operation alone, as
    its ``register(registry)`` entry point would add it."""
    def register(found: MethodRegistry) -> None:  # what the plug-in ships
        found.add_operation(operation("notes.count", "notes", *PARAMS))

    found = MethodRegistry()
    register(found)
    monkeypatch.setattr(registry, "_registry", found)
    return found


def test_a_plugin_operation_is_found_and_run_through_the_registry(
        fake_registry: MethodRegistry) -> None:
    """The registry lists it (of its method, or all) and finds it by name for an index
    of its method; an index of another method is refused on ``method`` naming the one
    that has it, an unknown name on ``operation``. The local client runs it on the
    index's record name with its parameters checked."""
    (found,) = registry.list_operations()
    assert (found.name, found.group, found.verb) == ("notes.count", "notes", "count")
    assert registry.list_operations("notes") == [found]
    assert registry.list_operations("naive") == []
    assert registry.get_operation("mine", "notes", "notes.count") is found
    with pytest.raises(InvalidInputError, match="index 'theirs' is built with 'naive', which "
                       r"has no operation 'notes.count' \(only notes indexes do\)") as wrong:
        registry.get_operation("theirs", "naive", "notes.count")
    assert wrong.value.where == "method"
    with pytest.raises(InvalidInputError, match="no operation 'links.list'; operations: "
                       r"\['notes.count'\]") as unknown:
        registry.get_operation("mine", "notes", "links.list")
    assert unknown.value.where == "operation"
    assert found.describe() == {
        "name": "notes.count", "method": "notes", "summary": "Count the notes.",
        "writes": False,
        "params": {"note_id": {"help": "a note", "required": True, "max_chars": 8},
                   "tag": {"help": "a tag", "required": False, "max_chars": 1024}}}

    infos = {"mine": SimpleNamespace(name="mine", method="notes"),
             "theirs": SimpleNamespace(name="theirs", method="naive")}
    service = SimpleNamespace(require_index=infos.__getitem__,
                              backends=SimpleNamespace(state=object()))
    client = LocalOperations(SimpleNamespace(service=service))  # type: ignore[arg-type]
    assert client.run_operation("mine", "notes.count", {"note_id": "n1"}) == {
        "index": "mine", "params": {"note_id": "n1"}}
    with pytest.raises(InvalidInputError) as missing:
        client.run_operation("mine", "notes.count")
    assert missing.value.where == "note_id"
    with pytest.raises(InvalidInputError) as other:
        client.run_operation("theirs", "notes.count", {"note_id": "n1"})
    assert other.value.where == "method"


def test_kgbridge_registers_its_link_operations() -> None:
    """The built-in registry holds kgbridge's links.list (read; an optional entity) and
    links.reject (write; the link's id, and who rejects it, at most 256 characters, by
    default the OS user where the CLI runs)."""
    ops = {o.name: o for o in registry.list_operations("kgbridge")}
    assert set(ops) >= {"links.list", "links.reject"}
    listing, rejecting = ops["links.list"], ops["links.reject"]
    assert listing.access is OperationAccess.READ and rejecting.access is OperationAccess.WRITE
    assert [(p.name, p.required) for p in listing.params] == [("entity", False)]
    link_id, by = rejecting.params
    assert (link_id.name, link_id.required, link_id.option, link_id.metavar) == (
        "link_id", True, "--link", "LINK_ID")
    assert (by.name, by.required, by.max_chars, by.option) == ("by", True, 256, "--by")
    assert by.default is not None
    assert listing.render_text is not None and rejecting.render_text is not None
