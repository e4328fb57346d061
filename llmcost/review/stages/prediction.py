"""The predict stage: the step of the planned layout, its fabric band, and what limits its
MFU against the peak of the precision its GEMMs run at."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import catalog as catalog_mod
from ...training.hardware import Hardware
from ...training.precision import peak_tflops_by_part
from ...training.step import STEP_TERMS, predict_step
from ..results import Inputs, MfuLimit, PlanResult, PredictResult
from .space import REVIEW_MEMORY, options_for


def predict(inp: Inputs, pl: PlanResult) -> PredictResult | None:
    if pl.layout is None:
        return None
    L = pl.layout
    p = predict_step(inp.model, inp.hardware, L,
                     options=options_for(inp.scenario), memory=REVIEW_MEMORY)
    mem = {k: float(x) for k, x in p.memory.to_gb().items()}
    step = float(p.step_time_s)
    mfu_p, hfu_p = precision_utilization(float(p.mfu), float(p.hfu), inp.gpu,
                                         inp.scenario.precision)
    bounds = inp.catalog.fabric_bounds(inp.scale_out)
    band = None
    if bounds is not None:
        # both ends in one vectorized call: the banded terms as arrays of two
        lo, hi = bounds
        both = replace(lo, **{t: np.array([getattr(lo, t), getattr(hi, t)], dtype=float)
                              for t in catalog_mod.BANDED_TERMS})
        ends = predict_step(inp.model, Hardware(inp.gpu, inp.scale_up, both), L,
                            options=options_for(inp.scenario),
                            memory=REVIEW_MEMORY, with_scaling=False).step_time_s
        band = (float(ends[0]), float(ends[1]))
    return PredictResult(fabric_step_time_s_band=band, step=p, step_time_s=step, tokens_per_s=float(p.tokens_per_s),
                         mfu=float(p.mfu), hfu=float(p.hfu),
                         model_tflops_per_gpu=float(p.model_tflops_per_gpu), memory_gb=mem,
                         memory_gb_per_gpu=mem["total_gb"],
                         capacity_gb=inp.gpu.memory_bytes / 1e9, fits=bool(p.fits),
                         bubble_share=float(p.pp_bubble_s) / step, mfu_precision=mfu_p,
                         hfu_precision=hfu_p, mfu_limit=mfu_limit(inp, pl, p))


#: the step's communication terms, and the optimizer's memory-bound step: what the "bandwidth"
#: limit of MFU counts (llmcost.training.step.STEP_TERMS)
BANDWIDTH_TERMS = ("tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_p2p_s", "dp_comm_s",
                   "optimizer_s")


def mfu_shares(p, peak_ratio: float = 1.0) -> dict:
    r"""The step split by what it loses against the dense peak of the precision its GEMMs run
    at [-], with that MFU, :math:`U = \mathrm{MFU} \times` ``peak_ratio`` (BF16 peak over the
    precision's; :func:`g_peak_ratio`), summing to 1:

    .. math:: 1 = U + \underbrace{c\,\tfrac{M}{H} - U}_{compute}
              + \underbrace{c\,(1 - \tfrac{M}{H})}_{memory} + \underbrace{b}_{bubble}
              + \underbrace{\textstyle\sum_k x_k}_{bandwidth}

    with every term a share of the step: :math:`c` the compute (matmuls at their efficiency and
    memory-bound kernels), of which recomputation is the share :math:`1 - M/H` (MFU over HFU:
    the FLOPs done again to fit in memory), :math:`b` the pipeline bubble and :math:`x_k` the
    exposed communication and the optimizer step (:data:`BANDWIDTH_TERMS`)."""
    step = float(p.step_time_s)
    c = float(p.compute_s) / step
    mh = float(p.mfu) / float(p.hfu) if float(p.hfu) > 0 else 1.0
    return {"compute": max(0.0, c * mh - float(p.mfu) * peak_ratio), "memory": max(0.0, c * (1 - mh)),
            "bubble": float(p.pp_bubble_s) / step,
            "bandwidth": sum(float(getattr(p, k)) for k in BANDWIDTH_TERMS) / step}


def mfu_limit(inp: Inputs, pl: PlanResult, p) -> MfuLimit:
    """What limits the run's MFU, in one line: the batch when it does not fill the GPUs
    (:mod:`llmcost.review.fill`), memory when nothing fits, else the largest of
    :func:`mfu_shares`."""
    ratio = g_peak_ratio(inp.gpu, inp.scenario.precision)
    shares = mfu_shares(p, ratio)
    L, f = pl.layout, pl.batch_fill
    if f is not None and not f.fills and f.test.at is not None:
        return MfuLimit("batch", f"{f.what()}; {f.filling_text()}", shares)
    if not pl.fits:
        return MfuLimit("memory", f"{inp.model.id} does not fit in {inp.gpu.id} memory on "
                                  f"{pl.gpus:,} GPUs in any layout tried", shares)
    limit = max(shares, key=shares.get)
    x = shares[limit]
    step = float(p.step_time_s)
    if limit == "bubble":
        why = (f"the pipeline bubble takes {x:.1%} of the step (PP{L.pp}, v{L.interleave}, "
               f"{L.num_microbatches} micro-batches per replica: (p-1)/(v m) = "
               f"{(L.pp - 1) / (L.interleave * L.num_microbatches):.1%} of the ideal step)")
    elif limit == "bandwidth":
        k = max(BANDWIDTH_TERMS, key=lambda k: float(getattr(p, k)))
        why = (f"communication and the optimizer step take {x:.1%} of the step, most of it "
               f"{STEP_TERMS[k].label} ({float(getattr(p, k)) / step:.1%})")
    elif limit == "memory":
        why = (f"recomputation to fit in memory takes {x:.1%} of the step "
               f"(recompute={L.recompute}"
               + (f", modules {','.join(L.recompute_modules)}" if L.recompute_modules else "")
               + ")")
    else:
        why = (f"the compute runs at {float(p.hfu) * ratio * step / float(p.compute_s):.1%} "
               f"of the dense {inp.scenario.precision.upper()} peak (matmul efficiency and "
               f"memory-bound kernels): {x:.1%} of the step beyond the model's FLOPs at peak")
    return MfuLimit(limit, why, shares)


class PhysicalBoundError(ValueError):
    """A prediction beyond what the hardware can do: a bug in the step model, never an answer
    (a ValueError, so the command line prints it as its one error line)."""


def precision_utilization(mfu: float, hfu: float, gpu, precision: str) -> tuple:
    r"""MFU and HFU against the dense peak of the precision the GEMMs run at.

    .. math:: U_p = U_{BF16} \, F_{BF16} / F_{p}

    where :math:`U_{BF16}` is stated against the dense BF16 peak :math:`F_{BF16}` (as published
    runs state MFU) and :math:`F_p` is the dense peak of precision ``p`` (FP8 and MXFP8: the FP8
    dense rate). No FLOP of the run executes faster than :math:`F_p`, so :math:`U_p \le 1`.

    Parameters
    ----------
    mfu, hfu : float
        Model and hardware FLOPs utilization against the dense BF16 peak [-].
    gpu : GPUSpec
        The accelerator (:meth:`GPUSpec.peak_tflops`).
    precision : {"bf16", "fp8", "mxfp8"}

    Returns
    -------
    (mfu_precision, hfu_precision) : tuple of float [-]

    Raises
    ------
    PhysicalBoundError
        When either is above 1: the step model predicted more FLOP/s than the peak.

    References
    ----------
    .. [1] Chowdhery et al., "PaLM", arXiv:2204.02311, 2022, Appendix B (MFU against the peak).
    .. [2] NVIDIA Blackwell / Hopper datasheets: dense FP8 = 2 x dense BF16 (data/gpus.csv).
    """
    ratio = gpu.peak_tflops("bf16") / gpu.peak_tflops(precision)
    out = (mfu * ratio, hfu * ratio)
    for name, x in zip(("MFU", "HFU"), out):
        if not x <= 1.0:
            raise PhysicalBoundError(
                f"the step model predicts {name} {x:.1%} of {gpu.id}'s dense {precision.upper()} "
                f"peak ({gpu.peak_tflops(precision):,.0f} TFLOP/s), above what the GPU can do: a "
                "bug in the model, not an answer; please report this scenario")
    return out



def g_peak_ratio(gpu, precision) -> float:
    """BF16 dense peak over the peak the run's GEMMs run at [-] (1 for BF16, 1/2 for FP8)."""
    return gpu.bf16_dense_tflops / float(peak_tflops_by_part(gpu, precision)[0])
