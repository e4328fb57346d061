"""The reliability model at each GPU count (failures, checkpoint stalls, restarts, data
reads), shared by sizing, the reliability stage and the storage view; and the reliability
stage."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...economics import reliability as rel
from ...economics import storage
from ..results import Inputs, PlanResult, ReliabilityResult


class InterruptionTerms(NamedTuple):
    """The reliability model at each GPU count (arrays of one shape, the checkpoint's bytes
    a scalar)."""

    failures_per_day: np.ndarray
    mtbf_s: np.ndarray
    checkpoint_bytes: float
    nodes: np.ndarray
    stall_s: np.ndarray
    #: the scenario's interval or the recommended one (async: never shorter than the upload)
    interval_s: np.ndarray
    upload_s: np.ndarray
    #: restart per interruption: its terms' sum, or the scenario's own figure
    restart_s: np.ndarray
    #: the shared tier's aggregate bandwidth the job gets [GB/s]
    storage_gb_per_s: np.ndarray


def interruption_terms(inp: Inputs, gpus, mode: str | None = None) -> InterruptionTerms:
    """The reliability model at each GPU count (vectorized), shared by sizing, the
    reliability stage and the storage view (:class:`InterruptionTerms`), for ``mode``
    ("sync" or "async"; default the scenario's). The shared tier scales with the job: its
    per-node bandwidth times the nodes, unless the scenario gives the tier's total."""
    s, g = inp.scenario, inp.gpu
    mode = s.checkpoint_mode if mode is None else mode
    gpus = np.asarray(gpus)
    nodes = np.maximum(1, np.ceil(gpus / g.gpus_per_node))
    if s.mtbf_h > 0:
        per_day = np.full(gpus.shape, 24.0 / s.mtbf_h)
    else:
        per_day = np.asarray(rel.job_failures_per_day(gpus, inp.failures_per_1000_gpu_days))
    M = rel.mtbf_h(per_day) * 3600
    size_b = float(rel.checkpoint_size_bytes(inp.model.params))
    store = _checkpoint_storage(inp)
    shared = np.asarray(store.shared_gb_per_s(nodes), float)
    stall = rel.checkpoint_stall_s(size_b, mode, nodes, store)
    # async: the snapshot is durable only once uploaded, so the interval is never shorter
    # than the upload (and rework counts back to the last durable copy: storage.rework_s)
    upload = storage.upload_s(size_b, nodes, shared, store.node_network_gb_per_s) \
        if mode == "async" else np.zeros(np.shape(M))
    tau = s.checkpoint_interval_s if s.checkpoint_interval_s > 0 else \
        storage.recommended_interval_s(stall, M, upload)
    terms = restart_terms_at(inp, gpus, store)
    restart = s.restart_s if terms is None else terms.total_s
    shape = np.shape(M)
    return InterruptionTerms(failures_per_day=per_day, mtbf_s=M, checkpoint_bytes=size_b,
                             nodes=nodes, stall_s=stall,
                             interval_s=np.broadcast_to(tau, shape),
                             upload_s=np.broadcast_to(upload, shape),
                             restart_s=np.broadcast_to(restart, shape),
                             storage_gb_per_s=np.broadcast_to(shared, shape))


def restart_terms_at(inp: Inputs, gpus, store: rel.CheckpointStorage | None = None) -> rel.RestartTerms | None:
    """The restart per interruption as its terms at each GPU count
    (:func:`llmcost.economics.reliability.restart.restart_terms`: detection, rescheduling, checkpoint
    load from the shared tier, warm-up), with the scenario's detector and rescheduling; None
    when the scenario gives its own restart (``restart`` = "custom"). ``store``: the
    scenario's :func:`_checkpoint_storage`, where the caller has built it."""
    s = inp.scenario
    if s.restart == "custom":
        return None
    return rel.restart_terms(np.asarray(gpus), float(rel.checkpoint_size_bytes(inp.model.params)),
                             _checkpoint_storage(inp) if store is None else store,
                             rel.RestartPolicy(detector=s.failure_detection, reschedule=s.reschedule))


def _checkpoint_storage(inp: Inputs) -> rel.CheckpointStorage:
    """The scenario's shared tier (its total, else per node), local NVMe and node size: the
    one storage both the checkpoint stall and the restart's load read."""
    s = inp.scenario
    return rel.CheckpointStorage(shared_storage_gb_per_s=s.shared_storage_gb_per_s,
                                 storage_gb_per_s_per_node=s.storage_gb_per_s_per_node,
                                 local_write_gb_per_s=s.local_write_gb_per_s,
                                 gpus_per_node=inp.gpu.gpus_per_node)


#: per-node bandwidth towards shared storage [GB/s] (one 400 Gb/s storage NIC per node;
#: the default of :func:`llmcost.economics.reliability.checkpoints.checkpoint_stall_s`)
NODE_NETWORK_GB_PER_S = rel.NODE_NETWORK_GB_PER_S


def mode_goodput(inp: Inputs, tau, stall, M, upload, mode: str | None = None, restart_s=None):
    """Goodput of a checkpoint mode (default the scenario's; :func:`storage.checkpoint_goodput`)
    with the restart of :func:`interruption_terms` (``restart_s``; None: the scenario's own
    figure, which only a custom restart has)."""
    s = inp.scenario
    if restart_s is None:
        if s.restart != "custom":
            raise ValueError("mode_goodput: pass restart_s from interruption_terms (the "
                             "scenario's restart comes from its terms)")
        restart_s = s.restart_s
    return storage.checkpoint_goodput(s.checkpoint_mode if mode is None else mode,
                                      tau, stall, M, restart_s, upload)


def checkpoint_goodput_at(inp: Inputs, gpus):
    """Goodput of failures and checkpoints at each GPU count (vectorized)."""
    t = interruption_terms(inp, gpus)
    return mode_goodput(inp, t.interval_s, t.stall_s, t.mtbf_s, t.upload_s,
                        restart_s=t.restart_s)


def data_stall_at(inp: Inputs, tokens_per_s, gpus):
    """Share of time the run waits for data at a throughput (vectorized): the scenario's
    measured share (custom), or the read rate the tokens need (ids of 2 or 4 bytes x read
    amplification) against the dataset tier's read bandwidth, prefetch hiding what it can
    (:func:`llmcost.economics.storage.data_stall_share`)."""
    s = inp.scenario
    if s.data_stall == "custom":
        return np.full(np.shape(tokens_per_s), s.data_stall_share)
    read = data_read_at(inp, tokens_per_s, gpus)
    return np.asarray(storage.data_stall_share(read.aggregate_gb_per_s,
                                               s.data_tier_read_gb_per_s), dtype=float)


def data_read_at(inp: Inputs, tokens_per_s, gpus):
    """The run's data read rate at a throughput (:func:`storage.data_read_rate_gb_per_s`:
    token ids of 2 or 4 bytes x the scenario's read amplification), aggregate and per node."""
    nodes = np.maximum(1, np.ceil(np.asarray(gpus) / inp.gpu.gpus_per_node))
    tps = np.maximum(np.asarray(tokens_per_s, dtype=float), 1e-9)
    return storage.data_read_rate_gb_per_s(tps, nodes, storage.token_bytes(inp.model.vocab),
                                           inp.scenario.data_read_amplification)



def reliability(inp: Inputs, pl: PlanResult) -> ReliabilityResult:
    """Failures at this size, checkpoint cost and interval, goodput (Daly's model)."""
    return _reliability_at(inp, pl.gpus)


def _reliability_at(inp: Inputs, gpus: int) -> ReliabilityResult:
    s = inp.scenario
    t = interruption_terms(inp, gpus)
    per_day, M, size_b, nodes, stall, interval, upload, R, shared = (float(x) for x in t)
    mtbf = M / 3600
    nodes = int(nodes)
    daly = float(rel.daly_interval_s(stall, M))
    if s.checkpoint_mode == "sync":
        gb = rel.goodput_breakdown(interval, stall, M, R)
        good, shares = float(gb.goodput), (float(gb.checkpoint_share),
                                           float(gb.rework_share), float(gb.restart_share))
    else:
        good = float(mode_goodput(inp, interval, stall, M, upload, restart_s=R))
        # apportioned: the stall per period, then the failure stretch split between rework
        # (from the last durable copy) and restarts
        tau_e = max(interval, upload)
        ckpt = stall / (tau_e + stall)
        w = float(storage.rework_s("async", interval, stall, upload))
        rest = max(0.0, 1.0 - good - ckpt)
        shares = (ckpt, rest * w / (w + R), rest * R / (w + R))
    lost_h = float(storage.rework_s(s.checkpoint_mode, interval, stall, upload)) / 3600
    terms = restart_terms_at(inp, gpus)
    return ReliabilityResult(
        failures_per_1000_gpu_days=inp.failures_per_1000_gpu_days,
        failure_source=inp.failure_source, failures_per_day=per_day, job_mtbf_h=mtbf,
        checkpoint_bytes=size_b, checkpoint_stall_s=stall, interval_s=interval,
        young_interval_s=float(rel.young_interval_s(stall, M)), daly_interval_s=daly,
        goodput=good, checkpoint_share=shares[0], rework_share=shares[1],
        restart_share=shares[2], nodes=nodes, lost_hours_per_interruption=lost_h,
        restart_h=R / 3600,
        bandwidth_for_10s_gb_per_s=float(rel.storage_bandwidth_for_stall_gb_per_s(size_b, 10.0)),
        upload_s=upload, restart_terms_s=terms.as_dict() if terms is not None else {},
        storage_gb_per_s=shared)
