"""A kernel manager with a cap on the kernels serving pages.

Every page load of a Voila app starts a kernel of ~150 MB; without a cap, a burst of
requests (or a crawler) can exhaust the machine. At the cap, starting a page's kernel
raises :class:`KernelCapReached`, which the render handler turns into a "busy, please
retry" page (HTTP 503). The preheated pools are not counted: their size is fixed by
configuration (``VoilaKernelManager.kernel_pools_config``), so the memory bound is
(``max_kernels`` + pool sizes) kernels. Counting them would let idle pool kernels of
other apps hold the slots a visitor needs, and a refused refill would leave a failed
entry in Voila's pool, which breaks Voila's kernel shutdown.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer

#: Page kernels allowed by default. Sized for a 2-core, 24 GiB machine: 24 page kernels + the
#: 16 preheated ones x ~150 MB = 6.0 GB at most; CPU is the binding limit (a fresh page
#: costs ~5 CPU-seconds), and beyond ~24 simultaneous pages every page would wait longer
#: than the minute the busy page promises.
DEFAULT_MAX_KERNELS = 24


class KernelCapReached(HTTPError):
    """No kernel may start: ``max_kernels`` are live."""

    def __init__(self, cap: int):
        super().__init__(503, reason="Busy")
        self.cap = cap


class CappedKernelManager(AsyncMappingKernelManager):
    """``AsyncMappingKernelManager`` refusing a page's new kernel when ``max_kernels``
    kernels serve pages."""

    max_kernels = Integer(
        int(os.environ.get("LLMCOST_MAX_KERNELS", DEFAULT_MAX_KERNELS)), config=True,
        help="Most kernels serving pages at once (the preheated pools come on top); "
             "0 for no cap. Environment: LLMCOST_MAX_KERNELS.")

    _starting = 0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._pool_ids: set[str] = set()     # started for a preheated pool
        self._taken: set[str] = set()        # of those, handed to a page

    def mark_taken(self, kernel_id: str) -> None:
        """A pool's kernel now serves a page (the render handler says which).

        Its idle clock restarts: a pool's kernel is spared by the idle cull only while in
        its pool, and it has sat idle since it warmed up, often longer than
        ``cull_idle_timeout``. Handed to a page that had not yet opened its websocket (a
        few seconds, 10-20 s with 8 pages loading on 2 cores), it was culled at the next
        pass and the page showed its widgets as plain text."""
        self._taken.add(kernel_id)
        if kernel_id in self:
            self.get_kernel(kernel_id).last_activity = datetime.now(timezone.utc)

    def live_kernels(self) -> int:
        """Kernels serving pages, running or being started: all kernels but the pools'."""
        live = set(self.list_kernel_ids())
        self._pool_ids &= live
        self._taken &= live
        return len(live) + self._starting - len(self._pool_ids - self._taken)

    def is_full(self) -> bool:
        return self.max_kernels > 0 and self.live_kernels() >= self.max_kernels

    async def start_kernel(self, *args, **kwargs):
        kernel_id = kwargs.get("kernel_id")
        if kernel_id is not None and kernel_id in self:
            return await super().start_kernel(*args, **kwargs)
        if (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True":
            # a pool (re)fill: bounded by the pool's configured size, never refused
            kernel_id = await super().start_kernel(*args, **kwargs)
            self._pool_ids.add(kernel_id)
            return kernel_id
        self.prune_pools()
        if self.is_full():
            self.log.warning("Kernel cap reached (%d page kernels): refusing a new one",
                             self.live_kernels())
            raise KernelCapReached(self.max_kernels)
        # counted while starting, so a burst of requests cannot all pass the check at once
        self._starting += 1
        try:
            return await super().start_kernel(*args, **kwargs)
        finally:
            self._starting -= 1

    async def cull_kernels(self):
        # Voila's shutdown reads every pool entry's result: a failed one (a kernel that
        # died while warming) would make each shutdown raise, so no kernel would be culled
        self.prune_pools()
        return await super().cull_kernels()

    # Voila builds its pooling manager as a subclass of this class
    # (VoilaConfiguration.multi_kernel_manager_class), adding ``_pools``; without
    # preheating there are no pools.

    def prune_pools(self) -> None:
        """Drop pool entries whose start failed, so no page or shutdown is handed one, and
        refill those pools. Voila refills a pool only when a page takes a kernel, so one that
        lost a kernel while warming (seen: a port taken between jupyter_client choosing it
        and the kernel binding it) stayed short until its next visit. The refill waits
        Voila's ``fill_delay``: a kernel that cannot start is retried at that pace."""
        for name, pool in list(getattr(self, "_pools", {}).items()):
            keep = [t for t in pool
                    if not t.done() or (not t.cancelled() and t.exception() is None)]
            if len(keep) < len(pool):
                self.log.warning("Kernel pool of %s: %d kernel(s) failed to start; refilling",
                                 name, len(pool) - len(keep))
                pool[:] = keep
                self.fill_if_needed(notebook_name=name)
