"""Money of serving: $ per million tokens from a GPU-hour price and a throughput."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

SECONDS_PER_HOUR = 3600.0


def usd_per_million_tokens(usd_per_gpu_hour: ArrayLike, tokens_per_s_per_gpu: ArrayLike) -> float | np.ndarray:
    r"""Dollars per million tokens of a GPU-hour price at a throughput per GPU.

    .. math:: c = \frac{p \cdot 10^6}{3600\, X}

    Parameters
    ----------
    usd_per_gpu_hour : float or array
        p [USD per GPU-hour] (per used hour: reservations and purchases amortized).
    tokens_per_s_per_gpu : float or array
        X [tokens/s per GPU].

    Returns
    -------
    usd_per_million_tokens : float or array
        c [USD per 1e6 tokens].

    References
    ----------
    .. [1] SemiAnalysis InferenceMAX/InferenceX methodology (2025): cost per million tokens =
       GPU TCO per hour / tokens per GPU-hour.
    """
    p = v.nonnegative("usd_per_gpu_hour", usd_per_gpu_hour)
    x = v.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    return v.result(p * 1e6 / (SECONDS_PER_HOUR * x))


def prefill_time_share(prefill_s: ArrayLike, latency_s: ArrayLike, concurrency: ArrayLike) -> float | np.ndarray:
    r"""Share of an instance's time spent on prefill (prices input against output tokens).

    .. math:: \sigma = \frac{C\, t_p}{T}

    Each request lifetime T of the closed loop holds C prefills of t_p
    (:func:`llmcost.serving.latency.closed_loop`).

    Parameters
    ----------
    prefill_s : float or array
        t_p [s].
    latency_s : float or array
        T [s].
    concurrency : float or array
        C [-].

    Returns
    -------
    share : float or array
        sigma [-], in [0, 1].

    References
    ----------
    .. [1] Sarathi-Serve (Agrawal et al., OSDI 2024) §3 (prefill and decode share the GPU
       time of a hybrid batch).
    """
    tp_ = v.nonnegative("prefill_s", prefill_s)
    t = v.positive("latency_s", latency_s)
    return v.result(np.clip(v.positive("concurrency", concurrency) * tp_ / t, 0.0, 1.0))


def gpus_for_rate(requests_per_s: ArrayLike, output_tokens: ArrayLike, tokens_per_s_per_gpu: ArrayLike,
                  gpus_per_instance: ArrayLike = 1) -> float | np.ndarray:
    r"""GPUs (whole instances) that serve a request rate at a throughput per GPU.

    .. math:: G = g \left\lceil \frac{\lambda\, o}{X g} \right\rceil

    Parameters
    ----------
    requests_per_s : float or array
        lambda [requests/s].
    output_tokens : float or array
        o, per request [tokens].
    tokens_per_s_per_gpu : float or array
        X [tokens/s per GPU].
    gpus_per_instance : int or array
        g [-].

    Returns
    -------
    gpus : float or array
        G [-].

    References
    ----------
    .. [1] Little 1961 (L = lambda W) applied to output tokens.
    """
    lam = v.nonnegative("requests_per_s", requests_per_s)
    o = v.positive("output_tokens", output_tokens)
    x = v.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    g = v.integer("gpus_per_instance", gpus_per_instance)
    return v.result(g * np.ceil(lam * o / (x * g)))
