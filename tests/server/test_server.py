"""Serving the workbook, over real HTTP, in both layouts.

- standalone: ``python -m llmcost.server`` in a notebooks folder (``make app``);
- extension: ``jupyter server`` from the repository root with Voila and llmcost.server as
  server extensions, configured as Binder's postBuild installs ``jupyter_config.json``.

Each server runs on a free loopback port in its own process group and is stopped (with
any kernel left) at the end. Small notebooks written to tmp_path stand in for the apps
where a test is about the server, not an app.
"""

import http.client
import json
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import ROOT, free_port, start_binder_layout, start_server, stop_server, workbook_cmd

from llmcost.apps import assets
from llmcost.server import app as server_app
from llmcost.server.handlers import BUSY_TEXT
from llmcost.server.jupyter_config import install
from llmcost.server.procs import kernel_pids, page_kernel_ids

pytestmark = pytest.mark.slow


def notebook(source: str) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                   "outputs": [], "source": source}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5})


# Shows the query it was opened with, read the way run_app does (preheated or not).
# llmcost.apps.preheat speaks Voila's query protocol without importing Voila (44 MB and
# 2.3 CPU-s per kernel): the probe says whether the kernel imported it.
PROBE = """import html, os, sys
import ipywidgets as W
from llmcost.apps.preheat import get_query_string
q = get_query_string() or ""
display(W.HTML(f'<span class="probe">query=[{html.escape(q)}] '
               f'voila-imported=[{"voila" in sys.modules}]</span>'))
"""

TINY = "import ipywidgets as W\ndisplay(W.HTML('<b class=\"tiny\">tiny app</b>'))\n"

# The apps' heartbeat at a third of its period and of its silence (3 s, 10 s): the same rule,
# checked in seconds rather than tens of seconds. The work takes twice the silence.
HEARTBEAT = """import time
import ipywidgets as W
from llmcost.apps.heartbeat import Heartbeat
b = W.Button(description="work 7 s")
b.add_class("slow-work")
b.on_click(lambda _: time.sleep(7))
display(W.VBox([W.HTML('<b class="hb-ready">ready</b>'), b,
                Heartbeat(period_s=1.0, lost_after_s=3.5)]))
"""


