"""What published teams realized over the cluster's best case: the forecast's ratio.

The review's *floor* is the step model with goodput: the days and GPU-hours the cluster
delivers when the run goes as well as the physics allows. Published whole pre-training runs
took longer: restarts and stragglers beyond the failure model, a layout or a kernel short of
the best, evaluation and data pipelines, early instabilities. Their *realized ratio*

.. math:: r_i = \\frac{H_{published,i}}{H_{floor,i}}

is measured, run by run, from ``data/realized_runs.csv`` (the published GPU-hours of
``data/whole_runs.csv`` over the floor the review computes for each run as published,
written by ``make validate WRITE=1``). A review's *forecast* is its floor times the median
ratio of comparable runs, with a band from their spread: nothing is fitted to a single
constant, and the comparison group and its size are always said.

Groups are fixed (:data:`SIZE_CLASSES`, the stack, dense or MoE); a group with fewer than
:data:`MIN_GROUP_RUNS` runs falls back by dropping the size, then the stack, then dense/MoE
(:func:`realized_ratio`). Runs whose hours cover more than one pre-training run (several
stages, distillation teachers, ablations) are listed in the data but never used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import _validate as v

#: upper bounds of the parameter classes [parameters] and their labels (total parameters:
#: a MoE is grouped by what it holds, dense and MoE are separate groups anyway)
SIZE_CLASSES = ((20e9, "<20B"), (100e9, "20-100B"), (math.inf, ">100B"))

#: fewer runs than this and a group falls back to a wider one
MIN_GROUP_RUNS = 3

#: below this many runs the band is the group's min and max; from it on, its 10th and 90th
#: percentiles (fewer runs do not place a percentile)
PERCENTILE_BAND_RUNS = 8

#: the band's percentiles [%] once a group has PERCENTILE_BAND_RUNS runs
BAND_PERCENTILES = (10.0, 90.0)


def size_class(params) -> str:
    """The parameter class of a model (:data:`SIZE_CLASSES`).

    Parameters
    ----------
    params : float
        Total parameters [-], > 0.

    Returns
    -------
    str
        ``"<20B"``, ``"20-100B"`` or ``">100B"``.
    """
    n = float(v.positive("params", params))
    return next(label for bound, label in SIZE_CLASSES if n < bound)


def kind_of(moe: bool) -> str:
    """``"MoE"`` or ``"dense"``."""
    return "MoE" if moe else "dense"


@dataclass(frozen=True)
class RealizedRatio:
    """The realized ratio of a comparison group of published runs.

    ``value`` is the group's median of published / floor GPU-hours [-]; ``band`` its
    (low, high) spread [-] (10th-90th percentile from :data:`PERCENTILE_BAND_RUNS` runs on,
    else min-max); ``group`` the group as (stack or None, "dense"/"MoE" or None, size class or
    None): None where the fall-back pooled over that key; ``runs`` how many runs;
    ``run_ids`` and ``sources`` which ones; ``fallback`` why the group is wider than the
    scenario's own ('' when it is the scenario's own)."""

    value: float
    band: tuple
    group: tuple
    runs: int
    run_ids: tuple
    sources: tuple
    fallback: str = ""

    @property
    def group_label(self) -> str:
        """The group in words, e.g. "megatron, dense, <20B" or "any stack, MoE"."""
        stack, kind, size = self.group
        parts = [stack or "any stack"]
        if kind:
            parts.append(kind)
        else:
            parts.append("dense and MoE")
        if size:
            parts.append(size)
        return ", ".join(parts)

    @property
    def label(self) -> str:
        """The group and its run count, as the page labels the band."""
        return f"{self.group_label} ({self.runs} published run{'s' if self.runs != 1 else ''})"

    def to_json(self) -> dict:
        return {"value": self.value, "band": list(self.band), "group": self.group_label,
                "runs": self.runs, "sources": list(self.sources), "fallback": self.fallback}


#: the ratio the review assumes when no run at all is comparable (an empty table): none
NO_RUNS = RealizedRatio(value=1.0, band=(1.0, 1.0), group=(None, None, None), runs=0,
                        run_ids=(), sources=(), fallback="no published run to compare with")


def fitted_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of a realized-runs table that may be used: ``fitted`` true and a finite
    positive ratio."""
    if runs is None or runs.empty:
        return pd.DataFrame(columns=["id", "stack", "moe", "params", "ratio", "source"])
    use = (runs["fitted"].map(_truthy) if "fitted" in runs
           else pd.Series(True, index=runs.index))
    r = pd.to_numeric(runs["ratio"], errors="coerce")
    return runs[use & np.isfinite(r) & (r > 0)]


