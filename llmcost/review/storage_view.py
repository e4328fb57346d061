"""Storage and checkpoints of a reviewed run: the figures `llmcost storage` prints, from the
same Results the apps show (one number, one computation)."""

from __future__ import annotations

from ..economics import storage
from .results import Results
from .stages import data_read_at, interruption_terms, mode_goodput

#: a synchronous burst is sized to stay under this stall [s] (the tier it needs is reported)
SYNC_TARGET_STALL_S = 10.0
#: checkpoints kept on each tier (assumptions: one local copy when async, two on the
#: parallel file system so a corrupt latest copy has a fallback)
KEEP_LOCAL, KEEP_WARM = 1, 2


def storage_summary(results: Results) -> dict:
    """Checkpoint size, data read rate, stalls, upload, the durable interval and goodput for
    sync and async checkpoints, and what each tier must carry.

    Parameters
    ----------
    results : Results
        A review (:func:`llmcost.review.evaluate`).

    Returns
    -------
    summary : dict
        checkpoint_gb [GB], checkpoint_bytes_per_param [bytes], read_gb_per_s and
        read_gb_per_s_per_node [GB/s], sync_stall_s, async_stall_s, upload_s, interval_s (the
        scenario's mode; async: never shorter than the upload) [s], goodput [-], by_mode
        (sync and async side by side) and tiers (hot per node, warm aggregate).

    References
    ----------
    .. [1] :mod:`llmcost.economics.storage` (durable interval, rework from the last durable
       copy); Daly 2006 (interval); Rajbhandari et al. 2019 §3.1 (checkpoint bytes).
    """
    s, inp, r = results.scenario, results.inputs, results.reliability
    size, nodes = r.checkpoint_bytes, r.nodes
    # both modes through the review's own interruption model: the scenario's mode here is
    # the reliability stage's figure, the other one is what switching would give
    by_mode = {}
    for m in ("sync", "async"):
        t = interruption_terms(inp, results.plan.gpus, m)
        M, stall, tau, up, R = (float(x) for x in (t.mtbf_s, t.stall_s, t.interval_s,
                                                   t.upload_s, t.restart_s))
        by_mode[m] = {"stall_s": stall, "upload_s": up, "interval_s": tau,
                      "goodput": float(mode_goodput(inp, tau, stall, M, up, m, R)),
                      "rework_s_per_failure": float(storage.rework_s(m, tau, stall, up))}
    stalls = {m: by_mode[m]["stall_s"] for m in by_mode}
    upload = by_mode["async"]["upload_s"]
    mode = by_mode[s.checkpoint_mode]
    tps = results.predict.tokens_per_s if results.predict is not None else 0.0
    read = data_read_at(inp, tps, results.plan.gpus)
    # snapshots come no faster than their uploads end (upload 0 when sync)
    durable_s = max(mode["interval_s"], mode["upload_s"])
    tiers = {
        "hot": {"per": "node", "capacity_tb": KEEP_LOCAL * size / nodes / 1e12,
                "write_burst_gb_per_s": size / nodes / max(stalls["async"], 1e-9) / 1e9,
                "offered_write_gb_per_s": s.local_write_gb_per_s},
        "warm": {"per": "aggregate", "capacity_tb": KEEP_WARM * size / 1e12,
                 "write_average_gb_per_s": size / durable_s / 1e9,
                 # sync: the burst must land within the target stall; async: one upload
                 # per durable period
                 "write_burst_gb_per_s": size / SYNC_TARGET_STALL_S / 1e9
                 if s.checkpoint_mode == "sync" else size / max(durable_s, 1.0) / 1e9,
                 "read_gb_per_s": float(read.aggregate_gb_per_s),
                 "offered_write_gb_per_s": r.storage_gb_per_s},
    }
    # a need equal to the offer by construction (the async stall is set by the local write)
    # meets it: compare with a relative tolerance, not exact floats
    slack = 1 + 1e-9
    for t in tiers.values():
        t["meets_burst"] = bool(t["write_burst_gb_per_s"] <= t["offered_write_gb_per_s"] * slack)
        t["meets_average"] = bool(t.get("write_average_gb_per_s", 0.0)
                                  <= t["offered_write_gb_per_s"] * slack)
    return {
        "model": inp.model.id, "gpus": results.plan.gpus, "nodes": nodes,
        "checkpoint_mode": s.checkpoint_mode,
        "checkpoint_gb": size / 1e9, "checkpoint_bytes_per_param": size / inp.model.params,
        "read_gb_per_s": float(read.aggregate_gb_per_s),
        "read_gb_per_s_per_node": float(read.per_node_gb_per_s),
        "sync_stall_s": stalls["sync"], "async_stall_s": stalls["async"], "upload_s": upload,
        "interval_s": mode["interval_s"], "goodput": mode["goodput"],
        "review_goodput": r.goodput, "by_mode": by_mode, "tiers": tiers,
    }
