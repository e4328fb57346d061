"""Scaling analysis: predicted throughput vs node count by fabric, and the reverse, a user's
measured throughput at several node counts turned into efficiency, a fitted communication
share, an extrapolation and a warning where the curve falls off a cliff.

References
----------
1. The scaling article, "How to Scale LLM Training Infrastructure Without Bottlenecks"
   (OneSource Cloud): measure MFU at increasing node counts; utilization should degrade
   gradually, not cliff-like.
2. The cluster guide, N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO,
   2026): InfiniBand 98% scaling efficiency to 128 GPUs, RoCE v2 82% at 64 and 71% at 128
   (the anecdote the fabric constants are fitted to).
3. G. Amdahl, AFIPS 1967; J. Gustafson, CACM 31(5), 1988 (fixed and scaled speed-up).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validate as v
from .arch import ModelSpec
from .hardware import Hardware
from .layout import Layout
from .memory import MemoryOptions
from .step import Options, StepPrediction, predict_step

#: The cluster guide's scaling test as llmcost models it (it names no model or layout):
#: data-parallel (DDP, ZeRO 0) training of a 7B Llama-2 model on 8x H100 SXM nodes, one
#: 4096-token sequence per GPU per step, flash attention, gradient reduction overlapped with
#: backward. Weak scaling from 1 node; efficiency = per-GPU throughput / one node's.
SEED_WORKLOAD = dict(model="llama2-7b", gpu="h100-sxm", scale_up="nvlink4", tp=1, pp=1,
                     sequences_per_replica=1, micro_batch=1, zero_stage=0, seq_len=4096,
                     recompute="none")


def weak_scaling(model: ModelSpec, hardware: Hardware, nodes: ArrayLike, layout: Layout,
                 sequences_per_replica: ArrayLike = 1, options: Options = Options(flash_attention=True),
                 seq_len: int | None = None,
                 memory: MemoryOptions | None = None) -> tuple[pd.DataFrame, StepPrediction]:
    r"""Predicted throughput and efficiency as nodes are added, batch per replica fixed.

    .. math:: \epsilon(N) = \frac{X(N) / N}{X(N_0) / N_0}

    with X tokens/s, N GPUs, N_0 the first entry of ``nodes`` (usually one node): the
    scaling article's "measure MFU at increasing node counts", done before buying.

    Parameters
    ----------
    model, hardware
        As :func:`llmcost.training.step.predict_step`.
    nodes : array of int
        Node counts, ascending [-].
    layout : Layout
        Fixed as the cluster grows (DP grows); its ``gpus`` and ``global_batch`` are set
        for each node count.
    sequences_per_replica : int
        Global batch per data-parallel replica [sequences].
    options : Options
    seq_len : int, optional
    memory : MemoryOptions, optional
        As :func:`llmcost.training.step.predict_step`.

    Returns
    -------
    table : pandas.DataFrame
        nodes, gpus, tokens_per_s, tokens_per_s_per_gpu, mfu, efficiency [-], step_time_s.
    prediction : StepPrediction

    References
    ----------
    .. [1] Gustafson 1988 (scaled speed-up); "How to Scale LLM Training Infrastructure
       Without Bottlenecks" (OneSource Cloud).
    """
    n = v.integer("nodes", np.atleast_1d(nodes))
    gpus = n * hardware.gpu.gpus_per_node
    dp = gpus // (layout.tp * layout.pp * layout.cp)
    batch = dp * v.integer("sequences_per_replica", sequences_per_replica)
    pred = predict_step(model, hardware, replace(layout, gpus=gpus, global_batch=batch),
                        options=options, memory=memory, seq_len=seq_len)
    per_gpu = pred.tokens_per_s / gpus
    table = pd.DataFrame({
        "nodes": n, "gpus": gpus, "tokens_per_s": pred.tokens_per_s,
        "tokens_per_s_per_gpu": per_gpu, "mfu": pred.mfu,
        "efficiency": per_gpu / per_gpu[0], "step_time_s": pred.step_time_s,
    })
    return table, pred


@dataclass(frozen=True)
class MeasuredScaling:
    """What a user's scaling measurements say."""

    table: pd.DataFrame            # nodes, tokens_per_s, efficiency, predicted_tokens_per_s
    comm_share_per_doubling: float  # sigma: extra step time per doubling, share of base time
    extrapolated: pd.DataFrame      # nodes, tokens_per_s, efficiency at the requested scales
    warnings: tuple[str, ...]