def _truthy(x) -> bool:
    """A flag cell as read (a bool, or the text of a user's table)."""
    return x is True or str(x).strip().lower() in ("true", "1", "1.0", "yes")


def group_statistics(ratios) -> tuple[float, tuple]:
    """Median and band of a group's ratios.

    .. math:: \\hat r = \\mathrm{median}(r_i), \\quad
              [r_{lo}, r_{hi}] = [P_{10}(r_i), P_{90}(r_i)] \\;(n \\geq 8),
              \\;[\\min r_i, \\max r_i] \\;(n < 8)

    Parameters
    ----------
    ratios : array of float
        The group's published / floor GPU-hours [-], at least one.

    Returns
    -------
    value : float
    band : (float, float)
    """
    r = np.asarray(ratios, dtype=float)
    if r.size == 0:
        raise v.InputError("ratios", "a group needs at least one run")
    value = float(np.median(r))
    if r.size >= PERCENTILE_BAND_RUNS:
        lo, hi = np.percentile(r, BAND_PERCENTILES)
    else:
        lo, hi = r.min(), r.max()
    return value, (float(lo), float(hi))


def realized_ratio(runs: pd.DataFrame, *, stack: str | None, moe: bool, params: float,
                   exclude=()) -> RealizedRatio:
    """The realized ratio of the published runs comparable to a scenario.

    The group is (stack, dense/MoE, :func:`size_class`); with no stack named (``stack``
    None) every stack is pooled from the start. A group of fewer than
    :data:`MIN_GROUP_RUNS` runs falls back by dropping the size, then the stack, then
    dense/MoE; ``fallback`` says so.

    Parameters
    ----------
    runs : DataFrame
        ``data/realized_runs.csv`` (the catalog's ``realized_runs`` table): id, stack, moe,
        params, ratio, fitted, source.
    stack : str or None
        The training stack the reviewer named; None: not named.
    moe : bool
        Whether the model is a mixture of experts.
    params : float
        Total parameters [-].
    exclude : iterable of str
        Run ids to leave out (leave-one-run-out validation).

    Returns
    -------
    RealizedRatio
        :data:`NO_RUNS` (ratio 1, no band) when no run is left at all.

    References
    ----------
    .. [1] The published runs of ``data/whole_runs.csv``, each with its source.
    """
    use = fitted_runs(runs)
    if len(exclude):
        use = use[~use["id"].isin(list(exclude))]
    if use.empty:
        return NO_RUNS
    kind, size = kind_of(moe), size_class(params)
    sizes = use["params"].astype(float).map(size_class)
    kinds = use["moe"].map(_truthy).map(kind_of)
    stacks = use["stack"].astype(str)
    own = (stack, kind, size)
    tries = [own, (stack, kind, None), (None, kind, None), (None, None, None)]
    if stack is None:
        tries = [(None, kind, size)] + tries[2:]
    for group in dict.fromkeys(tries):
        sel = np.ones(len(use), bool)
        for key, col in zip(group, (stacks, kinds, sizes)):
            if key is not None:
                sel &= (col == key).to_numpy()
        if sel.sum() >= MIN_GROUP_RUNS or group == (None, None, None):
            picked = use[sel]
            break
    if picked.empty:
        return NO_RUNS
    value, band = group_statistics(picked["ratio"].astype(float))
    fallback = ""
    if group != tries[0]:
        first = RealizedRatio(0.0, (0.0, 0.0), tries[0], 0, (), ()).group_label
        fallback = f"fewer than {MIN_GROUP_RUNS} published runs in {first}"
    sources = tuple(f"{i}: {s}" for i, s in zip(picked["id"], picked["source"]))
    return RealizedRatio(value=value, band=band, group=group, runs=int(len(picked)),
                         run_ids=tuple(picked["id"]), sources=sources, fallback=fallback)
