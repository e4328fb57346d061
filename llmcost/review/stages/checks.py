"""The checks stage: the warnings the notes list and the headline figures flagged as
uncalibrated, implausible or infeasible."""

from __future__ import annotations

from ... import utilization as ut
from ...economics import napkin
from ...planning import pipeline_batch
from ...planning.sizing import cluster_power_mw
from ..results import Flag
from .notes import a2a_note, batch_note, fabric_assumption_note, napkin_note
from .prediction import g_peak_ratio
from .space import a2a_overlap, given_layout

#: a run that trains less than half its wall clock is a scenario no one runs: flagged
GOODPUT_FLOOR = 0.5
#: dollars for one run above which a result is flagged (published frontier training runs
#: are estimated in the hundreds of millions: Epoch AI, "The rising costs of training
#: frontier AI models", 2024); ten billion is beyond any of them by a wide margin
COST_BOUND_USD = 1e10

def flags_and_warnings(inp, sized, pl, pr, r, e):
    """Warnings for the notes, and the headline figures to flag visibly."""
    s = inp.scenario
    warnings, flags = list(inp.warnings), {}
    if e is not None and "spot" in e.costs_usd and not inp.spot_covers(pl.gpus):
        warnings.append(_spot_capacity_note(inp, pl))
    if sized is not None:
        warnings += [n for n in sized.notes]
    elif s.max_power_mw > 0:
        note, above = _power_note(inp, pl.gpus)
        warnings.append(note)
        if above:
            _put(flags, Flag("gpus", "infeasible", note.removeprefix("power: ")))
    warnings += list(pl.notes)
    _layout_flags(inp, pl, flags)
    if pr is not None and pr.fabric_step_time_s_band is not None:
        warnings.append(fabric_assumption_note(inp.scale_out, pr, e))
    if pr is not None:
        _utilization_checks(inp, pl, pr, warnings, flags)
    if pr is not None and pl.layout is not None and pl.layout.ep > 1:
        note = a2a_note(float(pr.step.ep_comm_s), pr.step_time_s, a2a_overlap(s))
        if note:
            warnings.append(note)
    if e is not None:
        _estimate_checks(inp, e, warnings, flags)
    if inp.batch is not None:
        warnings.append(batch_note(inp, pl))
    if pr is not None and pr.mfu_limit is not None:
        warnings.append(f"what limits MFU ({pr.mfu:.1%}): {pr.mfu_limit.limit}: "
                        f"{pr.mfu_limit.reason}")
    if r is not None and r.goodput < GOODPUT_FLOOR:
        _put(flags, Flag("goodput", "implausible",
                         f"{r.goodput * 100:.2g}%: failures, restarts and checkpoints take most of "
                         "the run; no one runs a job like this (checkpoint faster, restart "
                         "faster or check the failure rate)"))
    if e is not None and e.costs_usd:
        top = max(e.costs_usd.values())
        if top > COST_BOUND_USD:
            _put(flags, Flag("cost_on_demand_usd", "implausible",
                             f"${top / 1e9:,.0f} B for one run: beyond any published training "
                             "budget; check the tokens, the cluster and the prices"))
    if sized is not None and not sized.meets_target:
        flags["meets_target"] = Flag("meets_target", "infeasible",
                                     f"no size meets {s.target_days:g} days")
        _put(flags, Flag("days", "infeasible", f"misses the target of {s.target_days:g} days"))
    if e is not None and s.preemptions_per_day > 0 and not e.spot.offered and \
            inp.spot_discount is not None:
        warnings.append("spot: preemptions x hours lost per preemption fill the day, the spot "
                        "run never finishes; spot is not costed")
    return warnings, flags


def _power_note(inp, gpus: int) -> tuple[str, bool]:
    """What the scenario's power limit says of a cluster it does not size (sizing by target
    days keeps within the limit, a given GPU count is only checked against it), and whether
    the cluster draws more."""
    s, kw = inp.scenario, inp.power_kw_per_gpu
    if kw is None:
        return (f"power: the {s.max_power_mw:g} MW limit is not checked: no system power per GPU "
                f"is known for {inp.gpu.id}"), False
    mw = float(cluster_power_mw(gpus, kw, s.pue))
    above = mw > s.max_power_mw
    return (f"power: {gpus:,} GPUs draw {mw:.3g} MW ({kw:g} kW each at PUE {s.pue:g}), "
            + (f"above the {s.max_power_mw:g} MW limit; sizing by target days keeps within it"
               if above else f"within the {s.max_power_mw:g} MW limit")), above


