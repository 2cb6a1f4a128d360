"""``/v1/docs``: the API reference page and its vendored Redoc bundle, served by the API
without a key and without any other host: the page names no external URL, its
Content-Security-Policy forbids other hosts, and headless Chromium renders every
operation of the OpenAPI document from it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import requests

from tests.api.http.conftest import Api

CHROMIUM_TIMEOUT_S = 180
# What the Makefile installs (Debian's package); other distributions name it so too.
CHROMIUM_NAMES = ("chromium", "chromium-browser")
VENDORED = files("hopindex.api.http") / "static" / "redoc"


def operations(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, summary) of every operation."""
    return [(path, op["summary"]) for path, item in spec["paths"].items()
            for method, op in item.items() if method != "parameters"]


def test_the_page_needs_no_key_and_names_no_other_host(api: Api) -> None:
    """The page is HTML, public like the OpenAPI document, and every URL it holds is
    relative to the API (the bundle and the document), so it loads nothing from a CDN;
    its Content-Security-Policy allows this origin only."""
    answer = api.call("GET", "/v1/docs", key=None)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    page = answer.text
    urls = re.findall(r"""(?:src|href|spec-url)\s*=\s*["']([^"']*)["']""", page)
    assert sorted(urls) == ["docs/redoc.standalone.js", "openapi.json", "openapi.json"]
    assert not re.search(r"https?:|//", page.replace("<!DOCTYPE html>", ""))
    policy = answer.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self';" in policy
    assert "http" not in policy and "*" not in policy


def test_the_page_with_a_trailing_slash_redirects_to_it(api: Api) -> None:
    """``/v1/docs/`` is a permanent redirect, without a key, to ``../docs``: relative, as
    the page's own URLs are, so it lands on ``/v1/docs`` (behind a path prefix too),
    whose relative URLs then resolve as they must; a browser following it gets the page."""
    moved = api.call("GET", "/v1/docs/", key=None, allow_redirects=False)
    assert moved.status_code == 308
    assert moved.headers["Location"] == "../docs"
    assert urljoin(f"{api.url}/v1/docs/", moved.headers["Location"]) == f"{api.url}/v1/docs"
    followed = requests.get(f"{api.url}/v1/docs/", timeout=30)
    assert followed.status_code == 200 and followed.url == f"{api.url}/v1/docs"
    assert "<redoc spec-url=\"openapi.json\"" in followed.text


def test_the_bundle_is_the_vendored_file_as_javascript(api: Api) -> None:
    """The bundle route serves the vendored file byte for byte as JavaScript, without a
    key; gzipped when asked; and a 304 for a client holding the same ETag."""
    vendored = (VENDORED / "redoc.standalone.js").read_bytes()
    answer = api.call("GET", "/v1/docs/redoc.standalone.js", key=None,
                      headers={"Accept-Encoding": "gzip"})
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert answer.headers["Content-Encoding"] == "gzip"
    assert answer.content == vendored
    again = requests.get(f"{api.url}/v1/docs/redoc.standalone.js", timeout=30,
                         headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 304 and not again.content


def test_the_vendored_files_name_their_package_and_licence() -> None:
    """The bundle ships with its licence, its bundled libraries' notices and a README
    naming the package and version the bundle says it is."""
    readme = (VENDORED / "README.md").read_text()
    version = re.search(r"`redoc`\]\([^)]*\) (\d+\.\d+\.\d+)", readme)
    assert version is not None
    notices = (VENDORED / "redoc.standalone.js.LICENSE.txt").read_text()
    assert f'Version: "{version.group(1)}"' in notices
    assert "MIT License" in (VENDORED / "LICENSE").read_text()


def _chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium is not installed (`make chromium` installs Debian's package)")


@pytest.mark.integration
def test_chromium_renders_every_operation(api: Api, tmp_path: Path) -> None:
    """Headless Chromium opens the page on a loopback server and, once Redoc has run,
    the DOM holds every operation's summary and path from the OpenAPI document: none
    of them is in the page as served, so they were rendered by the bundle."""
    spec = requests.get(f"{api.url}/v1/openapi.json", timeout=30).json()
    served = requests.get(f"{api.url}/v1/docs", timeout=30).text
    dumped = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=15000", "--dump-dom", f"{api.url}/v1/docs"],
        capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=False)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = html.unescape(dumped.stdout)
    listed = operations(spec)
    assert len(listed) > 20
    missing = [(path, summary) for path, summary in listed
               if summary not in dom or path not in dom]
    assert not missing, f"not rendered: {missing}\n{dumped.stderr[-2000:]}"
    assert not [summary for _, summary in listed if summary in served]
    assert "/v1/" not in served
