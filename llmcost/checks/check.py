"""The whole cluster check: measurements read, expectations computed, findings listed, as
the JSON object ``llmcost check --json`` prints (keys: ``collectives``, ``steps``,
``findings``, ``assumptions``, ``notes``)."""

from __future__ import annotations

import math
from dataclasses import replace
from urllib.parse import parse_qsl

import numpy as np

from .. import _validate as v
from ..training import comm
from ..training.step import calibration_for
from . import dcgm as dcgm_mod, expect, findings as fnd
from .nccl_tests import NcclTests
from .train_log import TrainLog

#: what the bus-bandwidth expectation leaves out (see :mod:`llmcost.checks.expect`)
NCCL_ASSUMPTIONS = (
    "expected busbw: ring all-reduce/all-gather/reduce-scatter, pairwise all-to-all, one "
    "ring per NIC across nodes, and NCCL's tree for an all-reduce across nodes where faster "
    "(llmcost.training.comm, llmcost.checks.expect); no NVLink SHARP (NVLS) or InfiniBand "
    "SHARP: those read above the expectation, which is not a problem")


def _num(x):
    """A JSON number, or None for NaN."""
    x = float(x)
    return x if math.isfinite(x) else None


def _ranks_per_node(res: NcclTests, gpu, ranks: int) -> int:
    if res.nodes:
        return max(1, ranks // res.nodes)
    return min(ranks, int(gpu.scale_up_domain_gpus or gpu.gpus_per_node))


def check_nccl(res: NcclTests, gpu, scale_up, scale_out) -> tuple[list, list, list]:
    """Rows of the collectives with their expected bus bandwidth, and the findings.

    Parameters
    ----------
    res : NcclTests
        From :func:`llmcost.checks.nccl_tests.read`.
    gpu : GPUSpec
        The GPU (its NVLink domain size when the output does not name hosts).
    scale_up, scale_out : FabricSpec
        NVLink (or PCIe) and the scale-out fabric.

    Returns
    -------
    collectives, findings, notes : list
    """
    notes = list(res.notes)
    ranks = res.ranks
    if ranks is None:
        ranks = 2
        notes.append("ranks unknown (no Rank lines, bus and algorithm bandwidth equal): 2 "
                     "assumed")
    k = _ranks_per_node(res, gpu, ranks)
    nodes = math.ceil(ranks / k)
    cong = comm.congestion_factor(nodes, scale_out.congestion_per_doubling,
                                  scale_out.oversubscription)
    eff_i = calibration_for(gpu).nvlink_efficiency
    rows, out = [], []
    for op in dict.fromkeys(res.op):
        m = res.op == op
        exp = expect.expected_busbw_gb_per_s(
            op, res.size_bytes[m], ranks, k, scale_up.bandwidth_gb_per_s_per_gpu,
            scale_out.bandwidth_gb_per_s_per_gpu, scale_up.latency_us, scale_out.latency_us,
            eff_i, scale_out.efficiency, cong)
        exp = np.broadcast_to(np.asarray(exp, float), res.size_bytes[m].shape)
        for s, b, bi, a, t, e in zip(res.size_bytes[m], res.busbw_gb_per_s[m],
                                     res.busbw_in_place_gb_per_s[m], res.algbw_gb_per_s[m],
                                     res.time_us[m], exp):
            rows.append({"op": op, "ranks": ranks, "size_bytes": int(s),
                         "busbw_gb_per_s": _num(b), "expected_busbw_gb_per_s": _num(e),
                         "busbw_in_place_gb_per_s": _num(bi), "algbw_gb_per_s": _num(a),
                         "time_us": _num(t)})
        out += fnd.busbw_findings(op, res.size_bytes[m], res.busbw_gb_per_s[m], exp,
                                  res.wrong[m], ranks)
    ops = ", ".join(dict.fromkeys(res.op))
    notes.append(f"{ops} (named by {'--nccl-op' if res.op_from == 'given' else res.op_from}); "
                 f"{ranks} ranks ({res.ranks_from}), {k} per node, {nodes} node(s); "
                 f"{gpu.id} over {scale_up.id} x {eff_i:g} inside a node and {scale_out.id} "
                 f"x {scale_out.efficiency:g} (congestion {float(cong):.3g}) across nodes")
    return rows, out, notes


#: Megatron arguments that set a Scenario field when the query leaves it unset
_ARG_FIELDS = {"seq_length": "seq_len", "world_size": "gpus", "tensor_model_parallel_size": "tp",
               "pipeline_model_parallel_size": "pp", "context_parallel_size": "cp",
               "expert_model_parallel_size": "ep", "micro_batch_size": "micro_batch"}


def scenario_from_log(scenario, log: TrainLog, typed: set, seq_len_of=None):
    """The scenario with what the log states and the query did not: sequence length, GPUs,
    layout (Megatron's argument dump) and the global batch in tokens (sequences logged x
    the sequence length; ``seq_len_of(scenario)`` resolves a scenario's 0, the model's)."""
    changes = {f: log.args[a] for a, f in _ARG_FIELDS.items()
               if a in log.args and f not in typed and log.args[a] > 0}
    gb = log.global_batch[np.isfinite(log.global_batch)]
    if len(gb) and "global_batch_tokens" not in typed:
        seq = changes.get("seq_len", scenario.seq_len)
        if not seq and seq_len_of is not None:
            seq = seq_len_of(scenario)
        if seq:
            changes["global_batch_tokens"] = int(np.median(gb)) * int(seq)
            changes["batch"] = "custom"
    return replace(scenario, **changes) if changes else scenario, changes


def check_steps(log: TrainLog, results) -> tuple[dict, list]:
    """``steps`` and its findings for a log against a reviewed scenario.

    MFU = model FLOPs per token (the review's model, no recomputation) x tokens/s over
    GPUs x the dense BF16 peak, as the review states its own MFU; not the log's TFLOP/s.

    Parameters
    ----------
    log : TrainLog
    results : llmcost.review.results.Results
        The review of the scenario the log runs.
    """
    inp = results.inputs
    model, gpu, gpus = inp.model, inp.gpu, results.plan.gpus
    st = log.step_time_s[np.isfinite(log.step_time_s)]
    median_s = float(np.median(st)) if len(st) else None
    tps = log.tokens_per_s_per_gpu[np.isfinite(log.tokens_per_s_per_gpu)]
    gb = log.global_batch[np.isfinite(log.global_batch)]
    if len(tps):
        tokens_per_s = float(np.median(tps)) * gpus
    elif median_s and len(gb):
        tokens_per_s = float(np.median(gb)) * model.seq_len / median_s
    elif median_s and results.headline.get("global_batch_tokens"):
        tokens_per_s = results.headline["global_batch_tokens"] / median_s
    else:
        tokens_per_s = None
    fpt = model.flops_per_token("none")
    mfu = (fpt * tokens_per_s / (gpus * gpu.bf16_dense_tflops * 1e12)
           if tokens_per_s else None)
    predicted = results.predict.mfu if results.predict is not None else None
    # the step model's own band (data/step_model_errors.csv): tokens/s within
    # [1 - low, 1 + high] x the prediction, so MFU likewise and the step time inversely
    band = results.economics.band if results.economics is not None else None
    pred_step = results.predict.step_time_s if results.predict is not None else None
    log_mfu = log.log_mfu[np.isfinite(log.log_mfu)]
    log_tf = log.log_tflops_per_gpu[np.isfinite(log.log_tflops_per_gpu)]
    # above the dense peak the figure is not a measurement but a scenario unlike the run:
    # no MFU is shown, the alert finding carries the figure and the reason
    steps = {"count": int(len(log.step)), "framework": log.framework,
             "median_step_s": median_s, "tokens_per_s": tokens_per_s,
             "mfu": mfu if mfu is None or mfu <= 1 else None,
             "predicted_mfu": predicted, "predicted_step_time_s": pred_step,
             "predicted_mfu_band": ([predicted * (1 - band.low), predicted * (1 + band.high)]
                                    if band and predicted else None),
             "predicted_step_time_band_s": ([pred_step / (1 + band.high),
                                             pred_step / (1 - band.low)]
                                            if band and pred_step and band.low < 1 else None),
             "band_reason": band.reason if band else None,
             "data_loading_share": fnd.data_loading_share(log.data_loading_s, log.step_time_s),
             "checkpoints": int(len(log.checkpoint_s)),
             "checkpoint_p99_s": (float(np.percentile(log.checkpoint_s, 99))
                                  if len(log.checkpoint_s) else None),
             "predicted_fits": bool(results.headline["fits"]),
             "model": model.id, "gpu": gpu.id, "gpus": int(gpus), "seq_len": int(model.seq_len),
             "flops_per_token": fpt,
             "log_mfu": float(np.median(log_mfu)) if len(log_mfu) else None,
             "log_tflops_per_gpu": float(np.median(log_tf)) if len(log_tf) else None}
    found = [] if steps["predicted_fits"] else [fnd.finding(
        "warn", "the scenario's layout does not fit in memory",
        f"the review's layout for {model.id} on {gpus} {gpu.id} does not fit: its predicted MFU "
        "describes a run that cannot happen; give the run's layout (tp=, pp=, ...) in --query")]
    return steps, found + fnd.step_findings(
        log.step, log.step_time_s, log.time_s, mfu, predicted, median_s,
        fpt * tokens_per_s / gpus / 1e12 if tokens_per_s else None, steps["log_tflops_per_gpu"],
        steps["predicted_mfu_band"], steps["band_reason"]) + fnd.checkpoint_findings(
        log.checkpoint_s, median_s) + fnd.data_loading_findings(log.data_loading_s,
                                                                log.step_time_s)



def typed_keys(query: str | None) -> set:
    """The Scenario keys a query string sets."""
    return {k for k, _ in parse_qsl((query or "").lstrip("?"), keep_blank_values=True)}


def check(nccl: NcclTests | None = None, log: TrainLog | None = None, *, dcgm=None, gpu=None,
          scale_up=None, scale_out=None, scenario=None, query: str | None = None,
          cat=None) -> dict:
    """The check as one JSON-ready dict.

    Parameters
    ----------
    nccl : NcclTests, optional
    log : TrainLog, optional
    dcgm : llmcost.checks.dcgm.DcgmSamples, optional
    gpu, scale_up, scale_out : optional
        Hardware of the nccl-tests run (default: the scenario's).
    scenario : Scenario, optional
        What the log runs (model, GPU, GPUs, layout); required with ``log``.
    query : str, optional
        The query the scenario came from: the keys it sets are not taken from the log.
    """
    if nccl is None and log is None and dcgm is None:
        raise v.InputError("nccl_tests", "give --nccl-tests FILE, --train-log FILE and/or "
                                         "--dcgm FILE")
    out = {"collectives": [], "steps": None, "dcgm": None, "findings": [], "assumptions": [],
           "notes": []}
    results = None
    if log is not None:
        if scenario is None:
            raise v.InputError("query", "a training log needs the run it logs: --query "
                                        "\"model=..&gpu=..&gpus=..\"")
        from ..review import evaluate
        scenario, taken = scenario_from_log(
            scenario, log, typed_keys(query),
            lambda s: evaluate(s, cat).inputs.model.seq_len)
        if taken:
            out["notes"].append("from the log: " + ", ".join(
                f"{k}={x}" for k, x in taken.items() if k != "batch"))
        results = evaluate(scenario, cat)
        out["steps"], f = check_steps(log, results)
        out["findings"] += f
        layout = results.plan.layout.to_dict()["description"] if results.plan.layout else "none fits"
        out["assumptions"].append(
            f"MFU: the review's model FLOPs per token over GPUs x dense BF16 peak "
            f"({results.inputs.gpu.bf16_dense_tflops:g} TFLOP/s), predicted for the "
            f"scenario's layout ({layout})")
    if nccl is not None:
        if gpu is None:
            if scenario is None:
                raise v.InputError("gpu", "nccl-tests needs the hardware: --gpu and --fabric, "
                                          "or --query")
            if results is None:
                from ..review import evaluate
                results = evaluate(scenario, cat)
            gpu, scale_up, scale_out = (results.inputs.gpu, results.inputs.scale_up,
                                        results.inputs.scale_out)
        rows, f, notes = check_nccl(nccl, gpu, scale_up, scale_out)
        out["collectives"], out["findings"] = rows, f + out["findings"]
        out["notes"] += notes
        out["assumptions"].append(NCCL_ASSUMPTIONS)
    if dcgm is not None:
        out["dcgm"] = {"model": dcgm.model, "metrics": dcgm_mod.summary(dcgm)}
        out["findings"] += fnd.dcgm_findings(out["dcgm"]["metrics"])
    return out
