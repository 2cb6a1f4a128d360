"""The shipped Alertmanager config: rendered from its template the way docker-compose
renders it, ``amtool check-config`` accepts it, every alert rule reaches the webhook
receiver, and a URL that could not be written into it is refused with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.alertmanager_server import AlertmanagerTools, render_config
from tests.monitoring.conftest import monitoring_dir

RULES = monitoring_dir() / "prometheus" / "alerts.yml"
RECEIVER = "hopindex-webhook"
# Query strings, an escaped space and a fragment: what a chat webhook's URL carries, and
# characters sed or awk's gsub would mangle.
WEBHOOK_URL = "https://hooks.example.com/services/T0/B1?token=a&b=%20c#frag"


def rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load(RULES.read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    output = tmp_path / "alertmanager.yml"
    done = render_config(output, WEBHOOK_URL)
    assert done.returncode == 0, done.stderr
    return output


def test_amtool_accepts_the_rendered_config(am_tools: AlertmanagerTools, rendered: Path) -> None:
    """``amtool check-config`` passes on what render-config.sh writes, and the webhook URL
    is in it character for character."""
    done = am_tools.amtool_run("check-config", str(rendered))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    config = yaml.safe_load(rendered.read_text())
    (receiver,) = config["receivers"]
    assert receiver["name"] == RECEIVER
    (webhook,) = receiver["webhook_configs"]
    assert webhook == {"url": WEBHOOK_URL, "send_resolved": True}
    # The URL may carry a token.
    assert rendered.stat().st_mode & 0o077 == 0


def test_every_alert_rule_reaches_the_webhook(am_tools: AlertmanagerTools,
                                              rendered: Path) -> None:
    """Each rule of alerts.yml, with its own labels, routes to the webhook receiver (amtool
    evaluates the routing tree)."""
    for rule in rules():
        labels = [f"alertname={rule['alert']}",
                  *(f"{k}={v}" for k, v in rule.get("labels", {}).items())]
        done = am_tools.amtool_run("config", "routes", "test", f"--config.file={rendered}",
                                   f"--verify.receivers={RECEIVER}", *labels)
        assert done.returncode == 0, (rule["alert"], done.stdout + done.stderr)


def test_inhibit_rules_name_alerts_that_exist(rendered: Path) -> None:
    """An inhibit rule naming an alert the rules do not define would silently do nothing."""
    names = {rule["alert"] for rule in rules()}
    config = yaml.safe_load(rendered.read_text())
    assert config["inhibit_rules"]
    for inhibit in config["inhibit_rules"]:
        for matcher in inhibit["source_matchers"] + inhibit["target_matchers"]:
            label, _, value = matcher.partition("=")
            assert label == "alertname"
            assert value.strip('"') in names, matcher


@pytest.mark.parametrize(("url", "reason"), [
    (None, "not set"),
    ("", "not set"),
    ("hooks.example.com/alerts", "must start with http:// or https://"),
    ("ftp://hooks.example.com/alerts", "must start with http:// or https://"),
    ("https://", "must start with http:// or https://"),
    ('https://hooks.example.com/"x', "without quotes"),
    ("https://hooks.example.com/a b", "spaces"),
    ("https://hooks.example.com/a\\b", "backslashes"),
    ("https://hooks.example.com/a\tb", "tabs"),
    ("https://hooks.example.com/a\nkey: x", "one line"),
])
def test_a_url_that_cannot_be_written_is_refused(tmp_path: Path, url: str | None,
                                                 reason: str) -> None:
    """Missing, not http(s), or unsafe inside a YAML string: the script exits non-zero
    naming the variable and why, and writes no config (a stale one is not replaced by a
    broken one)."""
    output = tmp_path / "alertmanager.yml"
    done = render_config(output, url)
    assert done.returncode != 0
    assert "ALERTMANAGER_WEBHOOK_URL" in done.stderr and reason in done.stderr, done.stderr
    assert not output.exists() and not list(tmp_path.iterdir())
