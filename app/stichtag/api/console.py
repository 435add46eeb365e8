"""Serve the auditor console: GET / (the page) and /console/static/* (its assets).

Both are left out of the OpenAPI schema: they carry no tenant data and need no key (the
page asks for the key and keeps it in the browser's sessionStorage only), so the
OpenAPI-driven tenancy probe does not see them.
"""

from __future__ import annotations

from litestar import Response, get
from litestar.datastructures import CacheControlHeader
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

from stichtag.console import STATIC_DIR

_SECURITY_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
}


@get("/", include_in_schema=False, sync_to_thread=False, media_type="text/html; charset=utf-8")
def console_index() -> Response[bytes]:
    """The console page."""
    return Response((STATIC_DIR / "index.html").read_bytes(),
                    media_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS)


console_static = create_static_files_router(
    path="/console/static", directories=[STATIC_DIR], include_in_schema=False,
    name="console_static", cache_control=CacheControlHeader(no_cache=True),
)

CONSOLE_ROUTES: list[ControllerRouterHandler] = [console_index, console_static]
"""Route handlers to add to the app's ``route_handlers``."""
