"""``GET /v1/docs``: the API reference, rendered in the browser by the vendored Redoc
bundle (static/redoc/README.md) from ``/v1/openapi.json``; ``/v1/docs/`` redirects
there. Public, as the OpenAPI document is: the page shows nothing the document does
not.

The page loads nothing from another host; its Content-Security-Policy says so to the
browser too, so a refreshed bundle that reaches out is stopped (and the rendering
test fails) instead of leaking which API a reader looks at.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files

from aiohttp import web

from hopindex.api.http.routing import Guard, Route

BUNDLE = "redoc.standalone.js"
DOCS_PATH = "/v1/docs"
BUNDLE_PATH = f"{DOCS_PATH}/{BUNDLE}"
# With a trailing slash the page's relative URLs would resolve under /v1/docs/: it is
# served at DOCS_PATH only, and this path redirects there.
DOCS_SLASH_PATH = f"{DOCS_PATH}/"
# Relative, like the page's own URLs: from /v1/docs/ it is /v1/docs, behind a proxy's
# path prefix too.
DOCS_FROM_SLASH = "../docs"
HTML_TYPE = "text/html"
SCRIPT_TYPE = "text/javascript"
# Relative URLs: the page keeps working behind a proxy that serves the API under a
# path prefix. From /v1/docs, "docs/x" is /v1/docs/x and "openapi.json" /v1/openapi.json.
PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hopindex API reference</title>
<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<noscript>This page needs JavaScript. The API is described by its OpenAPI document,
<a href="openapi.json">openapi.json</a>.</noscript>
<redoc spec-url="openapi.json" hide-hostname="true" expand-responses="200,201,202"
       path-in-middle-panel="true"></redoc>
<script src="docs/{BUNDLE}"></script>
</body>
</html>
"""
# Redoc styles with <style> elements it writes at run time (styled-components), and
# runs its search index in a worker made from a blob: URL.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:", "font-src 'self' data:", "connect-src 'self'",
    "worker-src blob:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
))
_PAGE_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY,
                 "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                 "Cache-Control": "no-cache"}


@dataclass(frozen=True, slots=True)
class Bundle:
    body: bytes
    etag: str

    @classmethod
    def load(cls) -> Bundle:
        body = (files("hopindex.api.http") / "static" / "redoc" / BUNDLE).read_bytes()
        return cls(body=body, etag=hashlib.sha256(body).hexdigest()[:32])


BUNDLE_KEY = web.AppKey("hopindex_docs_bundle", Bundle)


async def docs_page(request: web.Request) -> web.Response:
    return web.Response(text=PAGE, content_type=HTML_TYPE, headers=_PAGE_HEADERS)


async def docs_redirect(request: web.Request) -> web.Response:
    """``/v1/docs/`` → ``/v1/docs``, for good (308: any method kept, cacheable)."""
    return web.Response(status=308, headers={"Location": DOCS_FROM_SLASH,
                                             "Cache-Control": "no-cache"})


async def docs_bundle(request: web.Request) -> web.Response:
    """The bundle, revalidated by ETag on each load: a refreshed bundle is picked up at
    once, an unchanged one costs a 304."""
    bundle = request.app[BUNDLE_KEY]
    headers = {"ETag": f'"{bundle.etag}"', "Cache-Control": "no-cache",
               "X-Content-Type-Options": "nosniff"}
    if any(tag.value == bundle.etag for tag in request.if_none_match or ()):
        return web.Response(status=304, headers=headers)
    response = web.Response(body=bundle.body, content_type=SCRIPT_TYPE, charset="utf-8",
                            headers=headers)
    response.enable_compression()  # about 1 MB, a quarter of it gzipped
    return response


ROUTES = [
    Route("GET", DOCS_PATH, docs_page, Guard.PUBLIC),
    Route("GET", DOCS_SLASH_PATH, docs_redirect, Guard.PUBLIC),
    Route("GET", BUNDLE_PATH, docs_bundle, Guard.PUBLIC),
]