def get(url, timeout=120, log: Path | None = None):
    """GET without following redirects: (status, headers, body). A page that stalls fails
    with the end of the server's ``log`` (its kernels' stderr included)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", u.path + (f"?{u.query}" if u.query else ""))
        r = conn.getresponse()
        body = r.read().decode("utf-8", "replace")
    except TimeoutError as err:
        tail = log.read_text()[-8000:] if log is not None else "(no log)"
        raise AssertionError(f"{url} stalled for {timeout} s; server log:\n{tail}") from err
    finally:
        conn.close()
    headers = {}
    for k, v in r.getheaders():   # repeated headers (Set-Cookie) one per line
        headers[k.lower()] = f"{headers[k.lower()]}\n{v}" if k.lower() in headers else v
    return r.status, headers, body


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def serve_standalone(folder, log, *extra):
    port = free_port()
    proc = start_server(workbook_cmd(port, *extra), folder, log, port=port)
    return proc, f"http://127.0.0.1:{port}"


def serve_notebook(tmp_path, name, cells, *extra):
    """A server of one notebook ``name`` made of ``cells``: (process, base URL, log path)."""
    (tmp_path / name).write_text(notebook(cells))
    log = tmp_path.parent / f"{tmp_path.name}.log"
    return (*serve_standalone(tmp_path, log, *extra), log)


# ------------------------------------------------------------------ standalone layout

@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """The apps folder with a probe as its landing page; production settings (preheated)."""
    folder = tmp_path_factory.mktemp("apps")
    shutil.copy(ROOT / "notebooks" / "review.ipynb", folder)
    shutil.copy(ROOT / "notebooks" / "voila.json", folder)
    (folder / "index.ipynb").write_text(notebook(PROBE))
    (folder / "reports").mkdir()
    (folder / "reports" / "secret.html").write_text("<p>a report</p>")
    log = folder.parent / "standalone.log"
    proc, base = serve_standalone(folder, log)
    # index (1) + review (2): their pools are warm once the log says so
    wait_for(lambda: log.read_text().count("is filled with") >= 2, 180, "preheated pools")
    yield base, proc, log
    stop_server(proc)


def test_root_redirects_to_the_landing_app_keeping_the_query(standalone):
    base, _, _ = standalone
    status, h, _ = get(base + "/")
    assert status == 302 and h["location"] == "/voila/render/index.ipynb"
    status, h, _ = get(base + "/?model=llama3-70b&gpus=512")
    assert status == 302 and h["location"] == "/voila/render/index.ipynb?model=llama3-70b&gpus=512"


def test_kernels_talk_over_unix_sockets_not_tcp_ports(standalone):
    # the pool kernels start at once; over TCP a port picked for one can be taken before it
    # binds it (a dead pool kernel, "Address already in use"): each kernel's connection file
    # says ipc, its channels are socket files (ipykernel's own debugger socket still binds a
    # random TCP port, atomically: nothing to race for)
    _, proc, _ = standalone
    pids = kernel_pids(proc.pid)
    assert len(pids) >= 3      # the pools of index.ipynb (2) and review.ipynb (8), all started
    for pid in pids:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        info = json.loads(Path(args[args.index(b"-f") + 1].decode()).read_text())
        assert info["transport"] == server_app.KERNEL_TRANSPORT == "ipc", info
        # ipc's "ports" name socket files beside the connection file: ip-1 ... ip-5
        assert Path(f"{info['ip']}-{info['shell_port']}").is_socket(), info


def test_no_file_tree_or_reports_folder_is_reachable(standalone):
    base, _, _ = standalone
    for path in ("/voila", "/voila/", "/voila/tree", "/voila/tree/", "/voila/tree/reports"):
        status, h, body = get(base + path)
        assert status == 302 and h["location"].startswith("/voila/render/index.ipynb"), path
        assert "secret" not in body and "reports" not in body
    for path in ("/voila/api/contents", "/voila/api/contents/reports"):
        status, _, body = get(base + path)
        assert status == 404 and "secret" not in body, path


def test_preheated_landing_page_receives_the_share_links_query(standalone):
    base, _, log = standalone
    status, _, body = get(base + "/voila/render/index.ipynb?model=llama3-70b&gpus=512", log=log)
    assert status == 200
    # the kernel ran before the request; the query reached it through get_query_string
    assert "query=[model=llama3-70b" in body and "gpus=512]" in body
    assert "voila-imported=[False]" in body
    assert "Using pre-heated kernel" in log.read_text()


def test_existing_app_urls_still_render(standalone):
    base, _, log = standalone
    status, _, body = get(base + "/voila/render/review.ipynb?model=llama3-8b&gpus=64", log=log)
    assert status == 200
    assert "application/vnd.jupyter.widget-view+json" in body
    assert "Traceback" not in body
    assert_loads_the_apps_plotly_bundle(base, body, "/")


def assert_loads_the_apps_plotly_bundle(base, body, base_url):
    """The page fetches the apps' plotly.js bundle from its head, at the URL the kernels
    were told (llmcost.apps.plotview), and not plotly's own JupyterLab extension."""
    url = assets.bundle_url(base_url)
    head = body[body.index("<head>"):body.index("</head>")]
    assert f'<script async id="{assets.SCRIPT_ID}" src="{url}"' in head
    config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">'
                                  r'(.*?)</script>', body, re.S).group(1))
    loaded = {e["name"] for e in config["federated_extensions"]}
    assert "anywidget" in loaded and not loaded & set(server_app.LABEXTENSIONS_NOT_LOADED)
    status, h, js = get(base + url)
    assert status == 200 and js.startswith("/*! plotly.js v")
    max_age = re.search(r"max-age=(\d+)", h.get("cache-control", ""))
    assert max_age and int(max_age.group(1)) >= 365 * 86400   # versioned: cached for good
    # the bundle alone: not the build recipe beside it
    for other in ("build.sh", "README.md", "plotly-llmcost.entry.js"):
        assert (assets.STATIC_DIR / other).exists()
        status, _, _ = get(base + url.split(assets.BUNDLE)[0] + other)
        assert status == 404, other


