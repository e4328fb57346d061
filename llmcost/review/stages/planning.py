"""The size and plan stages: the GPUs that meet the target days, the layout the planner ranks
first on them, and the batch the review runs (one that fills the GPUs)."""

from __future__ import annotations

import functools
from collections import OrderedDict

import numpy as np

from ... import _validate as v
from ...planning import planner, sizing
from ...training import memory
from ...training.layout import LINK_KEYS
from ...training.step import predict_step
from .. import fill
from ..results import Inputs, Layout, PlanResult, SizeResult
from .interruptions import checkpoint_goodput_at, data_stall_at
from .notes import as_typed
from .space import (
    MEMORY_MARGIN,
    REVIEW_MEMORY,
    REVIEW_SPACE,
    SIMPLEST_WITHIN,
    given_layout,
    given_layout_text,
    options_for,
    review_space,
)


def size(inp: Inputs) -> SizeResult | None:
    """GPUs needed to meet the target days (only when the scenario sizes by days).

    Sizing sizes the forecast (the floor x the realized ratio of comparable published runs)
    to meet the target; the size the floor alone would need is kept beside (``floor_gpus``).
    Sizing divides by the useful share of wall time (goodput x (1 - data stalls)) at each
    candidate size (more GPUs fail more often), from the same reliability model as the
    reliability stage: the days sizing reports at its size are the review's days there,
    with the schedule headroom.

    With no batch given, sized at the batch law's batch; when that batch does not fill the
    size found (:func:`law_batch`, the rule a review with that many GPUs applies), sized once
    more at the batch that fills it: a batch that fills its GPUs runs faster per GPU, so the
    second size is the one that meets the target on fewer GPUs (or the faster one when none
    meets it)."""
    s = inp.scenario
    if s.sizing != "days":
        return None
    space = review_space(s, inp.model, inp.gpu.gpus_per_node)
    sz = _size_at(inp, space, inp.global_batch_tokens)
    law = None
    if s.batch != "custom":
        B = max(1, int(round(inp.global_batch_tokens / inp.model.seq_len)))
        law, run = law_batch(inp, space, _sized_gpus(sz, s), B)
        if not law.fills:
            sz = _size_at(inp, space, float(run * inp.model.seq_len))
    gpus = _sized_gpus(sz, s)
    return SizeResult(sizing=sz, gpus=int(gpus), meets_target=bool(sz.meets_target),
                      notes=tuple(sz.notes), batch_fill=law, floor_gpus=sz.floor_gpus)


def _size_at(inp: Inputs, space: planner.Space, batch_tokens: float):
    s = inp.scenario
    power = inp.power_kw_per_gpu
    target = sizing.Target(s.target_days, s.tokens, batch_tokens, headroom=s.headroom,
                           goodput=lambda n: checkpoint_goodput_at(inp, n),
                           data_stall=lambda tps, n: data_stall_at(inp, tps, n),
                           realized_ratio=inp.realized.value if inp.realized else 1.0)
    facility = sizing.Facility(max_power_mw=s.max_power_mw or None, power_kw_per_gpu=power,
                               pue=s.pue)
    # the precision of the review's options (sizing's, as the plan's is the scenario's)
    return sizing.size_cluster(inp.model, inp.hardware, target,
                               facility, _review_search(space, None), options_for(s))


def _sized_gpus(sz, s) -> int:
    """The size to plan: the one that meets the target, else the fastest, else the
    smallest that fits, else the scenario's own."""
    if sz.gpus:
        return int(sz.gpus)
    n = sz.nearest
    for x in ((n.fastest_gpus, n.smallest_fitting_gpus) if n is not None else ()):
        if x:
            return int(x)
    return int(s.gpus)



#: link key of each Layout field (the inverse of LINK_KEYS), for naming a refused key
LINK_KEY_OF = {name: key for key, name in LINK_KEYS.items()}


