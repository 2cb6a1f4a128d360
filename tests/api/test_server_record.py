"""The record ``hopindex serve`` keeps in its data dir: found while its process lives,
ignored once it is stale (the process gone, its pid reused, written on another host)
or damaged, removed by its own server only, refused to a second server, and never
written or read when the engines are not opened in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hopindex.api.server_record import (
    RECORD_FILE,
    DataDirInUseError,
    ServerRecord,
    find_server,
    local_url,
    record_path,
    recording_server,
)
from hopindex.core.settings import Settings
from hopindex.scheduler.recovery import ProcessIdentity, process_start_time, this_process


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data").resolved()


def write_record(settings: Settings, process: ProcessIdentity,
                 url: str = "http://127.0.0.1:8123") -> Path:
    path = record_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": url, "needs_key": False, "since": "2026-01-01",
                                "process": process.owner_record(lease="")}))
    return path


def test_the_record_is_found_while_its_server_runs_and_removed_when_it_stops(
        settings: Settings) -> None:
    """Once published, the record names the server's URL (any-address hosts as
    loopback), pid and whether it needs a key; a second server on the data dir is
    refused naming the first; on the way out the record is gone."""
    with recording_server(settings) as publish:
        assert find_server(settings) is None  # not listening yet: nothing to go to
        publish("http://0.0.0.0:8123", True)
        found = find_server(settings)
        assert found == ServerRecord(url="http://127.0.0.1:8123", pid=os.getpid(),
                                     needs_key=True,
                                     data_dir=str(settings.data_dir.resolve()))
        with pytest.raises(DataDirInUseError) as refused, recording_server(settings):
            pass
        assert str(refused.value) == (
            f"the data dir {settings.data_dir.resolve()} is in use by `hopindex serve` "
            f"(pid {os.getpid()}, http://127.0.0.1:8123): stop it, or serve another data "
            "dir (HOPINDEX_DATA_DIR)")
        assert not refused.value.retryable
    assert not record_path(settings).exists()
    assert find_server(settings) is None


def test_a_stale_record_is_ignored(settings: Settings) -> None:
    """A record whose process exited, whose pid now belongs to a younger process, that
    was written on another host, or that is damaged names no server; a new server
    replaces it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    me = this_process()
    stale = [replace(me, pid=child.pid, started=""), replace(me, started="1"),
             replace(me, host="elsewhere")]
    for process in stale:
        write_record(settings, process)
        assert find_server(settings) is None, process
    record_path(settings).write_text('{"url": "http://127.0.0.1:81", "needs')
    assert find_server(settings) is None
    with recording_server(settings) as publish:
        publish("http://127.0.0.1:9000", False)
        found = find_server(settings)
        assert found is not None and found.url == "http://127.0.0.1:9000"


def test_a_server_removes_only_its_own_record(settings: Settings) -> None:
    """When another live process's record replaced this server's, stopping leaves it."""
    parent = os.getppid()
    other = replace(this_process(), pid=parent, started=process_start_time(parent) or "")
    with recording_server(settings) as publish:
        publish("http://127.0.0.1:9000", False)
        write_record(settings, other, url="http://127.0.0.1:9001")
    found = find_server(settings)
    assert found is not None and (found.pid, found.url) == (parent, "http://127.0.0.1:9001")


def test_no_record_when_the_engines_are_not_opened_in_process(settings: Settings) -> None:
    """With a broker the engine owner holds the engines (their calls travel to it), and
    server engines have no lock: a server writes nothing, and a record is not read."""
    for routed in (replace(settings, broker_url="redis://localhost:6379/0"),
                   replace(settings, vector_url="qdrant://localhost:6333",
                           keyword_url="elasticsearch://localhost:9200")):
        with recording_server(routed) as publish:
            publish("http://127.0.0.1:9000", False)
        assert not (settings.data_dir / RECORD_FILE).exists()
        write_record(settings, this_process())
        assert find_server(routed) is None
        assert find_server(settings) is not None
        record_path(settings).unlink()


def test_local_url_reaches_an_any_address_server_on_loopback() -> None:
    assert local_url("http://0.0.0.0:8080") == "http://127.0.0.1:8080"
    assert local_url("http://[::]:8080") == "http://[::1]:8080"
    assert local_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert local_url("http://[::1]:8080") == "http://[::1]:8080"
