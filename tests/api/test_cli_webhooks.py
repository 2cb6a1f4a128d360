"""``hopindex webhooks add|list|remove`` locally: --json on each, the secret shown only
when the webhook is made, and the exit codes of what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode

pytestmark = pytest.mark.integration

URL = "https://user:pw@example.org/hook"


def test_add_list_remove_as_text_and_json(tmp_path: Path) -> None:
    """add prints the webhook with its secret; list --json shows it without the secret,
    with the URL's credentials redacted and the recorded decision on private targets,
    list as one line each; remove says so,
    and removing it again exits 66, as one JSON error with --json."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    added = cli.invoke(main, ["webhooks", "add", "--index", "wiki", "--json", URL])
    assert added.exit_code == 0, added.output
    hook = json.loads(added.stdout)
    assert set(hook) == {"id", "index", "url", "secret"}
    assert hook["secret"].startswith("whsec_") and "pw" not in hook["url"]

    listed = cli.invoke(main, ["webhooks", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    [shown] = json.loads(listed.stdout)
    assert set(shown) == {"id", "index", "url", "created_at", "allow_private"}
    assert (shown["id"], shown["index"], shown["url"]) == (hook["id"], "wiki", hook["url"])
    # Registered where private targets are not allowed (the default): recorded so.
    assert shown["allow_private"] is False
    text = cli.invoke(main, ["webhooks", "list", "--index", "wiki"]).stdout
    assert text.split() == [hook["id"], "wiki", hook["url"]]
    assert cli.invoke(main, ["webhooks", "list", "--index", "other", "--json"]).stdout == "[]\n"

    removed = cli.invoke(main, ["webhooks", "remove", hook["id"]])
    assert removed.exit_code == 0 and removed.stdout == f"removed webhook {hook['id']}\n"
    again = cli.invoke(main, ["webhooks", "remove", "--json", hook["id"]])
    assert again.exit_code == ExitCode.NOT_FOUND and again.stdout == ""
    assert json.loads(again.stderr)["error"] == {
        "code": "not_found", "message": f"no webhook {hook['id']!r}", "exit_code": 66}


def test_a_bad_index_name_or_target_is_a_data_error(tmp_path: Path) -> None:
    """An invalid index name and a private-network target (refused by default) both
    exit 65 (bad input) with the JSON error naming the problem."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    bad = cli.invoke(main, ["webhooks", "add", "--index", "Not Valid", "--json", URL])
    assert bad.exit_code == ExitCode.DATA_ERROR
    assert json.loads(bad.stderr)["error"]["field"] == "index"
    private = cli.invoke(main, ["webhooks", "add", "--index", "wiki", "--json",
                                "http://127.0.0.1:9/hook"])
    assert private.exit_code == ExitCode.DATA_ERROR, private.output
    assert json.loads(private.stderr)["error"]["code"] == "invalid_input"
