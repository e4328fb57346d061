"""The napkin a reviewer checks a training estimate against, and what separates the two.

The napkin is the rule every planning spreadsheet starts from: training compute 6 N D
(Kaplan et al. 2020 §2.1; Hoffmann et al. 2022) at 40% of the GPU's dense BF16 peak, with no
failures and no stalls. The review's answer differs from it by four factors, each a term the
review computed; :func:`napkin_factors` names them so a reviewer sees why.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

#: the napkin's utilization: 40% of the dense BF16 peak, the figure blog-post arithmetic and
#: the cluster guides use (Llama 3 405B reached 38-43%: arXiv:2407.21783 Table 4)
NAPKIN_MFU = 0.40

#: a review more than this factor away from the napkin (either way) is flagged on its headline
NAPKIN_FLAG_RATIO = 2.0


def napkin_gpu_hours(active_params: ArrayLike, tokens: ArrayLike, peak_bf16_flops: ArrayLike,
                     mfu: ArrayLike = NAPKIN_MFU) -> float | np.ndarray:
    r"""GPU-hours of a training run by the napkin rule.

    .. math:: H_{napkin} = \frac{6\, N_{active}\, D}{u\, F_{peak}} \,/\, 3600

    Parameters
    ----------
    active_params : float or array
        Parameters a token passes through, N (all of them for a dense model) [-].
    tokens : float or array
        Training tokens D [-].
    peak_bf16_flops : float or array
        The GPU's dense BF16 peak [FLOP/s], whatever precision the run uses.
    mfu : float or array, default 0.40
        Utilization u [-].

    Returns
    -------
    gpu_hours : float or array
        [GPU-h].

    References
    ----------
    .. [1] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361,
       §2.1 (C = 6 N D).
    """
    n = v.positive("active_params", active_params)
    d = v.positive("tokens", tokens)
    peak = v.positive("peak_bf16_flops", peak_bf16_flops)
    u = v.in_range("mfu", mfu, 0, 1, low_inclusive=False)
    return v.result(6.0 * n * d / (u * peak) / 3600.0)


def napkin_factors(model_flops_per_token: ArrayLike, active_params: ArrayLike, mfu: ArrayLike,
                   useful_share: ArrayLike, napkin_mfu: float = NAPKIN_MFU,
                   realized_ratio: ArrayLike = 1.0) -> dict[str, float | np.ndarray]:
    r"""The factors by which a review's GPU-hours exceed the napkin's.

    .. math::
        \frac{H}{H_{napkin}} = \underbrace{\frac{F_{tok}}{6 N}}_{\text{attention}}
            \cdot \underbrace{\frac{u_{napkin}}{MFU}}_{\text{layout}}
            \cdot \underbrace{\frac{1}{g\,(1 - s)}}_{\text{goodput and stalls}}
            \cdot \underbrace{\hat r}_{\text{realized}}

    with F_tok the model FLOPs per token (attention included), MFU the layout's model FLOPs
    utilization against the same dense BF16 peak, g the goodput and s the data-stall share
    (``useful_share`` = g (1 - s)) and :math:`\hat r` what comparable published runs realized
    over their floor (:mod:`llmcost.economics.realized`; 1: the floor itself).

    Parameters
    ----------
    model_flops_per_token : float or array
        [FLOP per token].
    active_params : float or array
        N [-].
    mfu : float or array
        The layout's predicted MFU [-].
    useful_share : float or array
        Goodput x (1 - data-stall share) [-].
    napkin_mfu : float, default 0.40
    realized_ratio : float or array, default 1.0
        :math:`\hat r` [-], > 0.

    Returns
    -------
    factors : dict of float or array
        ``attention_flops``, ``layout_mfu``, ``goodput_and_stalls``, ``realized_ratio`` [-];
        their product is the ratio of the review's GPU-hours to the napkin's.

    References
    ----------
    .. [1] A. Chowdhery et al., PaLM, arXiv:2204.02311, App. B (model FLOPs per token with
       attention, 6 N + 12 L H Q T).
    """
    f = v.positive("model_flops_per_token", model_flops_per_token)
    n = v.positive("active_params", active_params)
    u = v.positive("mfu", mfu)
    g = v.in_range("useful_share", useful_share, 0, 1, low_inclusive=False)
    return {"attention_flops": v.result(f / (6.0 * n)),
            "layout_mfu": v.result(np.asarray(napkin_mfu) / u),
            "goodput_and_stalls": v.result(1.0 / g),
            "realized_ratio": v.result(np.asarray(v.positive("realized_ratio", realized_ratio),
                                                  dtype=float))}