def test_production_defaults_cull_closed_pages_and_keep_open_ones():
    c = server_app.defaults()
    cull = c.MappingKernelManager
    assert cull.cull_connected is False                  # an open page keeps its kernel
    assert 60 <= cull.cull_idle_timeout <= 120 and cull.cull_interval <= 30
    assert c.VoilaConfiguration.preheat_kernel is True
    pools = c.VoilaKernelManager.kernel_pools_config
    assert pools["review.ipynb"]["pool_size"] >= pools["default"]["pool_size"] >= 1
    # the Binder layout uses the same culling, and leaves out the same JupyterLab extensions
    conf = json.loads((ROOT / "jupyter_config.json").read_text())
    assert conf["MappingKernelManager"] == {k: getattr(cull, k) for k in conf["MappingKernelManager"]}
    assert (conf["VoilaConfiguration"]["extension_denylist"] == c.VoilaConfiguration.extension_denylist
            == server_app.LABEXTENSIONS_NOT_LOADED)


def test_kernel_cap_answers_a_friendly_busy_page(tmp_path):
    proc, base, log = serve_notebook(tmp_path, "tiny.ipynb", TINY,
                                     "--preheat_kernel=False",
                                     "--CappedKernelManager.max_kernels=2")
    try:
        for _ in range(2):
            status, _, body = get(base + "/voila/render/tiny.ipynb")
            assert status == 200 and "tiny app" in body
        status, h, body = get(base + "/voila/render/tiny.ipynb?model=llama3-8b")
        assert status == 503
        assert BUSY_TEXT in body and "retry" in body.lower()
        assert h["retry-after"] == "60" and h["content-type"].startswith("text/html")
        assert "Traceback" not in body and "Error" not in body
        assert len(kernel_pids(proc.pid)) == 2
    finally:
        stop_server(proc)


@pytest.mark.browser
def test_closed_page_kernel_is_culled_open_page_kernel_is_kept(tmp_path, page):
    proc, base, log = serve_notebook(tmp_path, "tiny.ipynb", TINY,
                                     "--preheat_kernel=False",
                                     "--MappingKernelManager.cull_idle_timeout=4",
                                     "--MappingKernelManager.cull_interval=1")
    try:
        page.goto(base + "/voila/render/tiny.ipynb", wait_until="commit", timeout=60_000)
        page.wait_for_selector(".tiny", timeout=60_000)       # connected: widgets live
        open_kernels = set(kernel_pids(proc.pid))
        assert len(open_kernels) == 1
        status, _, _ = get(base + "/voila/render/tiny.ipynb")   # a page never opened
        assert status == 200
        closed = set(kernel_pids(proc.pid)) - open_kernels
        assert len(closed) == 1
        wait_for(lambda: not closed & set(kernel_pids(proc.pid)), 30, "the closed page's kernel")
        time.sleep(5)   # more than the idle timeout again: the open page keeps its kernel
        assert open_kernels <= set(kernel_pids(proc.pid))
    finally:
        stop_server(proc)