def given_layout_error(inp: Inputs, gpus: int, B: int) -> v.InputError | None:
    """Why the layout a scenario gives cannot run on ``gpus`` GPUs, as an InputError naming
    the given key at fault, in the step model's own words (the stage split, interleave,
    expert or divisibility rule it breaks); None when the scenario gives no layout or the step
    model takes it."""
    s, m = inp.scenario, inp.model
    given = given_layout(s)
    if not given:
        return None
    keys = given_layout_text(s)
    named = [LINK_KEY_OF[n] for n in given]
    lay = {"tp": 1, "pp": 1, "cp": 1, "micro_batch": 1, **given}
    ranks = lay["tp"] * lay["pp"] * lay["cp"]
    if gpus % ranks:
        key = next(k for k in ("tp", "pp", "cp", *named) if k in named)
        return v.InputError(key, f"the given layout ({keys}) cannot run on {gpus:,} GPUs: "
                                 f"TP x PP x CP = {ranks} does not divide {gpus:,}")
    # the nearest batch the layout's data-parallel groups split evenly
    per_step = gpus // ranks * lay["micro_batch"]
    batch = max(per_step, int(round(B / per_step)) * per_step)
    try:
        # flash attention and TP overlap as the options say, as the planner's search
        layout = Layout(gpus=gpus, global_batch=batch, precision=s.precision,
                        flash_attention=None, tp_comm_overlap=None, **lay)
        predict_step(m, inp.hardware, layout,
                     options=options_for(s), memory=REVIEW_MEMORY,
                     with_scaling=False)
    except ValueError as e:
        key = LINK_KEY_OF.get(getattr(e, "param", None), getattr(e, "param", None))
        return v.InputError(key if key in named else named[0],
                            f"the given layout ({keys}) cannot run on {gpus:,} GPUs: {e}")
    return None


def _splits_any(inp: Inputs, space: planner.Space, gpus: int) -> bool:
    """Whether any layout of ``space`` runs on ``gpus`` with some batch: a batch of gpus x the
    largest micro-batch splits over every data-parallel group, with micro-batches a multiple
    of every pipeline depth (gpus / dp = t p c)."""
    return len(_batch_units(inp.model, int(gpus), inp.gpu.scale_up_domain, space)[0]) > 0


def review_plan(inp: Inputs, space: planner.Space, gpus: int, B: int) -> planner.Plan:
    """The planner's ranking on ``gpus`` GPUs at a batch of ``B`` sequences, as the review
    ranks (fastest, then simplest within :data:`SIMPLEST_WITHIN`, memory margin)."""
    s = inp.scenario
    return _review_plan(inp.model, inp.hardware, options_for(s),
                        _review_search(space, s.precision), int(gpus), int(B))


@functools.lru_cache(maxsize=8)
def _review_plan(m, hardware, options, search, gpus, B):
    return planner.plan(m, hardware, gpus, B, search, options)


def _review_search(space: planner.Space, precision: str | None) -> planner.Search:
    """The review's search: fastest, then simplest within :data:`SIMPLEST_WITHIN`, leaving
    :data:`MEMORY_MARGIN` free, with the review's memory options."""
    return planner.Search(space, precision=precision, simplest_within=SIMPLEST_WITHIN,
                          memory_margin=MEMORY_MARGIN, memory=REVIEW_MEMORY)


def _bests_key(inp: Inputs, space: planner.Space) -> tuple:
    """What the review's first layouts depend on beside (gpus, batch): :func:`_bests`' key."""
    return (inp.model, inp.hardware, options_for(inp.scenario),
            _review_search(space, inp.scenario.precision))


#: the review's first layout at (inputs of the planner, gpus, batch), as fill.Best or None;
#: the oldest entries go first beyond _BEST_SIZE
_BEST: "OrderedDict[tuple, fill.Best | None]" = OrderedDict()
_BEST_SIZE = 8192


def _bests(key: tuple, pairs) -> list:
    """The review's first layout at each (gpus, batch) pair (:class:`fill.Best`, None where
    no layout splits the batch): :func:`planner.first_layouts` for the pairs not cached yet,
    in one vectorized prediction, each the first layout :func:`review_plan` ranks there."""
    pairs = [(int(g), int(b)) for g, b in pairs]
    todo = list(dict.fromkeys(p for p in pairs if (key, p) not in _BEST))
    if todo:
        m, hardware, options, search = key
        rows = planner.first_layouts(m, hardware, todo, search, options)
        for p, r in zip(todo, rows):
            _BEST[(key, p)] = None if r is None else fill.Best(
                tokens_per_s=float(r["tokens_per_s"]), mfu=float(r["mfu"]),
                layout=planner.describe_layout(r), fits=bool(r["fits"]))
        while len(_BEST) > _BEST_SIZE:
            _BEST.popitem(last=False)
    return [_BEST[(key, p)] for p in pairs]


