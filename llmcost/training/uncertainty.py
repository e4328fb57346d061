"""How far to trust a step-time prediction: the error the model showed on published runs of
the same GPU generation and precision, and a wide band outside that envelope.

A prediction is a point; a review needs a range. The band is the largest error `make
validate` measured on the calibration rows of the prediction's (generation, precision) group,
held out where the fit allowed it (leave one source-and-model group out); a group with no
validated rows gets the band of the least-calibrated group (the envelope, 25%, the largest
error the project accepts on held-out runs, or any dense group's larger error) and a
predicted MFU above every published large run at least the envelope; both are flagged.

References
----------
1. ``data/step_model_errors.csv``: errors of the step model per (generation, precision),
   written from ``make validate`` (benchmarks/validate.py), with the commit and date.
2. Narayanan et al. 2021 Table 1; Llama Team 2024 Table 4; NVIDIA Megatron-Bridge
   performance summary (the calibration rows behind those errors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import _validate as v

#: band outside the calibrated envelope [-]: the largest error the project accepts on
#: held-out published runs.
ENVELOPE_BAND = 0.25
#: highest MFU of a published large run [-] (PaLM 540B HFU 57.8%, MFU 46.2%; Llama 3 405B
#: 38-43%): a prediction above it is outside anything measured.
PUBLISHED_MFU_CEILING = 0.578


@dataclass(frozen=True)
class Band:
    """Relative band on throughput: tokens/s lies in [1 - low, 1 + high] x the prediction."""

    low: float
    high: float
    calibrated: bool
    reason: str

    def days_range(self, days: float) -> tuple[float, float]:
        """Days at the fast and the slow end of the band [days]."""
        return days / (1 + self.high), days / (1 - self.low)


#: the errors row of mixture-of-experts predictions (any generation and precision)
MOE_GROUP = ("moe", "all")


def uncalibrated_band(errors: pd.DataFrame) -> float:
    """Band of a prediction no published run of its group validates: the least-calibrated
    group's. A GPU without calibration is no better known than the worst-known GPU that has
    one; the MoE row is left out (its band is a percentile of another kind of model).

    Parameters
    ----------
    errors : pandas.DataFrame
        ``data/step_model_errors.csv`` (generation, max_abs_error [-]).

    Returns
    -------
    band : float
        The largest held-out error of any dense group, never below :data:`ENVELOPE_BAND`
        [-].

    References
    ----------
    .. [1] ``make validate FIT=1 WRITE=1`` (benchmarks/validate.py) on the calibration set.
    """
    dense = errors[errors["generation"] != MOE_GROUP[0]]["max_abs_error"].astype(float)
    return float(min(max([ENVELOPE_BAND, *dense]), 0.9))


def _widened(b: Band, stack_error: float) -> Band:
    if stack_error <= b.low:
        return b
    e = float(min(stack_error, 0.9))
    return Band(low=e, high=e, calibrated=b.calibrated,
                reason=f"{b.reason}; widened to +-{e:.0%}, the stack's largest error on "
                       "published throughput held out of its fit")


def throughput_band(generation: str, precision: str, mfu: float, errors: pd.DataFrame,
                    moe: bool = False, note: str = "", stack_note: str = "",
                    stack_error: float = 0.0) -> Band:
    r"""Uncertainty band of a predicted throughput.

    .. math:: \dot D \in [\dot D (1 - e),\; \dot D (1 + e)],\qquad
              e = \max_{\text{rows of the group}} |\hat y / y - 1| \text{ or } 0.25

    Parameters
    ----------
    generation : str
        GPU generation (``GPUSpec.generation``), e.g. "ampere", "hopper".
    precision : str
        "bf16", "fp8" or "mxfp8".
    mfu : float
        Predicted MFU [-] (above :data:`PUBLISHED_MFU_CEILING`: outside the envelope).
    errors : pandas.DataFrame
        ``data/step_model_errors.csv``: generation, precision, rows, max_abs_error [-], and
        optionally band_abs_error (what the band uses when given, else the max).
    moe : bool
        A mixture-of-experts model: its band is the MoE row's (:data:`MOE_GROUP`), whatever
        the generation; the MoE rows are fewer and noisier (the published releases differ
        by up to 45% on one layout), so that band is their 90th-percentile held-out error.
    note : str
        How the GPU's constants were set when not on validated runs
        (:func:`llmcost.training.step.calibration_note`); added to an uncalibrated reason.
    stack_note : str
        Why the training stack's constants are not its own
        (:func:`llmcost.training.stacks.calibration_note`); "" for a calibrated stack.
        An uncalibrated stack takes the least-calibrated group's band, whatever the GPU.
    stack_error : float
        The training stack's largest error on a source held out of its fit [-]
        (:attr:`llmcost.training.stacks.Stack.held_out_error`): the band is never narrower.

    Returns
    -------
    Band

    References
    ----------
    .. [1] ``make validate`` (benchmarks/validate.py) on the calibration set.
    """
    return _widened(_group_band(generation, precision, mfu, errors, moe, note, stack_note),
                    stack_error)


def _group_band(generation: str, precision: str, mfu: float, errors: pd.DataFrame, moe: bool, note: str,
                stack_note: str) -> Band:
    u = float(v.positive("mfu", mfu))
    if moe:
        generation, precision = MOE_GROUP
    hit = errors[(errors["generation"] == generation) & (errors["precision"] == precision)]
    if u > PUBLISHED_MFU_CEILING:
        # never narrower than what the group itself showed, nor than an unvalidated group's
        floor = ENVELOPE_BAND if len(hit) and int(hit["rows"].iloc[0]) else \
            uncalibrated_band(errors)
        e = max([floor] + [float(x) for x in hit["max_abs_error"]])
        return Band(low=e, high=e, calibrated=False,
                    reason=f"predicted MFU {u:.1%} is above every published large run "
                           f"({PUBLISHED_MFU_CEILING:.1%}): outside the calibrated envelope, "
                           f"+-{e:.0%}")
    if stack_note:
        e = max([uncalibrated_band(errors)] + [float(x) for x in hit["max_abs_error"]])
        return Band(low=e, high=e, calibrated=False,
                    reason=f"{stack_note}: +-{e:.0%}, the least-calibrated group's band")
    if hit.empty or not int(hit["rows"].iloc[0]):
        e = uncalibrated_band(errors)
        return Band(low=e, high=e, calibrated=False,
                    reason=f"no published {precision.upper()} run on {generation} GPUs "
                           f"validates the step model"
                           + (f" ({note})" if note else "")
                           + f": +-{e:.0%}, the least-calibrated group's band")
    r = hit.iloc[0]
    band = r.get("band_abs_error", np.nan)
    if moe and not pd.isna(band):
        e = float(np.clip(band, 0.0, 0.9))
        return Band(low=e, high=e, calibrated=True,
                    reason=f"90% of {int(r['rows'])} published MoE runs within +-{e:.0%} "
                           f"({r['method']}; mean {float(r['mean_abs_error']):.0%}, "
                           f"max {float(r['max_abs_error']):.0%})")
    e = float(np.clip(r["max_abs_error"], 0.0, 0.9))
    return Band(low=e, high=e, calibrated=True,
                reason=f"largest error on {int(r['rows'])} published {precision.upper()} "
                       f"run(s) on {generation} GPUs ({r['method']}): +-{e:.0%}")