@pytest.mark.browser
def test_leaving_a_page_shuts_its_kernel_down_at_once(tmp_path, page):
    # Voila's page posts /voila/api/shutdown/<kernel> on beforeunload with the _xsrf cookie
    # as its token. Without the cookie that POST got 403 and the kernel waited for the idle
    # cull (90 s here, the production default), holding a slot of the cap.
    proc, base, log = serve_notebook(tmp_path, "tiny.ipynb", TINY, "--preheat_kernel=False")
    try:
        status, h, _ = get(base + "/voila/render/tiny.ipynb")
        assert status == 200 and "_xsrf=" in h.get("set-cookie", "")
        wait_for(lambda: len(kernel_pids(proc.pid)) == 1, 30, "the unopened page's kernel")
        unopened = set(kernel_pids(proc.pid))
        page.goto(base + "/voila/render/tiny.ipynb", wait_until="commit", timeout=60_000)
        page.wait_for_selector(".tiny", timeout=60_000)
        mine = set(kernel_pids(proc.pid)) - unopened
        assert len(mine) == 1
        page.goto("about:blank")                       # leaving runs beforeunload
        wait_for(lambda: not mine & set(kernel_pids(proc.pid)), 20, "the left page's kernel")
        shutdowns = [ln for ln in log.read_text().splitlines() if "api/shutdown" in ln]
        assert not any(re.search(r"\b403\b", ln) for ln in shutdowns), shutdowns
        assert unopened <= set(kernel_pids(proc.pid))  # another page's kernel is not touched
    finally:
        stop_server(proc)


@pytest.mark.browser
def test_connection_lost_banner_when_the_kernel_dies(tmp_path, page):
    proc, base, log = serve_notebook(tmp_path, "hb.ipynb", HEARTBEAT,
                                     "--preheat_kernel=False")
    try:
        page.goto(base + "/voila/render/hb.ipynb", wait_until="commit", timeout=60_000)
        page.wait_for_selector(".hb-ready", timeout=60_000)
        page.wait_for_selector(".llmc-heartbeat", state="attached", timeout=30_000)
        # a long computation is not a lost connection: no banner while it runs, nor after
        # (the absence of a banner over a span can only be checked by waiting it out)
        page.locator(".slow-work").click()
        page.wait_for_timeout(8_000)
        assert page.locator(".llmc-connection-lost").count() == 0
        pids = kernel_pids(proc.pid)
        assert len(pids) == 1, "the page's kernel, the only one of this server"
        os.kill(pids[0], signal.SIGKILL)
        banner = page.locator(".llmc-connection-lost")
        banner.wait_for(state="visible", timeout=30_000)
        assert "Connection to the server lost - reload the page" in banner.inner_text()
        box = banner.bounding_box()
        assert box["y"] <= 1 and box["height"] >= 20      # fixed at the top, readable
    finally:
        stop_server(proc)


# ------------------------------------------------------------------ extension layout

@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """The Binder layout (:func:`browser_support.start_binder_layout`): base URL, process."""
    base, proc = start_binder_layout(tmp_path_factory.mktemp("jupyter-config"))
    yield base, proc
    stop_server(proc)


def test_extension_root_leads_to_the_landing_app_keeping_the_query(extension):
    base, _ = extension
    status, h, _ = get(base + "/?model=llama3-70b")
    assert status == 302 and h["location"] == "/voila?model=llama3-70b"
    status, h, _ = get(base + h["location"])
    assert status == 302
    assert h["location"] == "/voila/render/notebooks/index.ipynb?model=llama3-70b"
    for path in ("/voila/tree", "/voila/tree/notebooks", "/voila/tree/notebooks/reports"):
        status, h, _ = get(base + path)
        assert status == 302 and h["location"] == "/voila/render/notebooks/index.ipynb", path
    status, _, body = get(base + "/voila/api/contents/notebooks")
    assert status == 404 and "review.ipynb" not in body


