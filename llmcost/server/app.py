"""``python -m llmcost.server [DIR] [voila options]``: Voila, serving the apps of DIR.

Standalone Voila (``make app``) with the workbook's defaults:

- ``/`` and ``/voila/tree...`` redirect to the landing app (``index.ipynb``, else
  ``review.ipynb``), keeping the query; the contents API behind the tree is hidden;
- preheated kernel pools (``--preheat_kernel=True``): kernels wait with their notebook
  executed (see ``POOLS``); the app reads the page's query with
  ``get_query_string()`` (llmcost.apps.preheat, Voila's protocol) once a page claims it;
- a cap on live kernels with a "busy, retry in a minute" page (:mod:`.kernels`);
- kernels of closed pages are culled after ``cull_idle_timeout`` (90 s, checked every
  30 s); an open page keeps its kernel however long it idles (``cull_connected=False``).

Every default is a traitlets value: ``voila.json`` in DIR, then the command line, override
it (e.g. ``--CappedKernelManager.max_kernels=8``, ``--preheat_kernel=False``).
"""

from __future__ import annotations

import os

from jupyter_server.utils import url_path_join
from traitlets.config import Config
from voila.app import Voila
from voila.tornado.contentshandler import VoilaContentsHandler
from voila.tornado.handler import TornadoVoilaHandler
from voila.tornado.treehandler import TornadoVoilaTreeHandler

from .handlers import (
    LANDING,
    MAX_HEADER_BYTES,
    CappedVoilaHandler,
    LandingRedirect,
    NotFound,
    advertise_bundle,
    guard_rules,
    static_route,
)
from .kernels import CappedKernelManager

#: Preheated kernels per notebook (~140 MB each once the app is built): eight for the review
#: app (the link a review shares: 8 reviewers opening it at once each get an executed
#: notebook), two for the landing page, one for each of the six other apps = 16 kernels, ~2.2 GB idle
#: of 24 GiB. A kernel taken from a pool is replaced FILL_DELAY_S later: a refill costs a
#: full notebook run, and refilling while a burst is still loading takes the cores from its
#: pages. Two minutes cover a burst of 8 simultaneous visits (benchmarks/load.py measures
#: it); a visitor in that window gets a fresh kernel.
POOLS = {"default": {"pool_size": 1}, "index.ipynb": {"pool_size": 2},
         "review.ipynb": {"pool_size": 8}}
FILL_DELAY_S = 120

#: nbclient drops a cell's outputs when the kernel's IOPub lags more than this after its
#: reply (4 s by default): on 2 busy cores that lost whole pages. Waiting longer costs
#: nothing when the output is on time.
IOPUB_TIMEOUT_S = 30

#: Voila loads every installed JupyterLab extension into each page; plotly's carries all of
#: plotly.js (4.8 MB parsed on every fresh page's main thread) and is not needed where
#: the apps draw with their own bundle (llmcost.apps.plotview, served by these servers).
LABEXTENSIONS_NOT_LOADED = ["jupyterlab-plotly"]

CULL = {"cull_interval": 30, "cull_idle_timeout": 90, "cull_connected": False}

#: Kernels talk to the server over Unix sockets in their runtime folder, not TCP ports. Over
#: TCP each kernel's five ports are picked by binding port 0 and letting go, and the kernel
#: binds them later: with the 16 pool kernels starting at once, another kernel or an
#: outgoing connection can take one in between ("ZMQError: Address already in use"), and
#: the pool holds a dead kernel that a visitor's page waits 60 s on (seen in
#: benchmarks/load.py's server log, 2026-12-03). IPC sockets are created by the kernel
#: itself under a unique name: nothing to race for, and no kernel port on the network.
KERNEL_TRANSPORT = "ipc"


def defaults() -> Config:
    c = Config()
    c.VoilaConfiguration.strip_sources = True
    c.VoilaConfiguration.preheat_kernel = True
    c.VoilaConfiguration.extension_denylist = LABEXTENSIONS_NOT_LOADED
    c.VoilaConfiguration.multi_kernel_manager_class = CappedKernelManager
    c.VoilaKernelManager.kernel_pools_config = POOLS
    c.VoilaKernelManager.fill_delay = FILL_DELAY_S
    c.VoilaExecutor.iopub_timeout = IOPUB_TIMEOUT_S
    c.KernelManager.transport = KERNEL_TRANSPORT
    for key, value in CULL.items():
        setattr(c.MappingKernelManager, key, value)
    return c


class WorkbookVoila(Voila):
    name = "voila"        # reads voila.json / voila.py like Voila does

    def load_config_file(self, *args, **kwargs):
        # lowest precedence: our defaults < voila.json < the command line
        base = defaults()
        base.merge(self.cli_config)
        self.update_config(base)
        return super().load_config_file(*args, **kwargs)

    def init_handlers(self):
        redirect = (LandingRedirect, {"root_dir": self.root_dir, "landing": LANDING,
                                      "base_url": self.base_url})
        # no login on this server: jupyter_server's logout page would fail (500) without one
        out = [*guard_rules(self.server_url),
               (url_path_join(self.server_url, "/(?:logout|login)/?"), NotFound),
               (url_path_join(self.server_url, "/voila/?"), *redirect),
               static_route(self.server_url)]
        for spec in super().init_handlers():
            pattern, handler, *kw = spec
            if handler is TornadoVoilaTreeHandler:
                out.append((pattern, *redirect))
            elif handler is VoilaContentsHandler:
                out.append((pattern, NotFound))
            elif handler is TornadoVoilaHandler:
                out.append((pattern, CappedVoilaHandler, *kw))
            else:
                out.append(spec)
        return out

    def listen(self):
        # tornado reads at most 64 KiB of headers and then drops the connection without a
        # status: read up to MAX_HEADER_BYTES so an over-long URL gets the 414 page
        listen = self.app.listen
        self.app.listen = lambda port, address=None, **kw: listen(
            port, address, max_header_size=MAX_HEADER_BYTES, **kw)
        return super().listen()

    def start(self):
        # a preheated kernel fetches its page's query from this server; it must reach the
        # address we listen on (the default 127.0.0.1 misses a server bound to one LAN IP)
        if self.ip not in ("", "0.0.0.0", "::", "localhost"):
            os.environ.setdefault("VOILA_APP_IP", self.ip)
        # before the pools start (Voila starts them with its kernel manager)
        advertise_bundle(self.base_url)
        return super().start()


main = WorkbookVoila.launch_instance
