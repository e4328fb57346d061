"""``llmcost checkpoint``: the checkpoint interval (Young, Daly) and goodput."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from ..economics import reliability as rel


def cmd_checkpoint(a) -> dict:
    rate_info, warnings = None, []
    if a.mtbf_h is None:
        if a.gpus is not None and a.nodes is not None:
            raise v.InputError("gpus", "give --gpus or --nodes, not both")
        if a.gpus is None and a.nodes is None:
            raise v.InputError("mtbf_h", "give --mtbf-h, or --gpus (or --nodes) and a failure rate")
        gpus = (float(v.positive("gpus", a.gpus)) if a.gpus is not None else
                float(v.positive("nodes", a.nodes)) * float(v.positive("gpus_per_node",
                                                                        a.gpus_per_node)))
        given = [f for f, x in (("failures_per_1000_gpu_days", a.failures_per_1000_gpu_days),
                                ("node_failures_per_1000_node_days",
                                 a.node_failures_per_1000_node_days),
                                ("failure_rate", a.failure_rate)) if x is not None]
        if len(given) > 1:
            raise v.InputError(given[1], f"give one failure rate, not both --{given[0]} and "
                                         f"--{given[1]}".replace("_", "-"))
        if a.failures_per_1000_gpu_days is not None:
            rate = float(v.positive("failures_per_1000_gpu_days", a.failures_per_1000_gpu_days))
        elif a.node_failures_per_1000_node_days is not None:
            rate = float(rel.gpu_rate_from_node_rate(a.node_failures_per_1000_node_days,
                                                     a.gpus_per_node))
        else:
            fr = (catalog.failure_rate(a.failure_rate) if a.failure_rate is not None else
                  catalog.default_failure_rate(catalog.gpu(a.gpu).generation))
            rate = fr.failures_per_1000_gpu_days
            rate_info = {"id": fr.id, "counts": fr.counts, "source": fr.source}
            if fr.note:
                warnings.append(fr.note)
        mtbf = float(rel.mtbf_h(rel.job_failures_per_day(gpus, rate)))
        rate_info = {"failures_per_1000_gpu_days": rate, "gpus": gpus, **(rate_info or {})}
    else:
        mtbf = float(v.positive("mtbf_h", a.mtbf_h))
    M = mtbf * 3600
    young = float(rel.young_interval_s(a.checkpoint_s, M))
    daly = float(rel.daly_interval_s(a.checkpoint_s, M))
    tau = daly if a.interval_s is None else float(v.positive("interval_s", a.interval_s))
    br = rel.goodput_breakdown(tau, a.checkpoint_s, M, a.restart_s)
    res = {"mtbf_h": mtbf, "young_interval_s": young, "daly_interval_s": daly,
           "interval_s": tau, "goodput": float(br.goodput),
           "losses": {"checkpoints": float(br.checkpoint_share), "rework": float(br.rework_share),
                      "restarts": float(br.restart_share)}}
    if a.run_days is not None:
        days = float(v.positive("run_days", a.run_days))
        n = days * 86400 / (tau + a.checkpoint_s)
        res["checkpoints_in_run"] = n
        res["checkpoint_hours_in_run"] = n * a.checkpoint_s / 3600
    if rate_info is not None:
        res["failure_rate"] = rate_info
    if warnings:
        res["warnings"] = warnings
    return res


def _args_checkpoint(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost checkpoint``."""
    sp.add_argument("--checkpoint-s", type=float, required=True, help="blocking time per checkpoint")
    sp.add_argument("--mtbf-h", type=float, help="job mean time between failures")
    sp.add_argument("--gpus", type=float, help="instead of --mtbf-h: GPUs in the job")
    sp.add_argument("--nodes", type=float, help="instead of --gpus: nodes (x --gpus-per-node)")
    sp.add_argument("--gpus-per-node", type=float, default=8.0,
                    help="converts --nodes and --node-failures-per-1000-node-days")
    sp.add_argument("--failures-per-1000-gpu-days", type=float,
                    help="job failure rate per GPU (default: the --gpu generation's)")
    sp.add_argument("--node-failures-per-1000-node-days", type=float,
                    help="old form: a per-node rate, divided by --gpus-per-node")
    sp.add_argument("--failure-rate", help="failure-rate preset id (`llmcost list failure_rates`)")
    sp.add_argument("--gpu", default="h100-sxm",
                    help="GPU whose generation picks the default failure rate")
    sp.add_argument("--interval-s", type=float, help="evaluate this interval (default: Daly's)")
    sp.add_argument("--restart-s", type=float, default=0.0)
    sp.add_argument("--run-days", type=float, help="count checkpoints and their hours over a run")