def test_extension_binder_launch_url_renders_and_the_cap_holds(extension):
    # Binder's ?urlpath=voila/render/notebooks/<app>.ipynb lands here
    base, proc = extension
    status, _, body = get(base + "/voila/render/notebooks/review.ipynb?model=llama3-8b&gpus=64")
    assert status == 200
    assert "application/vnd.jupyter.widget-view+json" in body and "Traceback" not in body
    assert_loads_the_apps_plotly_bundle(base, body, "/")
    status, h, body = get(base + "/voila/render/notebooks/tco.ipynb")
    assert status == 200
    tco_shutdown = shutdown_beacon(base, h, body)
    status, h, body = get(base + "/voila/render/notebooks/spot.ipynb")   # third kernel, cap 2
    assert status == 503 and BUSY_TEXT in body and "Traceback" not in body
    assert len(kernel_pids(proc.pid)) == 2
    # the tco page is left: Voila's beacon shuts its kernel down and frees its slot
    assert tco_shutdown() == 204
    wait_for(lambda: len(kernel_pids(proc.pid)) == 1, 20, "the left page's kernel to go")
    status, _, _ = get(base + "/voila/render/notebooks/spot.ipynb")
    assert status == 200


def page_kernel_id(body: str) -> str:
    """The one kernel a rendered Voila page connects to."""
    (kernel,) = page_kernel_ids(body)
    return kernel


