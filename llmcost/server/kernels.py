"""A kernel manager with a cap on live kernels.

Every page load of a Voila app starts a kernel of ~140 MB; without a cap, a burst of
requests (or a crawler) can exhaust the machine. At the cap, starting a kernel raises
:class:`KernelCapReached`, which the render handler turns into a "busy, please retry"
page (HTTP 503). The kernels of a preheated pool count towards the cap: they are real
processes holding real memory.
"""

from __future__ import annotations

import os

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Integer

#: Live kernels allowed by default. Sized for the 2-core, 24 GiB machine the workbook is
#: measured on: 24 kernels x ~150 MB = 3.6 GB of memory is comfortable; CPU is the binding
#: limit (each page costs a few CPU-seconds to render), and beyond ~24 simultaneous pages
#: every page would wait longer than the "retry in a minute" the busy page promises.
DEFAULT_MAX_KERNELS = 24


class KernelCapReached(HTTPError):
    """No kernel may start: ``max_kernels`` are live."""

    def __init__(self, cap: int):
        super().__init__(503, reason="Busy")
        self.cap = cap


class CappedKernelManager(AsyncMappingKernelManager):
    """``AsyncMappingKernelManager`` refusing a new kernel when ``max_kernels`` are live."""

    max_kernels = Integer(
        int(os.environ.get("LLMCOST_MAX_KERNELS", DEFAULT_MAX_KERNELS)), config=True,
        help="Most kernels alive at once (pages + preheated pool); 0 for no cap. "
             "Environment: LLMCOST_MAX_KERNELS.")

    _starting = 0

    def live_kernels(self) -> int:
        """Kernels running or being started now."""
        return len(self.list_kernel_ids()) + self._starting

    def is_full(self) -> bool:
        return self.max_kernels > 0 and self.live_kernels() >= self.max_kernels

    async def start_kernel(self, *args, **kwargs):
        kernel_id = kwargs.get("kernel_id")
        if kernel_id is not None and kernel_id in self:
            return await super().start_kernel(*args, **kwargs)
        if self.is_full():
            self.log.warning("Kernel cap reached (%d live): refusing a new kernel",
                             self.live_kernels())
            raise KernelCapReached(self.max_kernels)
        # counted while starting, so a burst of requests cannot all pass the check at once
        self._starting += 1
        try:
            return await super().start_kernel(*args, **kwargs)
        finally:
            self._starting -= 1

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):
        result = await super().shutdown_kernel(kernel_id, *args, **kwargs)
        if not self._closing:
            # a pool that could not refill at the cap refills once a kernel is gone
            self.refill_pools()
        return result

    _closing = False

    async def shutdown_all(self, *args, **kwargs):
        self._closing = True
        return await super().shutdown_all(*args, **kwargs)

    # --- preheated pools. Voila builds its pooling manager as a subclass of this class
    # (VoilaConfiguration.multi_kernel_manager_class), adding ``_pools``,
    # ``kernel_pools_config`` and ``fill_if_needed``; without preheating these are no-ops.

    def _pool_size(self, notebook: str) -> int:
        pools = getattr(self, "kernel_pools_config", {})
        conf = pools.get(notebook, pools.get("default", {}))
        return int(conf.get("pool_size", 0))

    def prune_pools(self) -> None:
        """Drop pool entries whose start failed (at the cap), so no page is handed one."""
        for pool in getattr(self, "_pools", {}).values():
            keep = [t for t in pool
                    if not t.done() or (not t.cancelled() and t.exception() is None)]
            pool[:] = keep

    def refill_pools(self) -> None:
        pools = getattr(self, "_pools", None)
        if not pools:
            return
        self.prune_pools()
        for notebook, pool in list(pools.items()):
            if len(pool) < self._pool_size(notebook) and not self.is_full():
                self.fill_if_needed(notebook_name=notebook)
