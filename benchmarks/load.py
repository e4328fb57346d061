"""First paint and load of the review app in chromium, per serving layout.

``python benchmarks/load.py`` (also part of ``make bench``): for each layout, the time
from navigation to the review app's plots drawn (every plot's title, ``.js-plotly-plot
.gtitle``, painted: the page notes the time itself, see DRAWN_SCRIPT), one
visit on a warm server (a fresh browser profile, and again as a returning visitor whose
browser caches are warm), then 1, 4, 8 and 16 simultaneous first visits (one fresh browser
context each, as a new reviewer): p50/p95, failures (no plot in 90 s, or the "busy" page),
peak live kernels and their peak resident memory, read from /proc.

Every browser runs on the machine that serves, so the concurrent rounds charge the server
with its visitors' drawing too (a fresh page costs its browser ~2 s of main-thread
JavaScript here, ~0.4 s of it the apps' plotly.js bundle); in a review each reviewer's own
machine draws. The row "server work for 8 simultaneous first visits" measures the server's
part alone: 8 plain GETs of the page at once, then until the server and its kernels are
idle, every first result computed and waiting for its page's websocket; its twin "... of a
shared link" GETs a link with other values than the defaults (LINK_QUERY), whose results a
preheated kernel computes only when the link is opened.

Layouts:
  today      ``voila .`` in notebooks/ as ``make app`` ran it before the landing page
             (no preheating, cull_connected=True)
  workbook   ``python -m llmcost.server .`` in notebooks/ (``make app``): preheated pools,
             kernel cap, landing page
  extension  ``jupyter server`` from the repository root with ``jupyter_config.json``
             (the Binder layout: Voila as a server extension, no preheating)
  floor      the workbook's server and page (its pools, the plotly.js bundle preloaded in
             the page's head) with review.ipynb replaced by one widget: what the same
             browsers pay for Voila's lab front end before any app; run for 1 and 8 visits
             only, the reference for the concurrent rounds

Between rounds the harness shuts the closed pages' kernels down (Voila's page-left
shutdown, each kernel's id read from its page's websocket or config) and waits until they
are gone, the pools are refilled and the server is idle, so every round starts from the
same state: the preheated pools full, nothing else running. The servers cull a kernel only
after VISIT_TIMEOUT_S + 30 s idle, so no page loading slowly loses its kernel. (Until
2026-12-01 the harness relied on a 30 s cull instead: with 16 pages loading at once, or
today's 8, which execute on request, pages took longer than that to connect and those rounds
failed by the harness, not by the layout.)

A visit is timed by the page itself (DRAWN_SCRIPT, since 2026-12-02): from navigation until
the frame that paints the last of the review's plots. Before, the time was when Playwright's
``wait_for_selector`` returned for the first plot: its polling backs off to 500 ms between
looks, so those figures were up to 0.5 s late and one plot short (the second plot draws in
~0.15-0.2 s). The concurrent rounds also pay for the harness: in the 8-visit round of
2026-12-02 10:20 the Playwright driver used 1.7 CPU-s and chromium's browser process 26
(its main thread 9.6, its display compositor 9.5); the same 8 visits through a bare
DevTools client (no domain enabled, one evaluate per page every 250 ms) read 25.7-29.7 s
and 59 CPU-s, against 30.6-34.2 s and 71 CPU-s through Playwright. One warm visit alone
costs the machine 5.3 CPU-s through Playwright and 3.8 through the bare client (the server
0.3 of it), so 8 visits need 30-42 CPU-s before any contention: 15-21 s on 2 cores at best,
with the browsers on the serving machine.

The 8-visit round moves between runs (the floor's read 33.7 s on 2026-12-01 22:30 and 25.8 s
on 2026-12-02 00:45, the review's 33.0 and 36.6 s), so ``--paired N`` compares the two on
one machine state: both servers up, their 8-visit rounds alternated (ABBA) N times. On
2026-12-02 00:50 (3 pairs, before the prebuilt pages) the floor read p50 23.6, 25.1,
24.7 s (the machine 51, 54, 53 CPU-s), the review 46.2, 31.2, 28.1 s (97, 67, 60 CPU-s;
three rounds in a row on one server read 36.0, 36.2, 42.0 s, 76-91 CPU-s, the server and
kernels 6-8 of them): most of that round is Voila's front end in eight browsers on two
cores; the review's pages added 1-6 CPU-s each ((97 - 51) / 8 = 5.8, (67 - 54) / 8 = 1.6,
(60 - 53) / 8 = 0.9 by pair); since the prebuilt pages, (60 - 54) / 8 = 0.8 in one run
beside the floor (03:32-04:17).

Baseline, measured live by every run as layout ``today`` (the current notebooks served by a
plain ``voila .``). On 2026-12-02 11:16-12:05, visits timed by the page (DRAWN_SCRIPT):
  today      warm 7.13 s; server work for 8 visits 10.4 s (18 CPU-s); 4 visits 22.9 s,
             8 visits 55.8 s (124 CPU-s), 16 visits all failed; 132 MB per kernel
  workbook   warm 2.53 s (2.51 s at 10:26; medians of 8 warm visits 2.64 and 2.77 s at
             11:06-11:13), returning 2.04 s; server work for 8 visits 0.2 s, of a shared
             link 1.1 s; 4 visits 15.4 s, 8 visits 25.0 s (59 CPU-s; 32.6 s and 75 CPU-s at
             10:26), 16 visits 69.6 s, no failure; 135 MB per kernel
  extension  warm 4.05 s; server work for 8 visits 9.1 s (16 CPU-s); 8 visits 36.1 s,
             16 visits 78.8 s, no failure
  floor      warm 2.17 s (1.75 s at 10:26); 8 visits 26.6 s (59 CPU-s; 24.7 s at 10:26)
Tried and dropped that day: drawing a small off-screen plot when the page is first idle, to
pay plotly.js's first-plot cost (~170 ms) before the results arrive, made warm visits slower
(median of 8: 3.18 s against 2.64 and 2.77 s without it): the idle moments fall between
Voila's own script loads, not while the page waits for its kernel.
Earlier, timed by Playwright's polling of the first plot, on 2026-12-02 03:32-04:17 (the
machine idle but for the benchmark):
  today      warm 1 visit p50 6.0 s; server work for 8 visits 9.8 s (18 CPU-s); 4 visits
             18.7 s; 8 visits 41.0 s with 4 failures, 16 visits all failed (its kernels drop
             outputs under load: nbclient's "Timeout waiting for IOPub output"); 139 MB per
             kernel
  workbook   warm 2.4 s (1.8-2.6 s over 6 visits profiled the same day; 2.6 s in a later
             run, 07:25-07:46, whose 8 visits read 27.4 s, 63 CPU-s); server work for
             8 visits 0.2 s (every preheated kernel holds its page built and computed for
             the default scenario), of a shared link 1.4 s, 2 CPU-s (today 9.6 s; a second
             run, 04:44-04:56); with their browsers on the same 2 cores 4 visits
             11.8 s, 8 visits 25.7 s (the machine 60 CPU-s, the server 2), 16 visits 73.9 s,
             no failure; 137-138 MB per kernel
  extension  warm 4.4 s; server work for 8 visits 8.4 s (15 CPU-s); 8 visits 33.4 s,
             16 visits 64.0 s, no failure
  floor      warm 1.8 s; 8 visits 24.3 s (54 CPU-s)
Before the prebuilt pages and the leaner pages (105 widgets instead of 181), on 2026-12-02
00:00-00:47: workbook warm 3.3 s (2.5-3.3 s over the runs of 2026-12-01/02), server work
for 8 visits 2.2 s (3 CPU-s), 8 visits 36.6 s (83 CPU-s); extension warm 4.5 s, 8 visits
40.5 s; today warm 6.7 s; floor warm 1.9 s, 8 visits 25.8 s.
(before the apps' own plotly.js bundle and shared widget layouts, the workbook's warm visit
took 5.0 s; on 2026-11-30, 2 cores shared with other sessions, today's warm visit read
2.9 s: the figures move between days and machines, so compare layouts within one run.)
Wall times move with the machine's load; the CPU columns (server + kernels, the whole
machine) less so.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcost.apps.review_app import ReviewApp  # noqa: E402
from llmcost.server.procs import (  # noqa: E402
    KERNEL_ID,
    free_port,
    kernel_ids,
    kernel_pids,
    page_kernel_ids,
    rss_bytes,
    stop_server,
    wait_for_port,
)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
PLOT = ".js-plotly-plot .gtitle"
#: the review app's plots: its page is drawn when all of them are
PLOTS_DRAWN = len(ReviewApp.figures_from)
# The page itself notes when it is drawn: Playwright's wait polls with a backoff that reaches
# 500 ms between looks, so the time it returns at is up to half a second late (its polls at
# 0, 20, 70, 170, 270, 770, 1270 ms...: tests/test_bench_timing.py). A MutationObserver sees the last title arrive;
# the time is taken after the frame that paints it (a timeout queued from that frame's
# requestAnimationFrame runs once the frame is done), as the machine's wall clock, which the
# harness also starts from.
DRAWN_SCRIPT = """(() => {
  const sel = %(sel)s, want = %(want)d;
  // a live list of the selector's last class: an O(1) look on each of the page's many
  // mutations, the whole selector only once enough of them are there
  const last = document.getElementsByClassName(sel.split(" ").pop().replace(/^[.]/, ""));
  const seen = () => last.length >= want && document.querySelectorAll(sel).length >= want;
  const obs = new MutationObserver(() => {
    if (!seen()) return;
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__llmcDrawnMs = Date.now(); }, 0));
  });
  obs.observe(document, {subtree: true, childList: true});
})();"""
BUSY = ".llmc-busy"
VISIT_TIMEOUT_S = 90
#: a shared link whose values differ from the defaults: a preheated kernel's page is built
#: and computed for the defaults, so this link's results are computed when it is opened
LINK_QUERY = "model=llama3-405b&gpus=2048&fabric=roce-400"
# A kernel idle (and not yet connected) for longer than cull_idle_timeout is culled under its
# page: longer than a visit may take (VISIT_TIMEOUT_S), so no page is measured without its
# kernel. Between rounds the harness shuts the pages' kernels down itself (shutdown_kernels):
# the cull is only the backstop for a kernel whose page never said which it was.
BENCH_CULL = ["--MappingKernelManager.cull_interval=5",
              f"--MappingKernelManager.cull_idle_timeout={VISIT_TIMEOUT_S + 30}"]
LAYOUTS = ("today", "workbook", "extension", "floor")
#: the floor layout's page: Voila's lab front end and one widget, no app
FLOOR_SOURCE = ("import ipywidgets as W\n"
                "display(W.HTML('<b class=\"llmc-floor\">one widget, no app</b>'))\n")
FLOOR_SELECTOR = ".llmc-floor"
#: the _xsrf token the harness posts its shutdowns with (form field and cookie alike: tornado
#: compares the two, so any hex token does, also on a server that never set one)
XSRF = "6c6c6d636f7374"


@dataclass
class Server:
    layout: str
    proc: subprocess.Popen
    base: str          # URL of the review app
    log: Path
    selector: str = PLOT   # drawn: the page is there
    pool: int = 0      # kernels a quiet server keeps (its preheated pools)
    # the ids of the kernels the last round's pages used: gone before the next round
    after_round: frozenset = frozenset()

    def kernels(self) -> list[int]:
        return kernel_pids(self.proc.pid)

    def kernel_ids(self) -> set[str]:
        return kernel_ids(self.proc.pid)

    def round_ended(self, page_kernels: set[str]) -> None:
        """A round has ended whose pages used ``page_kernels``: shut them down, as a page
        left does (Voila's ``beforeunload``), and before the next round wait until they
        are gone (wait_quiet)."""
        shutdown_kernels(self, page_kernels)
        self.after_round = frozenset(page_kernels)

    def stop(self):
        stop_server(self.proc)


def start_server(layout: str, root: Path = ROOT, extra: list[str] = (), log: Path | None = None,
                 notebooks: Path | None = None) -> Server:
    """Start one layout on a free loopback port; returns once the port answers."""
    port = free_port()
    py = Path(sys.executable)
    nbdir = notebooks or root / "notebooks"
    env = {k: v for k, v in os.environ.items() if k != "QUERY_STRING"}
    common = [f"--port={port}", "--no-browser"]
    if layout == "today":
        cmd = [str(py.parent / "voila"), ".", *common, "--Voila.ip=127.0.0.1",
               "--strip_sources=True", "--MappingKernelManager.cull_connected=True"]
        cwd, base = nbdir, f"http://127.0.0.1:{port}/voila/render/review.ipynb"
    elif layout in ("workbook", "floor"):
        cmd = [str(py), "-m", "llmcost.server", ".", *common, "--Voila.ip=127.0.0.1"]
        cwd, base = nbdir, f"http://127.0.0.1:{port}/voila/render/review.ipynb"
        if layout == "floor":
            cwd = floor_folder(nbdir)
    elif layout == "extension":
        # the repository's jupyter_config.json, as Binder's postBuild installs it
        env["JUPYTER_CONFIG_PATH"] = str(root)
        cmd = [str(py.parent / "jupyter"), "server", *common, "--ServerApp.ip=127.0.0.1",
               "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root"]
        cwd = root
        base = f"http://127.0.0.1:{port}/voila/render/notebooks/review.ipynb"
    else:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    log = log or Path(os.environ.get("TMPDIR", "/tmp")) / f"llmcost-bench-{layout}-{port}.log"
    fh = open(log, "w")
    proc = subprocess.Popen([*cmd, *extra], cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                            start_new_session=True)
    wait_for_port(proc, port, 90, log)
    return Server(layout, proc, base, log, FLOOR_SELECTOR if layout == "floor" else PLOT)


def shutdown_kernels(server: Server, ids) -> None:
    """POST Voila's page-left shutdown (``voila/api/shutdown/<id>``) for each kernel id."""
    import urllib.error
    import urllib.request
    origin = "/".join(server.base.split("/", 3)[:3])
    for kid in ids:
        req = urllib.request.Request(
            f"{origin}/voila/api/shutdown/{kid}", data=f"_xsrf={XSRF}".encode(), method="POST",
            headers={"Cookie": f"_xsrf={XSRF}",
                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            urllib.request.urlopen(req, timeout=30).close()
        except (urllib.error.URLError, OSError) as err:   # gone already, or culled: the cull
            print(f"{server.layout}: shutdown {kid}: {err}", file=sys.stderr)


def floor_folder(nbdir: Path) -> Path:
    """The workbook's folder (its pools, its voila.json) with review.ipynb replaced by one
    widget: the workbook's server and Voila's lab front end, none of the apps' work."""
    import json
    import shutil
    import tempfile
    out = Path(tempfile.gettempdir()) / "llmcost-bench-floor"      # one, reused
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for f in (*nbdir.glob("*.ipynb"), nbdir / "voila.json"):
        shutil.copy(f, out)
    nb = json.loads((nbdir / "review.ipynb").read_text())
    nb["cells"] = [{**nb["cells"][0], "source": FLOOR_SOURCE}]
    (out / "review.ipynb").write_text(json.dumps(nb))
    return out


def _cpu_s(pids) -> float:
    total = 0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(f[11]) + int(f[12])          # utime + stime [clock ticks]
    return total / os.sysconf("SC_CLK_TCK")


def _server_cpu_share(server: "Server", interval_s: float = 1.0) -> float:
    """Cores used by the server and its kernels (the machine may be shared)."""
    pids = [server.proc.pid, *server.kernels()]
    c0 = _cpu_s(pids)
    time.sleep(interval_s)
    return (_cpu_s(pids) - c0) / interval_s


def _progress(server: Server, what: str) -> None:
    """One line on stderr per round: a bench of ~an hour says where it is."""
    print(f"{time.strftime('%H:%M:%S')} load {server.layout}: {what}", file=sys.stderr, flush=True)


def wait_quiet(server: Server, timeout_s: float = 240) -> None:
    """Until the last round's pages' kernels are gone, exactly the pools' kernels live (the
    pools refilled) and they and the server are idle. Counting kernels alone is not enough:
    right after a round the pages' kernels, taken from a pool, make up its count; a page
    that never said its kernel leaves one more kernel than the pools until the cull."""
    deadline = time.time() + timeout_s
    _progress(server, f"waiting for {len(server.after_round)} page kernel(s) to go, "
                      f"{server.pool} in the pools")
    while time.time() < deadline:
        live = server.kernel_ids()
        if live & server.after_round or len(live) != server.pool:
            time.sleep(0.5)           # not a busy loop: it would take a core from the refills
        elif _server_cpu_share(server) < 0.1:
            _progress(server, "quiet")
            return
    raise RuntimeError(f"{server.layout}: still {len(server.kernels())} kernels "
                       f"(pool {server.pool}, {len(server.kernel_ids() & server.after_round)} of "
                       f"the last round's pages) after {timeout_s:.0f} s")


def _server_cpu(server: "Server") -> dict[int, float]:
    return {pid: _cpu_s([pid]) for pid in (server.proc.pid, *server.kernels())}


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy since boot (/proc/stat: all but idle and
    iowait). Browser renderers exit when their page closes, taking their CPU time out of any
    per-process count: the machine's total keeps it."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def _cpu_delta(before: dict, after: dict) -> float:
    """CPU seconds spent between two snapshots by the processes alive at the second."""
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


@dataclass
class Round:
    times_s: list = field(default_factory=list)
    failures: int = 0
    busy: int = 0
    peak_kernels: int = 0
    peak_rss: int = 0
    load_avg: float = 0.0         # the machine's 1-min load: the benchmark may share it
    server_cpu_s: float = 0.0     # server + kernels: what the machine serving pays
    settled_s: float = float("nan")  # server_round: all the visits' server work done
    machine_cpu_s: float = 0.0    # the whole machine (browsers whose pages closed included)
    kernels: set = field(default_factory=set)   # the ids of the kernels its pages used

    def p(self, q):
        t = sorted(self.times_s)
        if not t:
            return float("nan")
        return t[min(len(t) - 1, int(round(q / 100 * (len(t) - 1))))]


class Monitor(threading.Thread):
    """Samples the server's kernels (count, summed RSS) every 0.2 s."""

    def __init__(self, server: Server):
        super().__init__(daemon=True)
        self.server, self.stopped, self.kernels, self.rss = server, False, 0, 0

    def run(self):
        while not self.stopped:
            pids = self.server.kernels()
            self.kernels = max(self.kernels, len(pids))
            self.rss = max(self.rss, sum(rss_bytes(p) for p in pids))
            time.sleep(0.2)


def drawn_script(selector: str) -> str:
    """The page's own note of when it is drawn (``window.__llmcDrawnMs``): all the review
    app's plots for the plot selector, the one element for any other."""
    want = PLOTS_DRAWN if selector == PLOT else 1
    return DRAWN_SCRIPT % {"sel": json.dumps(selector), "want": want}


async def _timed_load(ctx, url: str, result: Round | None, selector: str, kernels: set) -> None:
    """Open ``url`` in a new page of ``ctx`` until it is drawn (``drawn_script``); its time
    (or a failure: not drawn in time, or the busy page) goes to ``result`` (None: not timed), the id
    of the kernel it used to ``kernels``."""
    page = await ctx.new_page()
    await page.add_init_script(drawn_script(selector))
    page.on("websocket",
            lambda ws: kernels.update(re.findall(rf"/api/kernels/({KERNEL_ID})/", ws.url)))
    t0 = time.time()            # the wall clock, as the page's Date.now()
    try:
        resp = await page.goto(url, wait_until="commit", timeout=VISIT_TIMEOUT_S * 1000)
        if resp is not None and resp.status == 503:
            if result is not None:
                result.busy += 1
                result.failures += 1
            return
        drawn_ms = await page.wait_for_function("window.__llmcDrawnMs", polling=100,
                                                timeout=VISIT_TIMEOUT_S * 1000)
        if result is not None:
            result.times_s.append(await drawn_ms.json_value() / 1000 - t0)
    except Exception:
        if result is not None:
            result.failures += 1
    finally:
        try:              # a page that failed before its websocket: its config names it
            kernels.update(page_kernel_ids(await asyncio.wait_for(page.content(), 10)))
        except Exception:  # noqa: BLE001 - the cull is the backstop (wait_quiet)
            pass
        await page.close()


async def _visit(browser, url: str, result: Round, returning: bool = False, selector: str = PLOT):
    """A new reviewer (a fresh browser context), or with ``returning`` one opening the link
    again: the same context's HTTP and compiled-code caches, a new page and a new kernel
    (the first load is not timed)."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        if returning:
            await _timed_load(ctx, url, None, selector, result.kernels)
        await _timed_load(ctx, url, result, selector, result.kernels)
    finally:
        await ctx.close()


def server_round(server: "Server", n: int, quiet_cores: float = 0.05, query: str = "") -> Round:
    """What the server pays for n simultaneous first visits, without the browsers: n plain
    GETs of the page (with ``query``, a shared link's) at once (Voila executes or claims a
    kernel and renders the page), then until the server and its kernels are idle: the first
    results are computed and waiting for the pages' websockets (Voila buffers a kernel's
    messages until its page connects).
    ``times_s``: when each GET returned; ``settled_s``: when all that work was done."""
    import urllib.request
    r = Round()
    url = f"{server.base}?{query}" if query else server.base
    s0 = _server_cpu(server)
    t0 = time.perf_counter()

    def get():
        try:
            with urllib.request.urlopen(url, timeout=VISIT_TIMEOUT_S) as resp:
                body = resp.read().decode(errors="replace")
            r.times_s.append(time.perf_counter() - t0)
            r.kernels.update(page_kernel_ids(body))
        except Exception:
            r.failures += 1

    threads = [threading.Thread(target=get) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    window = 0.5
    while time.perf_counter() - t0 < VISIT_TIMEOUT_S:
        if _server_cpu_share(server, window) < quiet_cores:
            break
    r.settled_s = time.perf_counter() - t0 - window
    r.server_cpu_s = _cpu_delta(s0, _server_cpu(server))
    r.load_avg = os.getloadavg()[0]
    return r


#: the review page's states after a control change, in the page's clock (ms): when the
#: figures are greyed (busy) and when the busy state goes, after the new figures are sent
CHANGE_SCRIPT = """() => {
  const el = document.querySelector('.llmc-figures');
  window.__llmcChange = {};
  new MutationObserver((records) => {
    for (const r of records) {
      const was = (r.oldValue || '').split(' ').includes('llmc-busy');
      if (!was && !window.__llmcChange.busy) window.__llmcChange.busy = performance.now();
      if (was) window.__llmcChange.idle = performance.now();
    }
  }).observe(el, {attributes: true, attributeFilter: ['class'], attributeOldValue: true});
  return performance.now();
}"""


async def _change(browser, url: str, result: Round, greyed: list) -> None:
    """A reviewer changes the GPU count on a drawn review page: the time until the figures
    are greyed goes to ``greyed``, until the busy state is gone (new figures sent) to
    ``result``."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = await ctx.new_page()
        page.on("websocket",
                lambda ws: result.kernels.update(re.findall(rf"/api/kernels/({KERNEL_ID})/", ws.url)))
        await page.goto(url, timeout=VISIT_TIMEOUT_S * 1000)
        await page.wait_for_function(f"document.querySelectorAll('{PLOT}').length >= {PLOTS_DRAWN}",
                                     timeout=VISIT_TIMEOUT_S * 1000)
        t0 = await page.evaluate(CHANGE_SCRIPT)
        box = page.locator(".llmc-ctl-gpus input").first
        await box.fill("512")
        await box.press("Enter")
        await page.wait_for_function("window.__llmcChange.idle", polling=50,
                                     timeout=VISIT_TIMEOUT_S * 1000)
        ch = await page.evaluate("window.__llmcChange")
        greyed.append((ch["busy"] - t0) / 1000)
        result.times_s.append((ch["idle"] - t0) / 1000)
    except Exception:
        result.failures += 1
    finally:
        await ctx.close()


async def _round(browser, url: str, n: int, selector: str = PLOT) -> Round:
    r = Round()
    await asyncio.gather(*(_visit(browser, url, r, selector=selector) for _ in range(n)))
    return r


def measure(server: Server, browser_loop, warm_repeats=3, visits=(1, 4, 8, 16),
            server_visits=(8,), returning=True) -> dict:
    """{"warm": Round, n: Round} for one server."""
    loop, browser = browser_loop
    out = {}
    warm = Round()
    for _ in range(warm_repeats):
        wait_quiet(server)
        r = loop.run_until_complete(_round(browser, server.base, 1, server.selector))
        server.round_ended(r.kernels)
        warm.times_s += r.times_s
        warm.failures += r.failures
    out["warm"] = warm
    back = Round()
    for _ in range(warm_repeats if returning else 0):
        wait_quiet(server)
        loop.run_until_complete(_visit(browser, server.base, back, returning=True,
                                       selector=server.selector))
        server.round_ended(back.kernels)
        back.kernels = set()
    if returning:
        out["returning"] = back
    if server.selector == PLOT:          # the review page (not the floor's one widget)
        change, greyed = Round(), []
        for _ in range(warm_repeats):
            wait_quiet(server)
            loop.run_until_complete(_change(browser, server.base, change, greyed))
            server.round_ended(change.kernels)
            change.kernels = set()
        change.greyed_s = greyed
        out["change"] = change
    for n in server_visits:
        for key, query in ((f"server {n}", ""), (f"server {n} link", LINK_QUERY)):
            wait_quiet(server)
            out[key] = server_round(server, n, query=query)
            server.round_ended(out[key].kernels)
    for n in visits:
        wait_quiet(server)
        s0, m0 = _server_cpu(server), _machine_busy_s()
        mon = Monitor(server)
        mon.start()
        r = loop.run_until_complete(_round(browser, server.base, n, server.selector))
        server.round_ended(r.kernels)
        mon.stopped = True
        mon.join()
        r.server_cpu_s = _cpu_delta(s0, _server_cpu(server))
        r.machine_cpu_s = _machine_busy_s() - m0
        r.peak_kernels, r.peak_rss = mon.kernels, mon.rss
        r.load_avg = os.getloadavg()[0]
        out[n] = r
    return out


def wait_pools(server: Server, timeout_s: float = 240) -> None:
    """A preheated server is ready when its log says every pool is filled."""
    deadline = time.time() + timeout_s
    want = len(list((ROOT / "notebooks").glob("*.ipynb")))
    while time.time() < deadline:
        if server.log.read_text().count("is filled with") >= want:
            server.pool = len(server.kernels())
            return
        time.sleep(1)
    server.pool = len(server.kernels())


def _browser():
    """(event loop, playwright, chromium) for the rounds; close with ``_close``."""
    from playwright.async_api import async_playwright

    async def launch():
        pw = await async_playwright().start()
        return pw, await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)

    loop = asyncio.new_event_loop()
    return (loop, *loop.run_until_complete(launch()))


def _close(loop, pw, browser) -> None:
    loop.run_until_complete(browser.close())
    loop.run_until_complete(pw.stop())
    loop.close()


def run(layouts=LAYOUTS, visits=(1, 4, 8, 16), warm_repeats=3, server_args=()) -> dict:
    loop, pw, browser = _browser()
    results = {}
    try:
        for layout in layouts:
            server = start_server(layout, extra=[*BENCH_CULL, *server_args])
            try:
                if layout in ("workbook", "floor"):
                    wait_pools(server)
                # the first render pays for imports and disk caches: not a user's figure
                first = loop.run_until_complete(_round(browser, server.base, 1, server.selector))
                server.round_ended(first.kernels)
                if layout == "floor":    # the reference for the concurrent rounds only
                    results[layout] = measure(server, (loop, browser), 1, [n for n in visits if n in (1, 8)],
                                              server_visits=(), returning=False)
                else:
                    results[layout] = measure(server, (loop, browser), warm_repeats, visits)
            finally:
                server.stop()
    finally:
        _close(loop, pw, browser)
    return results


def paired(pairs: int = 3, n: int = 8, layouts=("workbook", "floor")) -> dict:
    """``n`` simultaneous first visits to each of ``layouts`` in turn, ``pairs`` times:
    both servers up at once, each round from the quiet state, so a drift of the machine
    between runs (two full runs of this bench read the floor's 8 visits 33.7 s and 25.8 s)
    falls on both alike. {layout: [Round, ...]}."""
    loop, pw, browser = _browser()
    servers = []
    out = {layout: [] for layout in layouts}
    try:
        for layout in layouts:
            servers.append(start_server(layout, extra=BENCH_CULL))
            wait_pools(servers[-1])
        for server in servers:
            first = loop.run_until_complete(_round(browser, server.base, 1, server.selector))
            server.round_ended(first.kernels)
        for i in range(pairs):
            for server in servers[::1 if i % 2 == 0 else -1]:     # ABBA: neither always first
                for other in servers:
                    wait_quiet(other)
                m0 = _machine_busy_s()
                r = loop.run_until_complete(_round(browser, server.base, n, server.selector))
                r.machine_cpu_s = _machine_busy_s() - m0
                r.load_avg = os.getloadavg()[0]
                server.round_ended(r.kernels)
                out[server.layout].append(r)
                _progress(server, f"pair {i + 1}: p50 {r.p(50):.1f} s, machine "
                                  f"{r.machine_cpu_s:.0f} CPU-s, failures {r.failures}")
    finally:
        for server in servers:
            server.stop()
        _close(loop, pw, browser)
    return out


def paired_rows(results: dict, n: int = 8) -> list[tuple[str, int, float, str]]:
    """One row per layout: each round's p50 and the machine's CPU, in the order run."""
    out = []
    for layout, rounds in results.items():
        p50 = sorted(r.p(50) for r in rounds)
        mid = p50[len(p50) // 2] if p50 else float("nan")
        out.append((f"voila [{layout}] {n} simultaneous first visits, rounds alternated", n, mid,
                    "p50 by round " + ", ".join(f"{r.p(50):.1f}" for r in rounds) + " s; machine "
                    + ", ".join(f"{r.machine_cpu_s:.0f}" for r in rounds) + " CPU-s; failures "
                    + str(sum(r.failures for r in rounds))))
    return out


def rows(results: dict) -> list[tuple[str, int, float, str]]:
    """run.py's ROWS: (name, n, seconds, result), the layout today beside each new one and,
    for the concurrent rounds, the floor (Voila's front end with one widget) too."""
    out = []
    today = results.get("today", {})
    floor = results.get("floor", {})

    def was(key, fmt, ref=today, name="today"):
        r = ref.get(key)
        return f"; {name} {fmt(r)}" if r is not None else ""

    for layout, res in results.items():
        plain = layout in ("today", "floor")
        label = "floor: one widget, no app" if layout == "floor" else layout
        what = "page drawn" if layout == "floor" else "review plots drawn"
        w = res["warm"]
        out.append((f"voila [{label}] {what}, warm, 1 visit", len(w.times_s),
                    w.p(50), f"p50 {w.p(50):.2f} s"
                    + ("" if layout == "floor" else " (budget 2.5 s)")
                    + f", failures {w.failures}"
                    + ("" if plain else was("warm", lambda r: f"{r.p(50):.2f} s"))))
        ch = res.get("change")
        if ch is not None:
            g = sorted(ch.greyed_s)
            out.append((f"voila [{label}] control change: figures greyed, then new figures sent",
                        len(ch.times_s), ch.p(50),
                        f"greyed after p50 {g[len(g) // 2] * 1e3:,.0f} ms, new figures after "
                        f"p50 {ch.p(50):.2f} s, failures {ch.failures}" if g else
                        f"failures {ch.failures}"))
        back = res.get("returning")
        if back is not None:
            out.append((f"voila [{label}] {what}, warm, returning visitor", len(back.times_s),
                        back.p(50), f"p50 {back.p(50):.2f} s (the browser's caches warm; budget "
                        f"2.5 s), failures {back.failures}"
                        + ("" if plain else was("returning", lambda r: f"{r.p(50):.2f} s"))))
        for key in (k for k in res if isinstance(k, str) and k.startswith("server ")):
            r = res[key]
            n = int(key.split()[1])
            link = " of a shared link (not the defaults)" if key.endswith(" link") else ""
            out.append((f"voila [{label}] server work for {n} simultaneous first visits{link}", n,
                        r.settled_s, f"pages sent p95 {r.p(95):.1f} s, all first results "
                        f"computed {r.settled_s:.1f} s (no browsers: each reviewer's own "
                        f"machine draws), server CPU {r.server_cpu_s:.0f} s, failures {r.failures}"
                        + ("" if plain else
                           was(key, lambda r: f"{r.settled_s:.1f} s"))))
        for n in (k for k in res if isinstance(k, int)):
            r = res[n]
            per = r.peak_rss / max(r.peak_kernels, 1) / 1e6
            both = lambda r: f"p50 {r.p(50):.1f} s, p95 {r.p(95):.1f} s"  # noqa: E731
            out.append((
                f"voila [{label}] {n} simultaneous first visit(s)", n, r.p(95),
                f"p50 {r.p(50):.1f} s, p95 {r.p(95):.1f} s"
                + (" (budget 15 s)" if n == 8 and layout != "floor" else "")
                + f", failures {r.failures} "
                f"(busy {r.busy}), peak {r.peak_kernels} kernels, "
                f"{r.peak_rss / 1e9:.2f} GB ({per:.0f} MB each); CPU server {r.server_cpu_s:.0f} s "
                f"of the machine's {r.machine_cpu_s:.0f} s (the rest: the browsers and this "
                f"harness), load avg {r.load_avg:.1f}"
                + ("" if plain else was(n, both)
                   + was(n, both, floor, "floor (the same browsers, one widget, no app)"))))
    return out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--visits", default="1,4,8,16")
    ap.add_argument("--warm-repeats", type=int, default=3)
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra option for every server, e.g. --server-arg=--preheat_kernel=False")
    ap.add_argument("--paired", type=int, default=0, metavar="PAIRS",
                    help="instead: the workbook's and the floor's 8-visit rounds alternated "
                    "PAIRS times")
    a = ap.parse_args(argv)
    if a.paired:
        table = paired_rows(paired(a.paired))
    else:
        table = rows(run(a.layouts.split(","), tuple(int(v) for v in a.visits.split(",")),
                         a.warm_repeats, a.server_arg))
    w = max(len(r[0]) for r in table)
    for name, n, t, text in table:
        print(f"{name:<{w}}  {n:>4}  {t:>7.2f}  {text}")


if __name__ == "__main__":
    main()