def shutdown_beacon(base, headers, body):
    """What Voila's page sends on ``beforeunload``: a form POST to
    ``voila/api/shutdown/<its kernel>`` whose ``_xsrf`` is the cookie its response set."""
    token = re.search(r"(?:^|\n)_xsrf=([^;\n]+)", headers.get("set-cookie", ""))
    assert token, f"the page sets no _xsrf cookie: {headers.get('set-cookie')}"
    kernel = page_kernel_id(body)

    def send():
        u = urlsplit(base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            conn.request("POST", f"/voila/api/shutdown/{kernel}", body=f"_xsrf={token.group(1)}",
                         headers={"Cookie": f"_xsrf={token.group(1)}",
                                  "Content-Type": "application/x-www-form-urlencoded"})
            return conn.getresponse().status
        finally:
            conn.close()
    return send


def test_preheated_pool_does_not_take_the_pages_slots(tmp_path):
    # cap 1 page kernel; the pool's kernel comes on top and is handed to the first page
    proc, base, log = serve_notebook(tmp_path, "tiny.ipynb", TINY, "--CappedKernelManager.max_kernels=1")
    try:
        wait_for(lambda: "is filled with" in log.read_text(), 120, "the pool")
        status, _, body = get(base + "/voila/render/tiny.ipynb")
        assert status == 200 and "tiny app" in body
        assert "Using pre-heated kernel" in log.read_text()
        status, _, body = get(base + "/voila/render/tiny.ipynb")   # a second page: busy
        assert status == 503 and BUSY_TEXT in body
    finally:
        stop_server(proc)


def test_a_pool_kernel_handed_to_a_page_gets_a_fresh_idle_window(tmp_path):
    # A pool's kernel is spared by the idle cull only while in its pool; it has been idle
    # since it warmed. Handed to a page that connects a few seconds later (10-20 s when 8
    # pages load at once on 2 cores), it was culled at the next pass: the page's kernel
    # was gone (404) and its widgets showed as plain text.
    proc, base, log = serve_notebook(tmp_path, "tiny.ipynb", TINY,
                                     "--MappingKernelManager.cull_idle_timeout=4",
                                     "--MappingKernelManager.cull_interval=1")
    try:
        wait_for(lambda: "is filled with" in log.read_text(), 120, "the pool")
        time.sleep(5)                  # the pool's kernel idle for longer than the timeout
        assert "Culling '" not in log.read_text()        # spared while in its pool
        status, _, body = get(base + "/voila/render/tiny.ipynb")
        assert status == 200 and "Using pre-heated kernel" in log.read_text()
        kernel = page_kernel_id(body)
        time.sleep(2)                  # the page still loading: two cull passes
        status, _, _ = get(f"{base}/api/kernels/{kernel}")
        assert status == 200, log.read_text()[-3000:]
        # not spared for good: a page that never connects is culled after the timeout
        wait_for(lambda: get(f"{base}/api/kernels/{kernel}")[0] == 404, 30,
                 "the unopened page's kernel culled")
    finally:
        stop_server(proc)


def test_preheat_query_reader_opens_with_defaults_when_the_server_is_gone(monkeypatch):
    # a preheated kernel whose server vanished (or refuses the handshake) must still render
    # the app with its defaults instead of failing the cell
    import socket

    from llmcost.apps import preheat
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.setenv("VOILA_APP_PORT", str(port))
    monkeypatch.setenv("VOILA_KERNEL_ID", "k1")
    monkeypatch.delenv("QUERY_STRING", raising=False)
    assert preheat.query_url() == f"ws://127.0.0.1:{port}/voila/query/k1"
    assert preheat.get_query_string() == ""
    monkeypatch.setenv("VOILA_PREHEAT", "False")
    monkeypatch.setenv("QUERY_STRING", "gpus=64")
    assert preheat.get_query_string() == "gpus=64"


def test_preheat_query_reader_waits_for_a_busy_server_and_bypasses_proxies(monkeypatch):
    # A server warming its pools may answer the kernel's handshake late; Voila's own reader
    # gives up after 5 s and the shared link then opens with the defaults. A proxy named
    # in the environment (as on CI) must not divert the kernel's call to its own server.
    import asyncio
    import threading

    from websockets.asyncio.server import serve

    from llmcost.apps import preheat
    handshake_delay_s = 6                     # > Voila's 5 s open timeout
    payload = json.dumps({"QUERY_STRING": "model=llama3-70b&gpus=512", "SERVER_PORT": "1"})
    started, done, ports = threading.Event(), threading.Event(), []

    async def busy(connection, request):
        await asyncio.sleep(handshake_delay_s)

    async def send_query(ws):
        await ws.send(payload)
        await ws.wait_closed()

    async def main():
        async with serve(send_query, "127.0.0.1", 0, process_request=busy) as server:
            ports.append(server.sockets[0].getsockname()[1])
            started.set()
            await asyncio.to_thread(done.wait, 60)

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert started.wait(30)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")        # nothing listens there
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.setenv("VOILA_APP_PORT", str(ports[0]))
    monkeypatch.setenv("VOILA_KERNEL_ID", "k1")
    monkeypatch.delenv("QUERY_STRING", raising=False)
    monkeypatch.delenv("SERVER_PORT", raising=False)
    t0 = time.monotonic()
    try:
        assert preheat.get_query_string() == "model=llama3-70b&gpus=512"
    finally:
        done.set()
    assert time.monotonic() - t0 >= handshake_delay_s - 0.5   # it did wait out the delay
    assert os.environ["SERVER_PORT"] == "1"                   # the request's variables too
    thread.join(30)


def test_a_pool_entry_that_failed_to_start_is_dropped_and_its_pool_refilled():
    # seen in a bench: a preheated kernel died at start ("Address already in use"), Voila's
    # pool kept the failed entry (pruned at the next cull) and never replaced it
    import asyncio
    import logging
    import types

    from llmcost.server.kernels import CappedKernelManager
    loop = asyncio.new_event_loop()
    try:
        ok, failed, warming, other = (loop.create_future() for _ in range(4))
        ok.set_result({"kernel_id": "k1"})
        failed.set_exception(RuntimeError("Address already in use"))
        refills = []
        fake = types.SimpleNamespace(
            _pools={"review.ipynb": [ok, failed, warming], "tco.ipynb": [other]},
            log=logging.getLogger(__name__),
            fill_if_needed=lambda notebook_name, **kw: refills.append((notebook_name, kw)))
        CappedKernelManager.prune_pools(fake)
        assert fake._pools == {"review.ipynb": [ok, warming], "tco.ipynb": [other]}
        # Voila's fill_delay (no delay given), only the pool that lost a kernel
        assert refills == [("review.ipynb", {})]
        CappedKernelManager.prune_pools(fake)            # nothing failed: nothing refilled
        assert len(refills) == 1
    finally:
        loop.close()
