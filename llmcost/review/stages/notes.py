"""The notes' sentences the stages share: a number as typed, the batch, the fabric's assumed
terms, the napkin's factors and the exposed MoE all-to-all."""

from __future__ import annotations

import re

import numpy as np

from ..results import EconomicsResult, Inputs, PlanResult, PredictResult


def as_typed(x: float) -> str:
    """A number as a user types it: a whole number in full (8388608), others as %g."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"



NAPKIN_FACTOR_LABELS = {"attention_flops": "attention FLOPs beyond 6N",
                        "layout_mfu": "the layout's MFU against 40%",
                        "goodput_and_stalls": "failures, checkpoints and data stalls",
                        "realized_ratio": "what comparable published runs realized over "
                                          "their floor"}


_LEADING_TOKENS = re.compile(r"^[0-9.,]+[kKMBGT]? tokens: ")


def batch_note(inp: Inputs, pl: PlanResult) -> str:
    """The global batch note: the batch the figures use, as the headline states it (one
    computation), then why the batch rule chose it."""
    from ..format import format_headline
    reason = pl.batch_reason or inp.batch.reason
    B = pl.global_batch
    lead = (f"global batch {format_headline('global_batch_tokens', B * inp.model.seq_len)} "
            f"({B:,} sequences of {inp.model.seq_len:,})")
    return f"{lead}: {_LEADING_TOKENS.sub('', reason)}"


#: how the notes name a fabric's assumed terms
_TERM_WORDS = {"latency_us": ("latency", "{:g} us"), "efficiency": ("efficiency", "{:g}"),
               "congestion_per_doubling": ("congestion", "{:g} per doubling of nodes"),
               "oversubscription": ("oversubscription", "{:g}:1")}


def fabric_assumption_note(fab, pr: PredictResult, e: EconomicsResult | None) -> str:
    """The note naming the scale-out fabric's assumed terms and the band they put on the step
    time and on the forecast's days (the same figures as ``fabric_assumptions`` in the JSON)."""
    terms = [f"{_TERM_WORDS[t][0]} {_TERM_WORDS[t][1].format(getattr(fab, t))}"
             for t in fab.assumed if t in _TERM_WORDS]
    lo, hi = pr.fabric_step_time_s_band
    text = (f"fabric {fab.id}: {', '.join(terms)} assumed, not measured (data/fabrics.csv); "
            f"with those terms at the best and worst values measured on other fabrics the "
            f"step takes {lo:.3g}-{hi:.3g} s (now {pr.step_time_s:.3g} s)")
    if e is not None and e.days is not None:
        d_lo, d_hi = pr.fabric_days_band(e.days)
        text += f", the forecast {d_lo:,.1f}-{d_hi:,.1f} days"
    return text


def napkin_note(e: EconomicsResult, lead: bool = True) -> str:
    """The review's GPU-hours beside the napkin's, and the factors between them."""
    parts = sorted(e.napkin_factors.items(), key=lambda kv: -abs(np.log(kv[1])))
    terms = ", ".join(f"{NAPKIN_FACTOR_LABELS[k]} x{x:.2f}" for k, x in parts)
    head = (f"GPU-hours {e.gpu_hours / 1e6:,.3g}M against the napkin's "
            f"{e.napkin_gpu_hours / 1e6:,.3g}M (6 N D at 40% of the dense BF16 peak): "
            if lead else "")
    return head + terms


#: an exposed expert all-to-all above this share of the step gets a note [-]
A2A_NOTE_SHARE = 0.10


def a2a_note(ep_comm_s: float, step_time_s: float, overlap: float) -> str | None:
    """A note when the experts' all-to-all left in the step takes more than
    :data:`A2A_NOTE_SHARE` of it, saying what published MoE runs hide.

    Parameters
    ----------
    ep_comm_s : float
        Exposed all-to-all per step, after the stated overlap [s].
    step_time_s : float
        Step time [s].
    overlap : float
        Share of the all-to-all the scenario states hidden [-].

    Returns
    -------
    str or None
        The note; None when the exposed all-to-all is at most 10% of the step.

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, §3.2.1.
    """
    share = ep_comm_s / step_time_s if step_time_s > 0 else 0.0
    if share <= A2A_NOTE_SHARE:
        return None
    hidden = f"{overlap:.0%} of it hidden" if overlap > 0 else "none of it hidden"
    return (f"MoE all-to-all: {ep_comm_s:,.2f} s of the {step_time_s:,.2f} s step "
            f"({share:.0%}), {hidden}; DeepSeek-V3's DualPipe leaves \"near-zero all-to-all "
            "communication overhead\" (arXiv:2412.19437, §3.2.1) and Megatron-LM's "
            "expert-parallel overlap hides part of it: if your stack overlaps it, pick it "
            "under 'MoE all-to-all overlap' (moe_overlap=1f1b or dualpipe)")