def analyse_measured_scaling(measured: Any, target_nodes: Iterable[float] = (),
                             cliff_drop: float = 0.10) -> MeasuredScaling:
    r"""Efficiency vs linear, fitted communication share, extrapolation and cliff warnings.

    Per-GPU step time is modelled as growing with each doubling of nodes:

    .. math:: \frac{X_0 / N_0}{X(N) / N} = 1 + \sigma \log_2 \frac{N}{N_0}

    sigma fitted by least squares through the origin; a point whose efficiency falls more
    than ``cliff_drop`` below its predecessor per doubling (or below the fit's 3-sigma band)
    is flagged as a cliff: the bottleneck changed (fabric tier, storage, oversubscription).

    Parameters
    ----------
    measured : pandas.DataFrame or mapping
        Columns ``nodes`` (or ``gpus``) and ``tokens_per_s`` (or ``step_time_s`` with
        ``global_batch`` and ``seq_len``), at least two distinct scales.
    target_nodes : sequence of int
        Scales to extrapolate to [-].
    cliff_drop : float
        Efficiency loss per doubling that counts as a cliff [-].

    Returns
    -------
    MeasuredScaling

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud):
       "efficient scaling shows utilization that degrades gradually, not cliff-like".
    """
    df = pd.DataFrame(measured).copy()
    if "nodes" not in df:
        if "gpus" not in df:
            raise v.InputError("nodes", "measured scaling needs a 'nodes' or 'gpus' column")
        df["nodes"] = df["gpus"]
    if "tokens_per_s" not in df:
        need = {"step_time_s", "global_batch", "seq_len"}
        if not need <= set(df):
            raise v.InputError("tokens_per_s", "measured scaling needs 'tokens_per_s' or "
                                               "'step_time_s' with 'global_batch' and 'seq_len'")
        df["tokens_per_s"] = df["global_batch"] * df["seq_len"] / v.positive(
            "step_time_s", df["step_time_s"].to_numpy(float))
    nodes = v.positive("nodes", df["nodes"].to_numpy(float))
    x = v.positive("tokens_per_s", df["tokens_per_s"].to_numpy(float))
    order = np.argsort(nodes)
    nodes, x = nodes[order], x[order]
    if len(np.unique(nodes)) < 2:
        raise v.InputError("nodes", "measured scaling needs at least two distinct node counts")
    per = x / nodes
    eff = per / per[0]
    d = np.log2(nodes / nodes[0])
    y = 1 / eff - 1
    sigma = float(np.sum(d * y) / np.sum(d * d)) if np.sum(d * d) > 0 else 0.0
    fit_eff = 1 / (1 + sigma * d)
    warnings = []
    for i in range(1, len(nodes)):
        doublings = max(np.log2(nodes[i] / nodes[i - 1]), 1e-9)
        drop = (eff[i - 1] - eff[i]) / doublings
        if drop > cliff_drop:
            warnings.append(f"cliff between {nodes[i - 1]:g} and {nodes[i]:g} nodes: efficiency "
                            f"falls {drop:.0%} per doubling (from {eff[i - 1]:.0%} to {eff[i]:.0%})")
    resid = eff - fit_eff
    if len(nodes) >= 4:
        band = 3 * np.std(resid[1:]) if np.std(resid[1:]) > 0 else 0.0
        for j in np.nonzero(resid < -max(band, 0.05))[0]:
            msg = f"{nodes[j]:g} nodes run {-resid[j]:.0%} below the gradual trend"
            if not any(f"{nodes[j]:g} nodes" in w for w in warnings):
                warnings.append(msg)
    if sigma < 0:
        warnings.append("efficiency rises with scale: check that the batch per replica was fixed")
    tn = np.asarray(list(target_nodes), dtype=float)
    if tn.size:
        tn = v.positive("target_nodes", tn)
        te = 1 / (1 + sigma * np.log2(tn / nodes[0]))
        extrap = pd.DataFrame({"nodes": tn, "efficiency": te,
                               "tokens_per_s": per[0] * tn * te})
    else:
        extrap = pd.DataFrame(columns=["nodes", "efficiency", "tokens_per_s"])
    table = pd.DataFrame({"nodes": nodes, "tokens_per_s": x, "efficiency": eff,
                          "fitted_efficiency": fit_eff})
    return MeasuredScaling(table=table, comm_share_per_doubling=sigma, extrapolated=extrap,
                           warnings=tuple(warnings))
