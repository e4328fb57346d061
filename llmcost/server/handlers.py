"""HTTP handlers shared by both serving layouts (standalone Voila and Voila as a Jupyter
server extension): the landing redirect that replaces Voila's file tree, and the render
handler that answers "busy, please retry" (HTTP 503) at the kernel cap."""

from __future__ import annotations

import html
import os
import re

from jupyter_server.utils import url_path_join
from tornado import web
from tornado.routing import Matcher, Rule
from voila.tornado.handler import TornadoVoilaHandler

from ..apps import assets
from .kernels import KernelCapReached

#: the landing page, then the app opened when the workbook has none: ``/`` redirects to the
#: first that exists (the server serves notebooks/; the extension looks beside it too)
LANDING = ("index.ipynb", "review.ipynb")

BUSY_TEXT = "The workbook is busy right now. Please retry in a minute."

BUSY_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>llmcost - busy</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;color:#222}}
h1{{font-size:1.4em}} a{{color:#0b5cad}}</style></head>
<body class="llmc-busy"><h1>{text}</h1>
<p>All {cap} sessions of this server are in use. A session is freed a minute or two after
its page is closed.</p>
<p><a href="{retry}">Retry</a></p></body></html>
"""


def busy_page(cap: int, retry_url: str) -> str:
    return BUSY_HTML.format(text=BUSY_TEXT, cap=int(cap), retry=html.escape(retry_url, quote=True))


class LandingRedirect(web.RequestHandler):
    """``/`` and Voila's tree pages -> the landing app, keeping the query (a share link).

    ``landing`` is a list of notebook paths relative to the served root; the first that
    exists wins (the landing app, else the review app).
    """

    def initialize(self, root_dir: str, landing: list[str], base_url: str = "/"):
        self.root_dir = root_dir
        self.landing = landing
        self.base = base_url

    def get(self, *_args, **_kwargs):
        target = next((nb for nb in self.landing
                       if os.path.isfile(os.path.join(self.root_dir, nb))), self.landing[-1])
        url = url_path_join(self.base, "voila/render", target)
        if self.request.query:
            url += "?" + self.request.query
        self.redirect(url, permanent=False)


class NotFound(web.RequestHandler):
    """Hides a listing (the contents API behind Voila's file tree) or a path outside the
    served tree."""

    def prepare(self):
        raise web.HTTPError(404)


#: a path with a "." or ".." segment (as typed or percent-encoded) names nothing inside the
#: served tree: Voila's template file handler raises an assertion (500) on
#: ``/voila/templates/../../../etc/passwd``; every such path is answered 404 first
DOT_SEGMENT = r"(?:.*/)?(?:\.|%2[eE]){1,2}(?:/.*)?"

#: the longest URL answered [characters]: a shared link with a config.json model is at most
#: ~25,000 (scenario.MAX_CONFIG_CHARS plus the fields); longer ones get a plain 414 page
MAX_URL_CHARS = 65_536
#: request headers a server reads before closing the connection [bytes]: far above
#: :data:`MAX_URL_CHARS` so that an over-long URL (a pasted file, megabytes) gets its 414 page
#: (at tornado's default, 64 KiB, it closes the connection without any HTTP status)
MAX_HEADER_BYTES = 4_194_304

TOO_LONG_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>llmcost - link too long</title></head>
<body><h1>This link is too long</h1>
<p>The address has {n:,} characters; the workbook reads links of up to {cap:,}. Share the
scenario as a file (Save scenario) instead.</p></body></html>
"""


#: the most query keys a link carries: every Scenario field and a config.json's fields, for
#: each of the compared scenarios (A, B, C); a request with more gets a plain 400 page
def max_query_keys() -> int:
    from ..scenario import COMPARE_LABELS, FIELDS, MAX_CONFIG_FIELDS
    return len(COMPARE_LABELS) * (len(FIELDS) + MAX_CONFIG_FIELDS)


TOO_MANY_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>llmcost - too many keys</title></head>
<body><h1>This link has too many keys</h1>
<p>The address carries {n:,} query keys; a workbook link carries at most {cap:,} (every
setting and a config.json's fields for three compared scenarios).</p></body></html>
"""


class TooManyKeysMatcher(Matcher):
    """Matches a request whose query has more keys than :func:`max_query_keys`."""

    def match(self, request):
        q = request.query or ""
        return {} if q.count("&") + 1 > max_query_keys() else None


class TooManyKeys(web.RequestHandler):
    """400 with a plain page naming the limit."""

    def prepare(self):
        self.set_status(400)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        n = (self.request.query or "").count("&") + 1
        self.finish(TOO_MANY_HTML.format(n=n, cap=max_query_keys()))


class NulMatcher(Matcher):
    """Matches a path holding a NUL byte, typed or percent-encoded: it names no file (Voila's
    and jupyter_server's handlers raise on it, a 500)."""

    def match(self, request):
        path = request.path or ""
        return {} if "\x00" in path or "%00" in path.lower() else None


class TooLongMatcher(Matcher):
    """Matches a request whose URL is longer than :data:`MAX_URL_CHARS`."""

    def match(self, request):
        return {} if len(request.uri or "") > MAX_URL_CHARS else None


class TooLong(web.RequestHandler):
    """414 with a plain page for an over-long URL."""

    def prepare(self):
        self.set_status(414)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(TOO_LONG_HTML.format(n=len(self.request.uri), cap=MAX_URL_CHARS))


def guard_rules(server_url: str) -> list:
    """The rules to put before any other: 414 for an over-long URL, 400 for a query with
    more keys than a link carries, 404 for a path with a NUL or a dot segment (outside the
    served tree)."""
    return [Rule(TooLongMatcher(), TooLong), Rule(TooManyKeysMatcher(), TooManyKeys),
            Rule(NulMatcher(), NotFound),
            (url_path_join(server_url, DOT_SEGMENT), NotFound)]


class CappedVoilaHandler(TornadoVoilaHandler):
    """Voila's render handler; at the kernel cap it answers a plain "busy" page (503).

    A page takes a preheated kernel only if one is ready: Voila would otherwise wait for
    a pool entry still warming, or still sleeping out ``fill_delay`` before its refill
    starts, where a fresh kernel is quicker.
    """

    _notebook = None

    def should_use_rendered_notebook(self, *args, **kwargs):
        if not super().should_use_rendered_notebook(*args, **kwargs):
            return False
        pool = getattr(self.kernel_manager, "_pools", {}).get(self._notebook)
        ready = [t for t in pool or () if t.done()]
        if not ready:
            return False
        # Voila hands out the pool's first entry: put the ready ones first
        pool[:] = ready + [t for t in pool if not t.done()]
        mark = getattr(self.kernel_manager, "mark_taken", None)
        if mark is not None:
            mark(ready[0].result()["kernel_id"])
        return True

    @web.authenticated
    async def get(self, path=None):
        self._notebook = self.notebook_path or path
        km = self.kernel_manager
        prune = getattr(km, "prune_pools", None)
        if prune is not None:
            prune()
        # Voila's page sends its kernel's shutdown on ``beforeunload`` with the ``_xsrf``
        # cookie as the form's token; Voila's handler never sets that cookie, so without it
        # the POST gets 403 and a closed page's kernel lingers until the idle cull, holding
        # a cap slot and its memory. Reading the token sets the cookie (tornado).
        self.xsrf_token  # noqa: B018
        head = early_scripts()
        try:
            async for chunk in self.get_generator(path=path):
                if head and "<head>" in chunk:
                    chunk, head = chunk.replace("<head>", "<head>" + head, 1), ""
                self.write(chunk)
                self.flush()
        except KernelCapReached as err:
            if self._headers_written:
                raise
            self._busy(err.cap)

    def _busy(self, cap: int):
        self.clear()
        self.set_status(503)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Retry-After", "60")
        self.set_header("Cache-Control", "no-store")
        self.finish(busy_page(cap, self.request.uri))


def static_route(server_url: str):
    """The route serving the apps' plotly.js bundle under ``server_url`` (that file alone:
    its folder also holds the build recipe). Browsers cache the versioned URL for good
    (tornado's StaticFileHandler, ``?v=``)."""
    return (url_path_join(server_url, assets.ROUTE, f"({re.escape(assets.BUNDLE)})"),
            web.StaticFileHandler, {"path": str(assets.STATIC_DIR)})


def early_scripts() -> str:
    """``<script>`` tags a page loads as its HTML starts to arrive: the plotly.js bundle
    its plots will draw with, fetched and compiled while the page waits for the rest of
    its HTML and for its kernel (the main thread is otherwise idle then), instead of once
    the first plot's widget asks for it. ``id`` lets that widget find it."""
    url = os.environ.get(assets.URL_ENV)
    if not url:
        return ""
    # its state tells a widget arriving after the load (or the failure) what happened
    return (f'<script async id="{assets.SCRIPT_ID}" src="{html.escape(url, quote=True)}" '
            'onload="this.dataset.state=\'loaded\'" onerror="this.dataset.state=\'failed\'">'
            '</script>')


def advertise_bundle(base_url: str) -> None:
    """Tell the kernels this server will start (they inherit its environment, preheated
    pools included) where browsers find the bundle: their apps then draw with it instead
    of plotly's 4.8 MB Jupyter renderer (llmcost.apps.plotview). Call it before the first
    kernel starts."""
    os.environ[assets.URL_ENV] = assets.bundle_url(base_url)
