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
from statistics import NormalDist
from typing import Collection

import numpy as np
import pandas as pd

from .. import _validate as v

#: upper bounds of the parameter classes [parameters] and their labels (total parameters:
#: a MoE is grouped by what it holds, dense and MoE are separate groups anyway)
SIZE_CLASSES = ((20e9, "<20B"), (100e9, "20-100B"), (math.inf, ">100B"))

#: fewer runs than this and a group falls back to a wider one
MIN_GROUP_RUNS = 3

#: the band's percentiles [%]: the 10th to 90th percentile of a new run's realized ratio
BAND_PERCENTILES = (10.0, 90.0)


def size_class(params: float) -> str:
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

    ``value`` is the group's median of published / floor GPU-hours [-]; ``band`` the
    (low, high) range [-] a new run's ratio falls in with the probability of
    :data:`BAND_PERCENTILES` (:func:`prediction_band`, from ``log_sd``, the pooled spread
    of every run about its own group's median, :func:`pooled_log_sd`); ``group`` the group
    as (stack or None, "dense"/"MoE" or None, size class or None): None where the
    fall-back pooled over that key; ``runs`` how many runs;
    ``run_ids`` and ``sources`` which ones; ``fallback`` why the group is wider than the
    scenario's own ('' when it is the scenario's own)."""

    value: float
    band: tuple
    group: tuple
    runs: int
    run_ids: tuple
    sources: tuple
    fallback: str = ""
    log_sd: float = 0.0

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
                "runs": self.runs, "sources": list(self.sources), "fallback": self.fallback,
                "log_sd": self.log_sd}


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


def _truthy(x: object) -> bool:
    """A flag cell as read (a bool, or the text of a user's table)."""
    return x is True or str(x).strip().lower() in ("true", "1", "1.0", "yes")


def prediction_band(value: float, log_sd: float, runs: int) -> tuple[float, float]:
    """The range a new run's realized ratio falls in, with the probability of
    :data:`BAND_PERCENTILES`.

    Log-normal about the group's median, with the spread pooled over every group and the
    group's own size for the uncertainty of its median:

    .. math:: [r_{lo}, r_{hi}] = \\hat r \\, \\exp\\left(\\mp z \\, \\sigma
              \\sqrt{1 + 1/n}\\right), \\quad z = \\Phi^{-1}(P_{90} / 100)

    A group's own percentiles would need many more runs than a group has (the min and max of
    n runs hold a new one with probability (n - 1) / (n + 1): 50% for 3 runs), so the
    spread is shared and the band is as wide for a group of 3 as its data warrant.

    Parameters
    ----------
    value : float
        The group's median ratio [-], > 0.
    log_sd : float
        Pooled standard deviation of log ratios about their groups' medians [-], >= 0
        (:func:`pooled_log_sd`).
    runs : int
        Runs in the group [-], >= 1.

    Returns
    -------
    (float, float)
        Low and high ratio [-].

    References
    ----------
    .. [1] Hahn, G. J. and Meeker, W. Q., Statistical Intervals, Wiley 1991, §4.6
       (prediction interval for one future observation of a normal sample).
    """
    value = float(v.positive("value", value))
    log_sd = float(v.nonnegative("log_sd", log_sd))
    n = int(v.integer("runs", runs, minimum=1))
    z = NormalDist().inv_cdf(BAND_PERCENTILES[1] / 100.0)
    half = z * log_sd * math.sqrt(1.0 + 1.0 / n)
    return value * math.exp(-half), value * math.exp(half)


def _keys(use: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The group keys of a table's runs, as arrays: stack, dense/MoE, size class."""
    sizes = use["params"].astype(float).map(size_class).to_numpy()
    kinds = use["moe"].map(_truthy).map(kind_of).to_numpy()
    return use["stack"].astype(str).to_numpy(), kinds, sizes


def _tries(stack: str | None, kind: str | None, size: str | None) -> list:
    """The groups tried in order, the scenario's own first."""
    tries = [(stack, kind, size), (stack, kind, None), (None, kind, None), (None, None, None)]
    if stack is None:
        tries = [(None, kind, size)] + tries[2:]
    return list(dict.fromkeys(tries))


def _pick(keys: tuple[np.ndarray, ...], available: np.ndarray, stack: str | None, kind: str | None,
          size: str | None) -> tuple[tuple, np.ndarray]:
    """The first group of :func:`_tries` with MIN_GROUP_RUNS runs among ``available`` (a
    boolean mask), else everything available: (group, mask)."""
    for group in _tries(stack, kind, size):
        sel = available.copy()
        for key, col in zip(group, keys):
            if key is not None:
                sel &= col == key
        if sel.sum() >= MIN_GROUP_RUNS or group == (None, None, None):
            return group, sel
    raise AssertionError("unreachable: the last group pools everything")


def pooled_log_sd(runs: pd.DataFrame, *, stack_named: bool, exclude: Collection[str] = ()) -> float:
    """The spread of published runs about the median of their comparison group.

    Each used run i is compared with the median of the group :func:`realized_ratio` picks for
    it from the *other* runs (its stack if ``stack_named``, else every stack):

    .. math:: \\sigma = \\sqrt{\\frac{1}{m} \\sum_i \\left(\\ln r_i -
              \\ln \\mathrm{median}_{j \\in G(i), j \\neq i} r_j\\right)^2}

    so the spread is what a forecast from comparable runs misses by, measured out of sample,
    and pooled because no single group has enough runs to measure its own.

    Parameters
    ----------
    runs : DataFrame
        A realized-runs table (:func:`realized_ratio`).
    stack_named : bool
        Whether groups are formed with the runs' stacks (a reviewer named one) or pool them.
    exclude : iterable of str
        Run ids to leave out entirely.

    Returns
    -------
    float
        sigma [-]; 0 when fewer than two runs can be compared.
    """
    use = fitted_runs(runs)
    if len(exclude):
        use = use[~use["id"].isin(list(exclude))]
    if len(use) < 2:
        return 0.0
    keys = _keys(use)
    r = use["ratio"].astype(float).to_numpy()
    res = []
    for i in range(len(use)):
        others = np.ones(len(use), bool)
        others[i] = False
        _, sel = _pick(keys, others, keys[0][i] if stack_named else None, keys[1][i],
                       keys[2][i])
        # the median of the ratios, as realized_ratio takes it (of an even count: the mean
        # of the middle two, not their geometric mean)
        res.append(math.log(r[i] / np.median(r[sel])))
    return float(np.sqrt(np.mean(np.square(res))))


def realized_ratio(runs: pd.DataFrame, *, stack: str | None, moe: bool, params: float,
                   exclude: Collection[str] = ()) -> RealizedRatio:
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
    own = (stack, kind_of(moe), size_class(params))
    group, sel = _pick(_keys(use), np.ones(len(use), bool), *own)
    picked = use[sel]
    ratios = picked["ratio"].astype(float).to_numpy()
    value = float(np.median(ratios))
    log_sd = pooled_log_sd(runs, stack_named=stack is not None, exclude=exclude)
    band = prediction_band(value, log_sd, len(picked))
    fallback = ""
    if group != _tries(*own)[0]:
        first = RealizedRatio(0.0, (0.0, 0.0), _tries(*own)[0], 0, (), ()).group_label
        fallback = f"fewer than {MIN_GROUP_RUNS} published runs in {first}"
    sources = tuple(f"{i}: {s}" for i, s in zip(picked["id"], picked["source"]))
    return RealizedRatio(value=value, band=band, group=group, runs=int(len(picked)),
                         run_ids=tuple(picked["id"]), sources=sources, fallback=fallback,
                         log_sd=log_sd)
