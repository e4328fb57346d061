"""Effective utilization of a measured run: the cluster guide's formula, MFU and HFU, and whether the
figure is plausible.

MFU counts the model's FLOPs (no recomputation) against the dense peak; HFU counts what the
hardware executed (recomputation included). A figure comes back with findings, never printed.

References
----------
1. A. Chowdhery et al., "PaLM", arXiv:2204.02311, Appendix B (MFU definition; PaLM 540B
   46.2% MFU, 57.8% HFU; GPT-3 21.3%, Gopher 32.5%, MT-NLG 30.2%).
2. V. Korthikanti et al., arXiv:2205.05198, §6 (model vs hardware FLOPs).
3. Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Table 4 (405B on 8,192 to
   16,384 H100: 38-43% BF16 MFU).
4. D. Narayanan et al., arXiv:2104.04473, Table 1 (A100: 43-52% of peak, hardware FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _validate as v
from .training.precision import MFU_PEAK_PRECISION, PRECISIONS, check_precision
from .training.uncertainty import PUBLISHED_MFU_CEILING

#: Above this share of the dense peak, an MFU or HFU is above any large published run: the
#: ceiling the step model's band uses too (PaLM 540B's 57.8% HFU), so a measured figure and a
#: prediction are judged against one number.
RARE_ABOVE = PUBLISHED_MFU_CEILING
#: Published large-run range of MFU/HFU on dense peak ([1] [3] [4]).
PUBLISHED_RANGE = (0.38, PUBLISHED_MFU_CEILING)
#: FP8 dense peak / BF16 dense peak when no GPU is given: 2 on every catalog GPU with FP8
#: (H100 1978.9/989.4, B200 4500/2250, MI300X 2614.9/1307.4; data/gpus.csv, datasheets).
FP8_OVER_BF16_PEAK = 2.0


def effective_utilization(flops_per_token, global_batch, seq_len, steps, peak_tflops, gpus,
                          wall_clock_s):
    r"""The cluster guide's effective utilization (N. Dixit, "GPU Clusters for LLM Training: A
    Builder's Guide", SIVARO, 2026).

    .. math:: U = \frac{C_{token}\, B\, s\, n_{steps}}{F_{peak}\, N_{GPU}\, t_{wall}}

    With model FLOPs per token this is MFU over the wall clock (restarts, checkpoints and
    data stalls included); with hardware FLOPs, HFU.

    Parameters
    ----------
    flops_per_token : float or array
        C_token [FLOP per token] (e.g. 6N, or :func:`llmcost.training.flops.flops_per_token`).
    global_batch : float or array
        B [sequences per step].
    seq_len : float or array
        s [tokens per sequence].
    steps : float or array
        n_steps [-].
    peak_tflops : float or array
        Dense peak per GPU F_peak [TFLOP/s] (not the sparsity figure).
    gpus : float or array
        N_GPU [-].
    wall_clock_s : float or array
        t_wall [s].

    Returns
    -------
    utilization : float or array
        [-], a share of peak.

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026), formula
       ``effective_utilization``.
    .. [2] Chowdhery et al. 2022, arXiv:2204.02311, Appendix B.
    """
    c, b, s, n, peak, g, t = v.checked(
        v.positive, flops_per_token=flops_per_token, global_batch=global_batch, seq_len=seq_len,
        steps=steps, peak_tflops=peak_tflops, gpus=gpus, wall_clock_s=wall_clock_s)
    return v.result(c * b * s * n / (peak * 1e12 * g * t))


def mfu(tokens_per_s, model_flops_per_token, peak_tflops, gpus):
    r"""Model FLOPs utilization from throughput.

    .. math:: MFU = \frac{\dot D\, C_{model}}{N_{GPU} F_{peak}}

    Parameters
    ----------
    tokens_per_s : float or array
        Cluster throughput D-dot [tokens/s].
    model_flops_per_token : float or array
        C_model [FLOP per token], without recomputation.
    peak_tflops : float or array
        Dense peak per GPU [TFLOP/s].
    gpus : float or array
        [-].

    Returns
    -------
    mfu : float or array
        [-].

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, Appendix B.
    """
    return _utilization("model_flops_per_token", tokens_per_s, model_flops_per_token,
                        peak_tflops, gpus)


def hfu(tokens_per_s, hardware_flops_per_token, peak_tflops, gpus):
    r"""Hardware FLOPs utilization from throughput (recomputation counted).

    .. math:: HFU = \frac{\dot D\, C_{hardware}}{N_{GPU} F_{peak}}

    Parameters
    ----------
    tokens_per_s : float or array
        [tokens/s].
    hardware_flops_per_token : float or array
        [FLOP per token], e.g. ``flops_per_token(..., recompute="full")``.
    peak_tflops : float or array
        Dense peak per GPU [TFLOP/s].
    gpus : float or array
        [-].

    Returns
    -------
    hfu : float or array
        [-].

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, Appendix B.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §6.
    """
    return _utilization("hardware_flops_per_token", tokens_per_s, hardware_flops_per_token,
                        peak_tflops, gpus)


def _utilization(flops_name, tokens_per_s, flops_per_token, peak_tflops, gpus):
    d = v.positive("tokens_per_s", tokens_per_s)
    c = v.positive(flops_name, flops_per_token)
    peak = v.positive("peak_tflops", peak_tflops)
    g = v.positive("gpus", gpus)
    return v.result(d * c / (g * peak * 1e12))


def tokens_per_s_from_step_time(step_time_s, global_batch, seq_len):
    r"""Throughput from step time.

    .. math:: \dot D = \frac{B\, s}{t_{step}}

    Parameters
    ----------
    step_time_s : float or array
        [s].
    global_batch : float or array
        B [sequences].
    seq_len : float or array
        s [tokens].

    Returns
    -------
    tokens_per_s : float or array
        [tokens/s].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §5.1.
    """
    t = v.positive("step_time_s", step_time_s)
    return v.result(v.positive("global_batch", global_batch) * v.positive("seq_len", seq_len) / t)


def achieved_tflops_per_gpu(tokens_per_s, flops_per_token, gpus):
    r"""Achieved throughput per GPU.

    .. math:: X = \frac{\dot D\, C_{token}}{N_{GPU}}\cdot 10^{-12}

    Parameters
    ----------
    tokens_per_s, flops_per_token, gpus : float or array
        [tokens/s], [FLOP per token], [-].

    Returns
    -------
    tflops : float or array
        [TFLOP/s per GPU].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §5.1 (Table 1's column).
    """
    return v.result(v.positive("tokens_per_s", tokens_per_s) *
                    v.positive("flops_per_token", flops_per_token) /
                    v.positive("gpus", gpus) / 1e12)


@dataclass(frozen=True)
class Finding:
    """One remark on a figure: ``level`` is "info", "warning" or "error"."""

    level: str
    code: str
    message: str


@dataclass(frozen=True)
class Assessed:
    """A utilization figure with what is to be said of it."""

    value: float
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not any(f.level == "error" for f in self.findings)

    def to_dict(self) -> dict:
        return {"value": self.value,
                "findings": [dict(level=f.level, code=f.code, message=f.message)
                             for f in self.findings]}


PLAUSIBILITY_LEVELS = ("ok", "rare", "sparsity-suspected", "impossible")


def plausibility_level(utilization, published=None):
    r"""Vectorized plausibility class of utilization figures.

    0 "ok" (<= 60% of dense peak), 1 "rare" (> 60%: no large published run reaches it;
    published MFU/HFU span 38-57%), 2 "sparsity-suspected" (1.7x-2.3x ``published`` for
    the same setting: a 2:4-sparsity peak or doubly counted FLOPs give 2x), 3 "impossible"
    (> 100%).

    Parameters
    ----------
    utilization : float or array
        [-].
    published : float or array, optional
        Published figure for a comparable run [-], in (0, 1].

    Returns
    -------
    level : int or array
        Index into :data:`PLAUSIBILITY_LEVELS`.

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, Table 3.
    .. [2] Llama Team 2024, arXiv:2407.21783, Table 4.
    .. [3] Narayanan et al. 2021, arXiv:2104.04473, Table 1.
    """
    u = v.positive("utilization", utilization)
    level = np.where(u > RARE_ABOVE, 1, 0)
    if published is not None:
        p = v.fraction("published", published)
        ratio = u / p
        level = np.where((ratio >= 1.7) & (ratio <= 2.3), 2, level)
    level = np.where(u > 1.0, 3, level)
    return v.result(level)


def assess_utilization(utilization, published=None, peak_tflops=None, gpu=None,
                       precision="bf16"):
    """A scalar utilization figure with plausibility findings.

    llmcost states MFU/HFU against the dense BF16 peak for every precision
    (:data:`llmcost.training.precision.MFU_PEAK_PRECISION`), so an FP8 run and a BF16 run
    compare on one scale. An FP8 run may also be quoted against the FP8 dense peak; that
    is recognised (info "fp8-peak") and not mistaken for the 2:4-sparsity figure, although
    on H100 the two numbers coincide (1978.9 = 2 x 989.4). The above-peak, rare and low
    thresholds apply to the share of the peak the GEMMs run at: the FP8 peak for an FP8
    run (so 75% of the BF16 peak is 37.5% of an H100's FP8 peak, not a rare figure).

    Parameters
    ----------
    utilization : float
        MFU, HFU or effective utilization [-].
    published : float, optional
        A published figure for a comparable run [-], in (0, 1], on the same peak.
    peak_tflops : float, optional
        The peak the figure was computed with [TFLOP/s]; checked against ``gpu``.
    gpu : GPUSpec, optional
        Catalog entry whose dense and sparse peaks the ``peak_tflops`` is compared with,
        and which must support ``precision``.
    precision : {"bf16", "fp8", "mxfp8"}
        The run's GEMM precision.

    Returns
    -------
    Assessed
    """
    u = float(v.positive("utilization", utilization))
    v.choice("precision", precision, PRECISIONS)
    if gpu is not None:
        check_precision(precision, gpu)
    low = precision != MFU_PEAK_PRECISION
    # ceiling: GEMM peak / the peak the figure is stated against
    ceiling = 1.0
    if low:
        ceiling = (gpu.fp8_dense_tflops / gpu.bf16_dense_tflops if gpu is not None
                   else FP8_OVER_BF16_PEAK)
    out: list[Finding] = []
    if peak_tflops is not None and gpu is not None:
        pk = float(v.positive("peak_tflops", peak_tflops))
        dense = [gpu.bf16_dense_tflops] + ([gpu.fp8_dense_tflops] if gpu.fp8_dense_tflops else [])
        if low and abs(pk / gpu.fp8_dense_tflops - 1) < 0.02:
            ceiling = 1.0
            out.append(Finding("info", "fp8-peak",
                               f"peak {pk:g} TFLOP/s is {gpu.id}'s dense FP8 peak, right for "
                               f"the GEMMs of a {precision} run; llmcost states MFU against "
                               f"the dense BF16 peak ({gpu.bf16_dense_tflops:g}) for every "
                               f"precision: {u * pk / gpu.bf16_dense_tflops:.1%} on that scale"))
        elif any(abs(pk / (2 * d) - 1) < 0.02 for d in dense):
            out.append(Finding("error", "sparse-peak",
                               f"peak {pk:g} TFLOP/s is the 2:4-sparsity figure of {gpu.id}; "
                               f"its dense BF16 peak is {gpu.bf16_dense_tflops:g}"))
        elif not low and gpu.fp8_dense_tflops and abs(pk / gpu.fp8_dense_tflops - 1) < 0.02:
            out.append(Finding("info", "fp8-peak",
                               f"peak {pk:g} TFLOP/s is {gpu.id}'s FP8 figure; BF16 training "
                               f"should use {gpu.bf16_dense_tflops:g}"))
    share = u / ceiling
    of_peak = (f"{u:.1%}" if ceiling == 1.0 else
               f"{u:.1%} of the dense BF16 peak ({share:.1%} of the FP8 peak its GEMMs run at)")
    of_dense = f"{u:.1%} of dense peak" if ceiling == 1.0 else of_peak
    findings: list[Finding] = []
    if share > 1.0:
        # the multiple of the peak, never a percentage above 100% a reader could quote
        findings.append(Finding("error", "above-peak",
                                f"the figures give {share:.3g} x the peak, above 100%: the "
                                "FLOPs per token, the token count, the GPU count or the peak "
                                "is wrong"))
    elif share > RARE_ABOVE:
        findings.append(Finding("warning", "rare",
                                f"{of_dense} is above any large published run "
                                f"(published MFU/HFU: {PUBLISHED_RANGE[0]:.0%}-"
                                f"{PUBLISHED_RANGE[1]:.0%}; Llama 3 405B on H100 38-43%, PaLM "
                                "540B 46.2% MFU / 57.8% HFU); check that the peak is the dense "
                                "figure and FLOPs are not double-counted"))
    if published is not None:
        p = float(v.fraction("published", published))
        r = u / p
        if 1.7 <= r <= 2.3:
            findings.append(Finding("warning", "sparsity-suspected",
                                    f"{u:.1%} is {r:.2f}x the published {p:.1%}: a 2:4-sparsity "
                                    "peak or FLOPs counted twice would give 2x"))
    findings.extend(out)
    if share < 0.15:
        findings.append(Finding("info", "low",
                                f"{of_peak} is low: large runs reach 38-57%; look for "
                                "communication, pipeline bubbles, data stalls or small "
                                "per-GPU matmuls"))
    return Assessed(u, tuple(findings))
