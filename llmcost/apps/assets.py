"""Where the apps' browser-side assets are, for the servers that serve them (no widget
imports: the server process loads this)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

#: the environment variable by which a workbook server tells its kernels the bundle's URL
URL_ENV = "LLMCOST_PLOTLY_URL"
STATIC_DIR = Path(__file__).with_name("static")
#: plotly.js with only the trace types the apps draw (static/README.md)
BUNDLE = "plotly-llmcost.min.js"
#: the ``id`` of the page's early ``<script>`` loading the bundle (server/handlers.py)
SCRIPT_ID = "llmc-plotly"
#: URL path of STATIC_DIR below a server's base URL
ROUTE = "llmcost/static"


@functools.lru_cache(maxsize=None)
def bundle_version() -> str:
    """A digest of the bundle: its URL changes when it does, so browsers may cache it."""
    return hashlib.sha256((STATIC_DIR / BUNDLE).read_bytes()).hexdigest()[:12]


def bundle_url(base_url: str) -> str:
    """The bundle's URL on a server whose base URL is ``base_url``."""
    return f"{base_url.rstrip('/')}/{ROUTE}/{BUNDLE}?v={bundle_version()}"
