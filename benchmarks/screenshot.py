"""The README's picture of the review app, taken from a served app (``make screenshot``).

``python benchmarks/screenshot.py [OUT]`` serves notebooks/ as ``make app`` does
(``python -m llmcost.server``), opens the review app with the README's own link (the query of
its ``review.ipynb?...`` example) in Debian's headless chromium at 1400 x 900, waits until
the headline figures and the plots have painted, and writes the viewport to OUT
(notebooks/img/review.png, the image the README shows). It prints the headline it captured,
and notes it with the link's query in the PNG itself (a tEXt chunk, :func:`with_note`).

Not a benchmark: it lives here beside benchmarks/load.py, the other script that drives the
served apps in chromium, and is shipped with the sdist like it. Two tests keep the picture
current: tests/apps/test_screenshot.py runs :func:`capture` against the browser tests' server
and checks the headline it read against ``llmcost.review.evaluate`` for the README's
scenario (the script works and reads the right page); tests/test_readme_agrees.py, without a
browser, checks the committed picture's note against the README's link and ``evaluate``
(the picture shows today's figures for that link).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcost.server.procs import free_port, stop_server, wait_for_port  # noqa: E402

README = ROOT / "README.md"
OUT = ROOT / "notebooks" / "img" / "review.png"
CHROMIUM = "/usr/bin/chromium"
# as tests/browser_support.py launches it (DESIGN.md: Playwright against Voila)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
#: the picture's size: the headline cards and the first plot, ~150 kB (a full page would be
#: several times longer and heavier for the README)
WIDTH, HEIGHT = 1400, 900
#: the headline boxes read back from the page (what the README's picture shows)
HEADLINE_KEYS = ("days", "gpus", "gpu_hours", "cost_on_demand_usd", "mfu")
# make app's server with one preheated kernel for the review app only: make app preheats 8
# review kernels and one per other app, 17 kernels a picture does not need on 2 cores
POOLS = '{"default": {"pool_size": 0}, "review.ipynb": {"pool_size": 1}}'
# the README's table row: | `review` | ... | `review.ipynb?<query>` |
LINK = re.compile(r"`review\.ipynb\?([^`\s]+)`")


def readme_query(readme: Path = README) -> str:
    """The query string of the README's review app link (its table row's example)."""
    found = LINK.findall(readme.read_text(encoding="utf-8"))
    if len(found) != 1:
        raise ValueError(f"{readme} must show one review.ipynb?... link, found {len(found)}")
    return found[0]


#: the PNG text chunk's keyword under which the picture notes what it shows
PNG_KEY = b"llmcost"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def with_note(png: bytes, note: dict) -> bytes:
    """``png`` with ``note`` (JSON) in a tEXt chunk before IEND: the picture says which link
    and which headline it shows, so a test without a browser can tell a stale README image
    (:func:`read_note`)."""
    assert png.startswith(PNG_SIGNATURE) and png[-12:-8] == b"\x00\x00\x00\x00"
    data = PNG_KEY + b"\x00" + json.dumps(note, sort_keys=True).encode("latin-1")
    chunk = len(data).to_bytes(4, "big") + b"tEXt" + data
    chunk += zlib.crc32(chunk[4:]).to_bytes(4, "big")
    return png[:-12] + chunk + png[-12:]


def read_note(path: Path) -> dict | None:
    """The note :func:`with_note` wrote into the PNG at ``path``; None if it has none."""
    png = Path(path).read_bytes()
    i = len(PNG_SIGNATURE)
    while i + 8 <= len(png):
        n, kind = int.from_bytes(png[i:i + 4], "big"), png[i + 4:i + 8]
        data = png[i + 8:i + 8 + n]
        if kind == b"tEXt" and data.startswith(PNG_KEY + b"\x00"):
            return json.loads(data[len(PNG_KEY) + 1:].decode("latin-1"))
        i += 12 + n
    return None


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG's header."""
    head = Path(path).read_bytes()[16:24]
    return int.from_bytes(head[:4], "big"), int.from_bytes(head[4:], "big")


@contextlib.contextmanager
def serve(log: Path | None = None):
    """``make app``'s server (llmcost.server in notebooks/) on a free loopback port; yields
    the base URL of its pages (``.../voila/render``) and stops it, kernels included."""
    port = free_port()
    log = log or Path(tempfile.gettempdir()) / f"llmcost-screenshot-{port}.log"
    env = {k: x for k, x in os.environ.items() if k != "QUERY_STRING"}
    cmd = [sys.executable, "-m", "llmcost.server", ".", "--no-browser", f"--port={port}",
           "--Voila.ip=127.0.0.1", f"--VoilaKernelManager.kernel_pools_config={POOLS}",
           "--VoilaKernelManager.fill_delay=0"]
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT / "notebooks", env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_port(proc, port, 90, log)
            yield f"http://127.0.0.1:{port}/voila/render"
        finally:
            stop_server(proc)


def capture(base: str, out: Path = OUT, query: str | None = None,
            width: int = WIDTH, height: int = HEIGHT) -> dict:
    """Open ``{base}/review.ipynb?{query}`` (the README's link by default), wait until the
    headline and every plot have painted, and write a ``width`` x ``height`` PNG of the
    viewport to ``out``, noted with the query and the headline. Returns what was captured:
    ``url``, ``path`` and ``headline`` (key -> the text of its box on the page, e.g.
    ``{"days": "78.4 (band ...)"}``)."""
    from playwright.sync_api import sync_playwright

    from llmcost.apps.review_app import ReviewApp

    query = readme_query() if query is None else query
    url = f"{base}/review.ipynb" + (f"?{query}" if query else "")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            # "commit": the load event waits for the whole execution (tests/browser_support)
            page.goto(url, wait_until="commit", timeout=60_000)
            # a link's page clears its headline until the link's results are in
            # (BasePanel.apply_query), so a painted headline is the link's
            page.wait_for_selector(".llmc-headline-days .llmc-headline-value", timeout=90_000)
            page.wait_for_function(
                "n => document.querySelectorAll('.js-plotly-plot .gtitle').length >= n",
                arg=len(ReviewApp.figures_from), timeout=90_000)
            # plotly's transitions and the last layout pass
            page.wait_for_timeout(500)
            headline = {}
            for k in HEADLINE_KEYS:
                box = page.locator(f".llmc-headline-{k} .llmc-headline-value")
                if box.count():
                    headline[k] = box.first.inner_text().strip()
            png = page.screenshot()
            # leave as a reviewer does, so Voila's beacon shuts the page's kernel down on a
            # shared server (tests/browser_support.leave_page)
            page.goto("about:blank", timeout=10_000)
        finally:
            browser.close()
    out.write_bytes(with_note(png, {"query": query, "headline": headline}))
    return {"url": url, "path": out, "headline": headline}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else OUT
    with serve() as base:
        got = capture(base, out)
    print(f"{got['path']} ({got['path'].stat().st_size / 1e3:,.0f} kB) from {got['url']}")
    for k, text in got["headline"].items():
        print(f"  {k}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