#: the largest batch the search for a batch that fills the GPUs tries [tokens]: the largest a
#: scenario may give (Scenario.global_batch_tokens' bound)
FILL_CAP_TOKENS = 1e9


def batch_fill_at(inp: Inputs, space: planner.Space, gpus: int, B: int) -> fill.BatchFill:
    """Whether ``B`` sequences fill ``gpus`` GPUs in the review's layouts, the largest GPU count
    they fill and the smallest batch that fills ``gpus`` (:mod:`llmcost.review.fill`)."""
    m, g = inp.model, inp.gpu
    key = _bests_key(inp, space)

    def best(n, b):
        return _bests(key, [(n, b)])[0]

    # never below a batch that splits over every layout's replicas (gpus x micro-batch)
    cap = max(int(FILL_CAP_TOKENS // m.seq_len), gpus * max(space.micro_batch))
    return fill.batch_fill(best, int(gpus), int(B), m.seq_len, g.gpus_per_node, cap,
                           lambda b: run_batch(inp, space, gpus, b),
                           warm=lambda pairs: _bests(key, pairs))


def batch_sequences(inp: Inputs, notes: list) -> int:
    """The resolved global batch in whole sequences (at least one); a given batch that is not a
    whole number of them says so in ``notes``."""
    s, seq = inp.scenario, inp.model.seq_len
    B = max(1, int(round(inp.global_batch_tokens / seq)))
    if s.batch == "custom" and B * seq != inp.global_batch_tokens:
        notes.append(f"global_batch_tokens={as_typed(s.global_batch_tokens)} is "
                     f"{inp.global_batch_tokens / seq:,.4g} sequences of {seq:,} tokens: "
                     f"{B:,} whole sequence{'s' if B > 1 else ''} per step")
    return B


def law_batch(inp: Inputs, space: planner.Space, gpus: int, B: int) -> tuple:
    """The batch law's ``B`` sequences on ``gpus`` GPUs: its fill
    (:func:`batch_fill_at`, at :func:`run_batch`'s batch near it), and the batch the review
    runs: that one when it fills the GPUs, else the smallest that fills them (none up to the
    search's cap: the law's where some layout splits it, else gpus x the largest micro-batch,
    which every replica splits)."""
    near = run_batch(inp, space, gpus, B)
    law = batch_fill_at(inp, space, gpus, near if near is not None else B)
    if law.fills:
        return law, near
    return law, law.fill_batch or near or gpus * max(space.micro_batch)


def _law_batch_reason(inp: Inputs, lf: fill.BatchFill, B: int, gpus: int) -> str:
    """Why the review runs ``B`` sequences when the scenario gives no batch: the batch law's
    choice (its source) and the fill rule."""
    law = inp.batch.reason
    if lf.fills or lf.test.batch == B:
        return f"{law}; {lf.what()}" if lf.test.gain is not None else law
    resized = (f"; sized again at that batch: {gpus:,} GPUs" if gpus != lf.test.gpus else "")
    return (f"{B:,} sequences ({lf.tokens(B)} tokens), raised to fill the GPUs: "
            f"{lf.what()}; {lf.largest_text()}; {lf.filling_text()}{resized}. "
            f"The batch law: {law}")


def plan(inp: Inputs, sized: SizeResult | None) -> PlanResult:
    """The fastest layout that fits on the cluster, with the batch split evenly.

    The batch: the scenario's, kept (refused, naming ``global_batch_tokens``, when no layout
    splits it); or the batch law's when it fills the GPUs (:mod:`llmcost.review.fill`), else
    the smallest batch that fills them. A given layout no batch can run is refused, naming
    the key at fault."""
    s, m, g = inp.scenario, inp.model, inp.gpu
    gpus = sized.gpus if sized is not None else s.gpus
    notes = []
    space = review_space(s, m, g.gpus_per_node)
    B = batch_sequences(inp, notes)
    if given_layout(s) and not _splits_any(inp, space, gpus):
        err = given_layout_error(inp, gpus, B)
        if err is None:
            first = next(iter(given_layout(s)))
            err = v.InputError(LINK_KEY_OF[first], f"the given layout "
                               f"({given_layout_text(s)}) leaves the planner no layout on "
                               f"{gpus:,} GPUs")
        raise err
    given_batch = s.batch == "custom"
    law = None
    sized_batch = _sized_batch(sized, gpus)
    if sized_batch is not None:
        # the size's own batch: the days sizing found there are the review's
        B, law = sized_batch, sized.batch_fill
    else:
        near = near_batch(inp, space, gpus, B)
        if given_batch:
            if near is None:
                f = batch_fill_at(inp, space, gpus, B)
                with_layout = f" with the given layout ({given_layout_text(s)})" \
                    if given_layout(s) else ""
                raise v.InputError("global_batch_tokens", (
                    f"global_batch_tokens={as_typed(s.global_batch_tokens)}: {f.what()}"
                    f"{with_layout}; "
                    f"{f.largest_text()}; {f.filling_text()}"))
        else:
            law, near = law_batch(inp, space, gpus, B)
        if near != B and (given_batch or law.fills):
            why = (" so that it splits evenly" if given_batch or near_batch(inp, space, gpus, B) != B
                   else ", the batch within 5% whose best layout runs fastest")
            notes.append(f"global batch adjusted from {B} to {near} sequences{why} over {gpus} GPUs")
        B = near
    used = batch_fill_at(inp, space, gpus, B)
    if given_batch:
        reason = "given by the scenario"
        if not used.fills and used.test.at is not None:
            notes.append(f"global_batch_tokens={as_typed(s.global_batch_tokens)} kept: "
                         f"{used.advice()}{used.cost_text()}")
    else:
        reason = _law_batch_reason(inp, law, B, gpus) if law is not None else inp.batch.reason
        if not used.fills and used.test.at is not None:
            notes.append(used.advice())
    P = review_plan(inp, space, gpus, B)
    L = P.layouts
    fitting = planner.distinct(L[L["fits"]]) if len(L) else L
    if fitting.empty:
        given = given_layout(s)
        if given:
            keys = given_layout_text(s)
            r0 = planner.distinct(L.sort_values("memory_gb")).iloc[0] if len(L) else None
            need = f": needs {float(r0['memory_gb']):.1f} GB per GPU of {float(r0['capacity_gb']):.1f} GB" \
                if r0 is not None else ""
            notes.append(f"the given layout ({keys}) does not fit on {gpus:,} x {g.id}{need}; "
                         "shown as given, not replaced")
        else:
            notes.append(f"{m.id} does not fit on {gpus:,} x {g.id} in any layout tried: showing "
                         "the smallest-memory layout; add GPUs or pick a GPU with more memory")
        shown = planner.distinct(L.sort_values("memory_gb")).head(10)
        fits = False
    else:
        shown = fitting.head(10)
        fits = True
        first = shown.iloc[0]
        if planner.memory_tight(first["memory_gb"], first["capacity_gb"], MEMORY_MARGIN):
            notes.append(
                f"the layout uses {float(first['memory_gb']):.1f} of "
                f"{float(first['capacity_gb']):.1f} GB per GPU "
                f"({float(first['memory_gb']) / float(first['capacity_gb']):.0%}), and no layout "
                f"within {SIMPLEST_WITHIN:.0%} of its speed leaves {MEMORY_MARGIN:.0%} free: the "
                f"model counts {memory.FRAGMENTATION:.0%} allocator fragmentation, more (eager "
                "FSDP, no expandable segments) would not fit; check the run's peak memory early")
    layout = Layout.from_row(shown.iloc[0], global_batch=int(B), precision=s.precision)
    return PlanResult(gpus=int(gpus), global_batch=int(B), layouts=shown.reset_index(drop=True),
                      layout=layout, fits=fits, evaluated=int(P.evaluated),
                      feasible=int(P.feasible), notes=tuple(notes), batch_fill=used,
                      batch_reason=reason, batch_source=(
                          "scenario" if given_batch else
                          "fill" if law is not None and not law.fills and law.test.batch != B
                          else "law"))


def _sized_batch(sized: SizeResult | None, gpus: int) -> int | None:
    """The batch sizing ran at ``gpus`` (the size that meets the target, or the fastest when
    none does); None when the review does not plan a size sizing evaluated."""
    if sized is None:
        return None
    sz = sized.sizing
    if sz.gpus and sz.global_batch:
        return int(sz.global_batch)
    if sz.nearest is not None and sz.nearest.fastest_gpus == gpus and \
            sz.nearest.fastest_global_batch:
        return int(sz.nearest.fastest_global_batch)
    return None


def run_batch(inp: Inputs, space: planner.Space, gpus: int, B: int) -> int | None:
    """The batch near ``B`` sequences the review runs when the scenario gives none:
    :func:`near_batch`, unless the batch within 5% that the most layouts split runs faster on
    ``gpus`` (sizing, which rounds the batch to each layout's own multiple within 5%, finds
    it too): on 16,128 GPUs (126 nodes) 4,096 sequences split only with 63 pipeline stages,
    4,032 over 63 replicas, 38% faster for Llama 3.1 405B on H100."""
    near = near_batch(inp, space, gpus, B)
    if near is None:
        return None
    alt = _most_split_batch(inp.model, int(gpus), int(B), inp.gpu.gpus_per_node, space)
    if alt is None or alt == near:
        return near
    a, b = _bests(_bests_key(inp, space), [(int(gpus), near), (int(gpus), alt)])
    if b is not None and b.fits and (a is None or not a.fits or b.tokens_per_s > a.tokens_per_s):
        return alt
    return near


def near_batch(inp: Inputs, space: planner.Space, gpus: int, B: int) -> int | None:
    """The batch the review runs for ``B`` sequences on ``gpus``: :func:`splittable_batch` with
    TP inside a node (a batch that only TP across nodes splits moves to one that replicas
    split), else with TP across the GPU's scale-up domain as the planner searches it."""
    near = splittable_batch(inp.model, gpus, B, inp.gpu.gpus_per_node, space)
    if near is None and inp.gpu.scale_up_domain > inp.gpu.gpus_per_node:
        near = splittable_batch(inp.model, gpus, B, inp.gpu.scale_up_domain, space)
    return near


def splittable_batch(m, gpus, B, node, space=REVIEW_SPACE):
    """B if some layout splits it over ``gpus``; else, within 5% (then 12.5%, 25%), the batch
    with the most valid layouts (the nearest on ties); None if there is none."""
    return _splittable_batch(m, int(gpus), int(B), int(node), space)


@functools.lru_cache(maxsize=1024)
def _splittable_batch(m, gpus, B, node, space):
    units, weights = _batch_units(m, gpus, node, space)
    if len(units) == 0:
        return None
    count = _split_counter(units, weights)
    if count([B])[0]:
        return B
    for band in (0.05, 0.125, 0.25):
        most = _most_split_in_band(count, B, band)
        if most is not None:
            return most
    return None


def _most_split_in_band(count, B: int, band: float) -> int | None:
    """The batch within ``band`` of ``B`` that the most layouts split (``count``), the nearest
    to B on ties, then the larger; None when no layout splits any."""
    lo, hi = max(1, int(B * (1 - band))), int(B * (1 + band)) + 1
    step = max(1, (hi - lo) // 400)     # a bounded search however large the batch
    # B itself always among them (a coarse step can skip it): on a tie it is the nearest
    b = np.union1d(np.arange(lo, hi, step), [B])
    n = count(b)
    if n.max() == 0:
        return None
    return int(b[np.lexsort((b, -np.abs(b - B), n))[-1]])


@functools.lru_cache(maxsize=1024)
def _most_split_batch(m, gpus, B, node, space):
    """The batch within 5% of ``B`` that the most layouts of ``space`` split over ``gpus``
    (``B`` itself when it is that batch), or None."""
    units, weights = _batch_units(m, gpus, node, space)
    if len(units) == 0:
        return None
    return _most_split_in_band(_split_counter(units, weights), B, 0.05)


def _split_counter(units: np.ndarray, weights: np.ndarray):
    """``count(b)``: how many layouts split each batch of ``b`` (an array) [-], from the
    units they need a multiple of and how many layouts need each (:func:`_batch_units`)."""
    return lambda b: ((np.asarray(b)[:, None] % units[None, :]) == 0).astype(np.int64) @ weights


@functools.lru_cache(maxsize=256)
def _batch_units(m, gpus, node, space):
    """The batches every layout of ``space`` on ``gpus`` needs a multiple of, and how many
    layouts need each: a layout splits a batch B when b dp divides it and, interleaved, its
    micro-batches are a multiple of p (planner.layout_valid), i.e. when B is a multiple of
    b dp (p when v > 1). Every layout splits gpus x the largest micro-batch (m = t p c b'/b),
    so enumerating at that batch lists them all once."""
    L = planner.enumerate_layouts(m, gpus, gpus * max(space.micro_batch), node, space)
    u = L["micro_batch"] * L["dp"] * np.where(L["interleave"] > 1, L["pp"], 1)
    units, weights = np.unique(np.asarray(u, dtype=np.int64), return_counts=True)
    return units, weights.astype(np.int64)
