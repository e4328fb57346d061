"""Shared browser-test machinery: Debian's chromium driven by Playwright, Voila on a free
loopback port in its own process group. The fixtures are in tests/conftest.py: ``voila``, one
workbook server for the whole session; ``browser``, a chromium per module; ``page``.

Without /usr/bin/chromium the importing module skips, saying why, unless
LLMCOST_REQUIRE_BROWSER is set (CI sets it: there the browser tests must run).
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

# test modules import free_port and stop_server from here
from llmcost.server.procs import free_port, stop_server, wait_for_port  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "artifacts" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

if not Path(CHROMIUM).exists():
    if os.environ.get("LLMCOST_REQUIRE_BROWSER"):
        raise RuntimeError(f"{CHROMIUM} is required here (LLMCOST_REQUIRE_BROWSER is set)")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); browser tests skipped",
                allow_module_level=True)

sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright


def start_server(cmd, cwd, log_path, env=None, port=None, timeout_s=90):
    """Start a server in its own process group; returns once ``port`` answers."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "QUERY_STRING"}
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    proc.log_file = log
    wait_for_port(proc, port, timeout_s, Path(log_path))
    return proc


def workbook_cmd(port, *extra):
    """``make app``'s server (llmcost.server: landing page, preheated pools, kernel cap)."""
    return [sys.executable, "-m", "llmcost.server", ".", "--no-browser", f"--port={port}",
            "--Voila.ip=127.0.0.1", *extra]


def start_binder_layout(conf: Path):
    """``jupyter server`` from the repository root, configured the way binder/postBuild
    installs jupyter_config.json (into ``conf``, put on Jupyter's config path), with a cap
    of two kernels. Returns its base URL and process (for :func:`stop_server`)."""
    from llmcost.server.jupyter_config import install
    (conf / "jupyter_config.json").write_text('{"ServerApp": {"port_retries": 3}}')
    install(ROOT / "jupyter_config.json", conf)
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(conf)}
    cmd = [str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1",
           "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root",
           "--CappedKernelManager.max_kernels=2"]
    proc = start_server(cmd, ROOT, conf / "server.log", env=env, port=port)
    return f"http://127.0.0.1:{port}", proc


#: the browser tests' server: one preheated kernel per notebook, refilled at once (the
#: production pools hold 16 kernels refilled after 2 minutes; llmcost.server.app.POOLS), so
#: one server serves the whole session without starving the two cores
TEST_POOLS = '{"default": {"pool_size": 1}}'


def browser_tests_server_cmd(port):
    """The workbook server as the browser tests run it (see :data:`TEST_POOLS`)."""
    return workbook_cmd(port, f"--VoilaKernelManager.kernel_pools_config={TEST_POOLS}",
                        "--VoilaKernelManager.fill_delay=0")


def launch_browser(p):
    """Debian's chromium, headless, as every browser test drives it."""
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def new_page(browser):
    """A page in its own context, 1400 x 1500; :func:`leave_page` closes it."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1500})
    return ctx.new_page()


def leave_page(pg):
    """Leave the page as a reviewer closing the tab does (closing the context skips
    beforeunload): Voila's beacon then shuts its kernel down, so the pages of a session
    sharing one server do not pile up kernels toward its cap until the idle cull."""
    try:
        pg.goto("about:blank", timeout=10_000)
    except Exception:   # noqa: BLE001 - a page a test closed or crashed has nothing to leave
        pass
    pg.context.close()


def open_app(page, base, name, query=""):
    page.goto(f"{base}/{name}.ipynb{query}", wait_until="commit", timeout=60_000)
    page.wait_for_selector(".llmc-headline-value", timeout=90_000)
    page.wait_for_selector(".js-plotly-plot .gtitle", timeout=90_000)


def text_of(page, selector):
    """The figure of a headline box (its flag note, if any, is not part of it)."""
    if selector.startswith(".llmc-headline-"):
        selector += " .llmc-headline-value"
    return page.locator(selector).first.inner_text().strip()


def titles(page):
    return page.locator(".gtitle").all_text_contents()


def wait_change(page, get, before, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        now = get()
        if now != before:
            return now
        page.wait_for_timeout(200)
    raise AssertionError(f"nothing changed from {before!r}")


def assert_no_error_text(page):
    body = page.locator("body").inner_text()
    for bad in (r"Traceback", r"Exception", r"Error:", r"\bNaN\b", r"\binf\b", r"Infinity"):
        assert not re.search(bad, body), f"{bad!r} shown on the page"


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def fill_number(page, field, value):
    box = page.locator(f".llmc-ctl-{field} input").first
    box.fill(str(value))
    box.press("Enter")