def _spot_capacity_note(inp, pl) -> str:
    """The warning that spot capacity is not documented at this many GPUs."""
    cap = inp.spot_capacity_gpus
    return (f"spot: capacity not documented at this size ({pl.gpus:,} GPUs"
            + (f"; {inp.price_offers.get('spot', inp.price_offer)} documents {cap:,}" if cap
               else f"; {inp.price_offers.get('spot') or 'the entered price'} documents none")
            + "): costed, never named the cheapest way to pay")


def _layout_flags(inp, pl, flags: dict) -> None:
    """Flag the days (and memory) infeasible when no layout runs or the layout does not fit."""
    if pl.layout is None:
        given = given_layout(inp.scenario)
        flags["days"] = Flag("days", "infeasible", "the given layout cannot run on these GPUs "
                             "(see the warnings)" if given else
                             "no layout splits the batch over these GPUs")
    elif not pl.fits:
        flags["fits"] = Flag("fits", "infeasible", f"{inp.model.id} does not fit in "
                             f"{inp.gpu.id} memory on {pl.gpus:,} GPUs in any layout tried")
        flags["days"] = Flag("days", "infeasible", "the layout does not fit in memory: these "
                             "days assume memory the GPUs do not have")
        flags["memory_gb_per_gpu"] = flags["fits"]


def _utilization_checks(inp, pl, pr, warnings: list, flags: dict) -> None:
    """MFU beyond what published runs reach, and the pipeline bubble's fixes."""
    verdict = ut.assess_utilization(pr.mfu, precision=inp.scenario.precision)
    for f in verdict.findings:
        warnings.append(f.message)
        flags["mfu"] = Flag("mfu", "implausible", f.message)
    # the bubble's fixes where the bubble is what limits MFU (a bubble the batch leaves
    # is the batch's: its note says which batch fills the GPUs)
    if pl.layout is not None and pl.layout.pp > 1 and pr.bubble_share > 0.10 and \
            pr.mfu_limit is not None and pr.mfu_limit.limit == "bubble":
        _bubble_note(inp, pl, pr, warnings)


def _bubble_note(inp, pl, pr, warnings: list) -> None:
    """The batch that would shrink a pipeline bubble too large for the layout."""
    try:
        adv = pipeline_batch.batch_advice(inp.model, pl.layout, inp.gpu, inp.model.seq_len)
        if adv.too_small:
            # the planner already searched fewer stages and deeper interleaving and
            # kept this layout as the fastest that fits: only the batch is the
            # reviewer's to change
            larger = [p for p in adv.proposals if p.startswith("a larger batch")]
            warnings.append(f"{adv.message}; the planner found no faster layout with "
                            "fewer stages or deeper interleaving that fits"
                            + (f"; {larger[0]}" if larger else ""))
    except ValueError:
        warnings.append(f"pipeline bubble {pr.bubble_share:.0%} of the step: too few "
                        "micro-batches per replica for PP "
                        f"{pl.layout.pp}; a larger global batch would shrink it")


def _estimate_checks(inp, e, warnings: list, flags: dict) -> None:
    """The estimate's days and utilization: uncalibrated band, beyond plausible, far from
    the napkin."""
    if e.band is not None and not e.band.calibrated:
        _put(flags, Flag("days", "uncalibrated", e.band.reason))
        warnings.append(f"step model: {e.band.reason}; days and dollars carry that band")
    if e.days is not None:
        if e.days > 3650:
            _put(flags, Flag("days", "implausible", f"{e.days:,.0f} days ({e.days / 365:,.0f} "
                             "years): no one plans a run this long; add GPUs or cut tokens"))
        # against the peak the GEMMs run at (FP8: twice the BF16 peak that MFU is stated on)
        gemm_share = g_peak_ratio(inp.gpu, inp.scenario.precision)
        if e.effective_utilization is not None and e.effective_utilization * gemm_share > ut.RARE_ABOVE:
            flags["effective_utilization"] = Flag("effective_utilization", "implausible",
                                                  "above any published large run")
    if e.gpu_hours is not None and e.napkin_gpu_hours:
        warnings.append(napkin_note(e))
        ratio = e.gpu_hours / e.napkin_gpu_hours
        if not 1 / napkin.NAPKIN_FLAG_RATIO <= ratio <= napkin.NAPKIN_FLAG_RATIO:
            _put(flags, Flag("days", "implausible",
                             f"{ratio:.2g}x the napkin (6 N D at 40% of the dense BF16 peak): "
                             + napkin_note(e, lead=False)))



#: a headline keeps its most severe flag
SEVERITY = {"uncalibrated": 0, "implausible": 1, "infeasible": 2}


def _put(flags: dict, flag) -> None:
    old = flags.get(flag.key)
    if old is None or SEVERITY[flag.level] > SEVERITY[old.level]:
        flags[flag.key] = flag
