"""The whole cluster check: measurements read, expectations computed, findings listed, as
the JSON object ``llmcost check --json`` prints (keys: ``collectives``, ``steps``,
``findings``, ``assumptions``, ``notes``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl

import numpy as np

from .. import _validate as v
from ..training import comm
from ..training.hardware import Hardware
from ..training.step import calibration_for
from . import dcgm as dcgm_mod
from . import expect
from . import findings as fnd
from .nccl_tests import FORMATS, NcclTests
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


#: below this message size a measured bus bandwidth above the fabric's line rate is not a
#: measurement: at 1 KiB NCCL's latency (microseconds) holds any link far below its rate,
#: so such a table is someone's summary, not nccl-tests output
SMALL_BYTES = 1024


def placement(res: NcclTests, ranks: int, nodes=None, gpus_per_node=None):
    """(ranks per node, nodes, how) of a test: the Rank lines' hosts, else ``--nodes`` /
    ``--gpus-per-node``; (None, None, why) when neither shows it."""
    if res.nodes:
        if nodes and int(nodes) != res.nodes:
            raise v.InputError("nodes", f"--nodes {nodes}: the Rank lines' hosts show "
                                        f"{res.nodes} node(s) for the {ranks} ranks; give "
                                        f"{res.nodes} or leave --nodes out")
        k = max(1, ranks // res.nodes)
        if gpus_per_node and int(gpus_per_node) != k:
            raise v.InputError("gpus_per_node", f"--gpus-per-node {gpus_per_node}: the Rank "
                                                f"lines' hosts show {k} rank(s) on each of "
                                                f"{res.nodes} node(s); give {k} or leave "
                                                "--gpus-per-node out")
        said = [f for f, x in (("--nodes", nodes), ("--gpus-per-node", gpus_per_node)) if x]
        how = "the Rank lines' hosts" + (f", as {' and '.join(said)} say(s)" if said else "")
        return k, res.nodes, how
    if nodes:
        return max(1, math.ceil(ranks / nodes)), int(nodes), "--nodes"
    if gpus_per_node:
        k = min(ranks, int(gpus_per_node))
        return k, math.ceil(ranks / k), "--gpus-per-node"
    return None, None, ("no Rank lines with hosts for every rank, no --nodes or "
                        "--gpus-per-node")


def _refuse_small_above_line_rate(res: NcclTests, scale_up, scale_out):
    line = max(scale_up.bandwidth_gb_per_s_per_gpu, scale_out.bandwidth_gb_per_s_per_gpu)
    bad = (res.size_bytes < SMALL_BYTES) & (res.busbw_gb_per_s > line)
    if bad.any():
        i = int(np.argmax(bad))
        raise v.InputError("nccl_tests", f"busbw {res.busbw_gb_per_s[i]:g} GB/s at "
                                         f"{int(res.size_bytes[i])} B is above the fabric's "
                                         f"line rate ({line:g} GB/s per GPU): not a "
                                         f"measurement; expected {FORMATS}")


def check_nccl(res: NcclTests, gpu, scale_up, scale_out, nodes=None, gpus_per_node=None,
               nics_per_node=None) -> tuple[list, list, list]:
    """Rows of the collectives with their expected bus bandwidth, and the findings.

    Parameters
    ----------
    res : NcclTests
        From :func:`llmcost.checks.nccl_tests.read`.
    gpu : GPUSpec
    scale_up, scale_out : FabricSpec
        NVLink (or PCIe) and the scale-out fabric (its bandwidth per GPU is one NIC per GPU).
    nodes, gpus_per_node : int, optional
        The placement where the output does not show it (Rank lines' hosts win).
    nics_per_node : int, optional
        NICs per node (default: from NCCL_IB_HCA / NET/IB lines, else one per GPU).

    Returns
    -------
    collectives, findings, notes : list
        Without a placement the rows carry no expectation and a finding asks for one.
    """
    _refuse_small_above_line_rate(res, scale_up, scale_out)
    notes = list(res.notes)
    rows, out = [], []
    eff_i = calibration_for(gpu).nvlink_efficiency
    nics = nics_per_node or res.nics_per_node
    for run, op, m in res.runs():
        ranks = res.ranks
        if ranks is None:
            out.append(fnd.finding("warn", f"{op}: ranks unknown",
                                   "no Rank lines and busbw = algbw: give the run's Rank lines "
                                   "or --nodes and --gpus-per-node"))
            ranks_known = False
            ranks = 2
        else:
            ranks_known = True
        k, n_nodes, how = placement(res, ranks, nodes, gpus_per_node)
        out_fab = scale_out
        if k is not None and nics and n_nodes > 1:
            out_fab = replace(scale_out, bandwidth_gb_per_s_per_gpu=scale_out.bandwidth_gb_per_s_per_gpu
                              * nics / k)
        if k is None or not ranks_known:
            exp = np.full(int(m.sum()), np.nan)
            out.append(fnd.finding("warn", f"{op}: not judged against the fabric",
                                   f"{ranks} ranks, placement unknown ({how}): give --nodes "
                                   "and --gpus-per-node (and --nics-per-node) to compare with "
                                   "NVLink and the NICs"))
            cong = top = float("nan")
        else:
            cong = comm.congestion_factor(n_nodes, out_fab.congestion_per_doubling,
                                          out_fab.oversubscription)
            links = expect.TwoLevelLinks(
                scale_up.bandwidth_gb_per_s_per_gpu, out_fab.bandwidth_gb_per_s_per_gpu,
                scale_up.latency_us, out_fab.latency_us, eff_i, out_fab.efficiency, cong)
            exp = expect.expected_busbw_gb_per_s(op, res.size_bytes[m], ranks, k, links)
            exp = np.broadcast_to(np.asarray(exp, float), res.size_bytes[m].shape)
            top = float(expect.expected_busbw_gb_per_s(op, expect.ASYMPTOTE_BYTES, ranks, k, links))
        if np.isfinite(exp).any() and top > 0:
            share = expect.share_of_expected(op, res.size_bytes[m], res.time_us[m],
                                             res.busbw_gb_per_s[m], exp, ranks)
            regime = expect.size_regime(exp, top)
        else:
            share = np.full(exp.shape, np.nan)
            regime = np.full(exp.shape, "", dtype=object)
        label = op if len({r for r, _, _ in res.runs()}) == 1 else f"{op} (run {run + 1})"
        for s, b, bi, a, t, e, q, g in zip(res.size_bytes[m], res.busbw_gb_per_s[m],
                                           res.busbw_in_place_gb_per_s[m],
                                           res.algbw_gb_per_s[m], res.time_us[m], exp, share,
                                           regime):
            rows.append({"op": op, "run": int(run), "ranks": ranks, "size_bytes": int(s),
                         "busbw_gb_per_s": _num(b), "expected_busbw_gb_per_s": _num(e),
                         "busbw_in_place_gb_per_s": _num(bi), "algbw_gb_per_s": _num(a),
                         "time_us": _num(t), "share_of_expected": _num(q),
                         "regime": g or None})
        max_err = res.max_error[m] if res.max_error is not None else None
        out += fnd.busbw_findings(label, res.size_bytes[m], res.busbw_gb_per_s[m], exp,
                                  res.wrong[m], ranks if ranks_known else None,
                                  max_error=max_err)
        out += fnd.regime_findings(label if not ranks_known else f"{label} on {ranks} ranks",
                                   res.size_bytes[m], share, regime)
        where = (f"{k} per node, {n_nodes} node(s) ({how}); {gpu.id} over {scale_up.id} x "
                 f"{eff_i:g} inside a node and {out_fab.id} x {out_fab.efficiency:g}"
                 + (f" with {nics} NIC(s) per node" if nics and k and n_nodes > 1 else "")
                 + f" (congestion {float(cong):.3g}) across nodes") if k else how
        notes.append(f"{label} (named by "
                     f"{'--nccl-op' if res.op_from == 'given' else res.op_from}); "
                     f"{ranks if ranks_known else 'unknown'} ranks ({res.ranks_from}), {where}")
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
    sps = (log.samples_per_s[np.isfinite(log.samples_per_s)] if log.samples_per_s is not None
           else np.zeros(0))
    if len(tps):
        tokens_per_s = float(np.median(tps)) * gpus
    elif len(sps):
        # DeepSpeed and the Hugging Face Trainer count samples of the global batch
        tokens_per_s = float(np.median(sps)) * model.seq_len
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
             "log_mfu": (float(np.median(log_mfu)) if len(log_mfu)
                         and np.median(log_mfu) <= 1 else None),
             "log_tflops_per_gpu": float(np.median(log_tf)) if len(log_tf) else None}
    found = [] if steps["predicted_fits"] else [fnd.finding(
        "warn", "the scenario's layout does not fit in memory",
        f"the review's layout for {model.id} on {gpus} {gpu.id} does not fit: its predicted MFU "
        "describes a run that cannot happen; give the run's layout (tp=, pp=, ...) in --query")]
    prediction = (fnd.PredictedMfu(predicted, steps["predicted_mfu_band"], steps["band_reason"])
                  if predicted else None)
    return steps, found + fnd.step_findings(
        log, median_s, mfu, prediction, fpt * tokens_per_s / gpus / 1e12 if tokens_per_s else None,
        steps["log_tflops_per_gpu"]) + fnd.checkpoint_findings(
        log.checkpoint_s, median_s) + fnd.data_loading_findings(log.data_loading_s,
                                                                log.step_time_s)



def typed_keys(query: str | None) -> set:
    """The Scenario keys a query string sets."""
    return {k for k, _ in parse_qsl((query or "").lstrip("?"), keep_blank_values=True)}


def measured_steps(log: TrainLog) -> dict:
    """What a log says without a model: step count and times, the log's own throughput
    figures (an MFU the log prints is kept only where it is at most 1)."""
    st = log.step_time_s[np.isfinite(log.step_time_s)]
    tps = log.tokens_per_s_per_gpu[np.isfinite(log.tokens_per_s_per_gpu)]
    sps = log.samples_per_s[np.isfinite(log.samples_per_s)] if log.samples_per_s is not None \
        else np.zeros(0)
    log_mfu = log.log_mfu[np.isfinite(log.log_mfu)]
    log_tf = log.log_tflops_per_gpu[np.isfinite(log.log_tflops_per_gpu)]
    gb = log.global_batch[np.isfinite(log.global_batch)]
    m = float(np.median(log_mfu)) if len(log_mfu) else None
    return {"count": int(len(log.step)), "framework": log.framework,
            "median_step_s": float(np.median(st)) if len(st) else None,
            "tokens_per_s_per_gpu": float(np.median(tps)) if len(tps) else None,
            "samples_per_s": float(np.median(sps)) if len(sps) else None,
            "global_batch": float(np.median(gb)) if len(gb) else None,
            "tokens_per_s": None, "mfu": None, "predicted_mfu": None,
            "log_mfu": m if m is not None and m <= 1 else None,
            "log_tflops_per_gpu": float(np.median(log_tf)) if len(log_tf) else None,
            "data_loading_share": fnd.data_loading_share(log.data_loading_s, log.step_time_s),
            "checkpoints": int(len(log.checkpoint_s)),
            "checkpoint_p99_s": (float(np.percentile(log.checkpoint_s, 99))
                                 if len(log.checkpoint_s) else None),
            "model": None}


#: what a log is checked with when no model is known
NO_MODEL = ("the log's model is unknown: give model= (a catalog id: --model or --query, on "
            "the page the Model control) or a Hugging Face config.json (--model-config FILE, "
            "on the page its upload); the log prints none (Megatron's argument dump, "
            "torchtitan's flavor)")


#: the placement a user gives where nccl-tests output does not show it: key -> its words
PLACEMENT_KEYS = {"nodes": "nodes", "gpus_per_node": "GPUs per node",
                  "nics_per_node": "NICs per node"}


@dataclass(frozen=True)
class Placement:
    """Where nccl-tests' ranks ran, as a user gives it where the output does not show it
    (the Rank lines' hosts win); each value None or a whole number in [1, 1,000,000],
    checked once here.

    Attributes
    ----------
    nodes : int, optional
        Nodes of the run [-].
    gpus_per_node : int, optional
        Ranks on each node [-].
    nics_per_node : int, optional
        NICs per node [-] (default: from NCCL_IB_HCA / NET/IB lines, else one per GPU).
    """

    nodes: int | None = None
    gpus_per_node: int | None = None
    nics_per_node: int | None = None

    def __post_init__(self) -> None:
        for key in PLACEMENT_KEYS:
            x = getattr(self, key)
            if x is not None:
                object.__setattr__(self, key, int(v.integer(key, x, 1, 1_000_000)))


@dataclass(frozen=True)
class Measured:
    """What a cluster measured, as read: nccl-tests output (NcclTests), a training log
    (TrainLog) and DCGM samples (DcgmSamples); any may be None."""

    nccl: NcclTests | None = None
    log: TrainLog | None = None
    dcgm: Any = None


@dataclass(frozen=True)
class Pasted:
    """What a user pasted or uploaded, each a (name, text) pair or None, and the collective
    where neither the nccl-tests output nor its name says it."""

    nccl: tuple[str, str] | None = None
    train_log: tuple[str, str] | None = None
    dcgm: tuple[str, str] | None = None
    nccl_op: str | None = None

    def read(self) -> Measured:
        """The texts read (:func:`llmcost.checks.nccl_tests.read`, :func:`~llmcost.checks.train_log.read`,
        :func:`~llmcost.checks.dcgm.read`)."""
        from . import nccl_tests
        from . import train_log as log_mod
        return Measured(
            nccl=nccl_tests.read(self.nccl[1], name=self.nccl[0], op=self.nccl_op)
            if self.nccl is not None else None,
            log=log_mod.read(self.train_log[1]) if self.train_log is not None else None,
            dcgm=dcgm_mod.read(self.dcgm[1]) if self.dcgm is not None else None)


def check_texts(pasted: Pasted, *, scenario=None, query=None, model_given=None,
                hardware: Hardware | None = None, placement: Placement | None = None,
                cat=None) -> dict:
    """The check of what a user pasted or uploaded: what ``llmcost check`` and the cluster
    check page both run, so that the same texts and inputs give one answer.

    Nothing stands in for what the texts and inputs do not say: without a model (given, or
    printed in the log) the log's measured figures are reported alone with a finding that
    asks for it; without a placement (Rank lines' hosts, or ``nodes``/``gpus_per_node``)
    the collectives are not judged against the fabric and a finding asks for it.

    Parameters
    ----------
    pasted : Pasted
        (name, text) of nccl-tests output, a training log and DCGM samples, and the
        collective where neither the output nor its name says it.
    scenario : Scenario, optional
        The run's scenario (its hardware, and the model when ``model_given``).
    query : str, optional
        The query the scenario came from (the keys it sets are not taken from the log).
    model_given : bool, optional
        Whether the scenario's model was given (default: ``model`` in ``query``).
    hardware : Hardware, optional
        The nccl-tests run's GPU, scale-up and scale-out fabric (default: the scenario's; the
        scale-out bandwidth per GPU is one NIC per GPU).
    placement : Placement, optional
        The nccl-tests placement [-], where the output does not show it.
    cat : Catalog, optional

    Returns
    -------
    dict
        :func:`check`'s answer.
    """
    if pasted.nccl is None and pasted.train_log is None and pasted.dcgm is None:
        raise v.InputError("nccl_tests", "give nccl-tests output, a training log and/or DCGM "
                                         "samples")
    measured = pasted.read()
    if model_given is None:
        model_given = scenario is not None and (
            "model" in typed_keys(query) or scenario.model == "config")
    return check(measured, hardware=hardware, scenario=scenario, query=query, cat=cat,
                 placement=placement, model_given=model_given, placement_from_scenario=False)


def check(measured: Measured, *, hardware: Hardware | None = None, scenario=None,
          query: str | None = None, cat=None, placement: Placement | None = None,
          model_given: bool | None = None, placement_from_scenario: bool = True) -> dict:
    """The check as one JSON-ready dict.

    Parameters
    ----------
    measured : Measured
        nccl-tests output, a training log and/or DCGM samples, as read.
    hardware : Hardware, optional
        Hardware of the nccl-tests run (default: the scenario's).
    scenario : Scenario, optional
        What the log runs (model, GPU, GPUs, layout). Without one, or without a model
        (``model_given`` false and none printed in the log), the log's measured figures
        alone are reported and a finding asks for the model.
    query : str, optional
        The query the scenario came from: the keys it sets are not taken from the log.
    cat : Catalog, optional
    placement : Placement, optional
        The nccl-tests placement where the output does not show it.
    model_given : bool, optional
        The scenario's model was given (``model=`` or a config); default: ``model`` in the
        query or a config model in the scenario, and true for a scenario without a query
        (an app's scenario, whose model the user picked).
    placement_from_scenario : bool
        Where nccl-tests' hardware comes from the scenario and no placement is shown or
        given, take the scenario GPU's node size as GPUs per node (with a note). The CLI
        passes False: there the placement is asked for.
    """
    nccl, log, dcgm = measured.nccl, measured.log, measured.dcgm
    if nccl is None and log is None and dcgm is None:
        raise v.InputError("nccl_tests", "give --nccl-tests FILE, --train-log FILE and/or "
                                         "--dcgm FILE")
    place = Placement() if placement is None else placement
    out = {"collectives": [], "steps": None, "dcgm": None, "findings": [], "assumptions": [],
           "notes": []}
    results = None
    if log is not None:
        scenario, results = _check_log(out, log, scenario, query, cat, model_given)
    if nccl is not None:
        _check_collectives(out, nccl, hardware, scenario, results, cat, place, placement_from_scenario)
    if dcgm is not None:
        out["dcgm"] = {"model": dcgm.model, "metrics": dcgm_mod.summary(dcgm)}
        out["findings"] += fnd.dcgm_findings(out["dcgm"]["metrics"])
        out["notes"] += list(getattr(dcgm, "notes", ()) or ())
    # alerts first, then warnings, then what is fine (stable within a level)
    rank = {"alert": 0, "warn": 1, "ok": 2}
    out["findings"].sort(key=lambda f: rank.get(f["level"], 3))
    return out


def _check_log(out: dict, log: TrainLog, scenario, query, cat, model_given):
    """The log's part of :func:`check`, into ``out``: the model taken from the log where none
    was given, the steps judged against the review (or measured alone without a model).
    Returns the scenario (with what the log states) and the review (None without a model)."""
    if model_given is None:
        model_given = scenario is not None and (
            query is None or "model" in typed_keys(query) or scenario.model == "config")
    if scenario is not None and not model_given and log.model_config:
        scenario = replace(scenario, model="config", model_config=log.model_config)
        out["notes"].append(f"model from the log: {log.model_from}")
        model_given = True
    elif scenario is not None and not model_given and log.model_id:
        scenario = replace(scenario, model=log.model_id)
        out["notes"].append(f"model from the log: {log.model_id} ({log.model_from})")
        model_given = True
    if scenario is None or not model_given:
        out["steps"] = measured_steps(log)
        out["findings"].append(fnd.finding("warn", "MFU not judged", NO_MODEL))
        out["findings"] += fnd.step_findings(log, out["steps"]["median_step_s"])
        out["findings"] += fnd.checkpoint_findings(log.checkpoint_s,
                                                   out["steps"]["median_step_s"])
        out["findings"] += fnd.data_loading_findings(log.data_loading_s, log.step_time_s)
        return scenario, None
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
    layout = (results.plan.layout.to_dict()["description"] if results.plan.layout
              else "none fits")
    out["assumptions"].append(
        f"MFU: the review's model FLOPs per token over GPUs x dense BF16 peak "
        f"({results.inputs.gpu.bf16_dense_tflops:g} TFLOP/s), predicted for the "
        f"scenario's layout ({layout})")
    return scenario, results


def _check_collectives(out: dict, nccl: NcclTests, hardware: Hardware | None, scenario, results,
                       cat, place: Placement, placement_from_scenario: bool) -> None:
    """The nccl-tests part of :func:`check`, into ``out``: the hardware (given, else the
    scenario's, with its node size as GPUs per node where asked and nothing shows one) and
    each collective against its expectation."""
    if hardware is None:
        if scenario is None:
            raise v.InputError("gpu", "nccl-tests needs the hardware: --gpu and --fabric, "
                                      "or --query")
        if results is None:
            from ..review import evaluate
            results = evaluate(scenario, cat)
        hardware = results.inputs.hardware
        if (placement_from_scenario and not place.nodes and not place.gpus_per_node
                and not nccl.nodes):
            place = replace(place, gpus_per_node=int(hardware.gpu.gpus_per_node))
            out["notes"].append(f"placement assumed from the scenario's GPU: "
                                f"{place.gpus_per_node} GPUs per node ({hardware.gpu.id}); not "
                                "shown by the output")
    rows, f, notes = check_nccl(nccl, hardware.gpu, hardware.scale_up, hardware.scale_out,
                                nodes=place.nodes, gpus_per_node=place.gpus_per_node,
                                nics_per_node=place.nics_per_node)
    out["collectives"], out["findings"] = rows, f + out["findings"]
    out["notes"] += notes
    out["assumptions"].append(NCCL_ASSUMPTIONS)
