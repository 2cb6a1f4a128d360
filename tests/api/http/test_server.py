"""Binding: without keys the server refuses any address but loopback, and says so at
start; with keys it may listen anywhere."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import structlog

from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import check_bind, is_loopback, serve
from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("example.org", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_no_keys_means_loopback_only() -> None:
    with pytest.raises(ConfigError, match=r"refusing to serve on '0\.0\.0\.0' without API keys"):
        check_bind("0.0.0.0", KeyRing())
    check_bind("127.0.0.1", KeyRing())
    check_bind("0.0.0.0", KeyRing(parse_env_keys("k" * 20)))


def test_serve_refuses_before_opening_anything(tmp_path: Path) -> None:
    """``hopindex serve --host 0.0.0.0`` without keys stops at once, opening no backend."""
    settings = Settings(data_dir=tmp_path / "data").resolved()
    with pytest.raises(ConfigError):
        serve(settings, "0.0.0.0", 0)
    assert not (tmp_path / "data").exists()


def test_serve_warns_that_auth_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Serving on loopback without keys logs an ``api_auth_disabled`` warning at start."""
    settings = Settings(data_dir=tmp_path / "data").resolved()
    # The service configures logging when it opens; keep the test's capture in place.
    monkeypatch.setattr("hopindex.api.service.configure_logging", lambda settings: None)

    def stop_at_once(url: str) -> None:
        assert url.startswith("http://127.0.0.1:")
        signal.raise_signal(signal.SIGTERM)

    with structlog.testing.capture_logs() as entries:
        serve(settings, "127.0.0.1", 0, on_ready=stop_at_once)
    warning = next(e for e in entries if e["event"] == "api_auth_disabled")
    assert warning["log_level"] == "warning" and warning["host"] == "127.0.0.1"
