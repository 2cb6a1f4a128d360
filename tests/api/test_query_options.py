"""A query option its method does not take is refused by the service itself, so every
door (a local call, the CLI, the HTTP API) refuses it alike, naming ``params.NAME``:
a method without options takes none rather than ignoring them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import QueryOptions
from tests.conftest import CURIE_CORPUS, ClientFactory, ingest_documents

INDEX = "curie"


def test_an_option_the_method_does_not_take_is_refused_locally(
        make_client: ClientFactory) -> None:
    """naive takes no option of its own: one given is an error naming it (it was
    ignored); hops names the options it knows; a known one still answers."""
    client = make_client()
    ingest_documents(client, INDEX, CURIE_CORPUS)
    with pytest.raises(InvalidInputError, match="it takes none of its own") as refused:
        client.query(INDEX, "Where did Marie Curie work?", method="naive", k=5,
                     options=QueryOptions(params={"condition": "A"}))
    assert refused.value.where == "params.condition"
    with pytest.raises(InvalidInputError, match=r"known: .*walk") as unknown:
        client.query(INDEX, "Where did Marie Curie work?", method="hops", k=5,
                     options=QueryOptions(params={"nonsense": 1}))
    assert unknown.value.where == "params.nonsense"
    answered = client.query(INDEX, "Where did Marie Curie work?", method="hops", k=5,
                            options=QueryOptions(params={"walk": "off"}))
    assert answered.passages
    settings_dir = client.settings.data_dir
    client.close()
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(settings_dir)})
    shown = cli.invoke(main, ["query", "--index", INDEX, "--method", "naive", "--param",
                              "x=1", "--json", "Where did Marie Curie work?"])
    assert shown.exit_code == ExitCode.DATA_ERROR, shown.output
    error = json.loads(shown.stderr)["error"]
    assert error["field"] == "params.x" and "it takes none" in error["message"]


def test_options_without_a_method_are_refused_naming_method(make_client: ClientFactory) -> None:
    """Options are one method's: given with no method (the index's default would read
    them) they are refused, naming ``method``, as the HTTP API's schema says."""
    client = make_client()
    ingest_documents(client, INDEX, CURIE_CORPUS)
    with pytest.raises(InvalidInputError, match="belong to one query method") as refused:
        client.query(INDEX, "Where did Marie Curie work?", k=5,
                     options=QueryOptions(params={"walk": "off"}))
    assert refused.value.where == "method"
