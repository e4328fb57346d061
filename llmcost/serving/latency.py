"""Serving time: prefill, one decode step, and the closed loop that turns them into TTFT,
TPOT and output tokens per second.

Aggregated serving (prefill and decode on the same GPUs) with continuous batching at a fixed
concurrency C, closed loop: a finished request is replaced at once, so each slot runs one
prefill per request lifetime. Times in seconds, FLOP/s in TFLOP/s, bandwidths in TB/s
(1e12 bytes/s).

References
----------
1. S. Williams, A. Waterman, D. Patterson, "Roofline: An Insightful Visual Performance
   Model for Multicore Architectures", CACM 52(4), 2009 (time = max(work / peak, bytes /
   bandwidth)).
2. R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023, §2-3
   (decode reads all weights and the KV cache per step; prefill is compute-bound; 2N FLOPs
   per token plus attention).
3. G.-I. Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative
   Models", OSDI 2022 (iteration-level scheduling: prefills join the running batch).
4. A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
   Sarathi-Serve", OSDI 2024, §2-3 (prefills stall the decodes they share steps with).
5. L. Kleinrock, "Queueing Systems, Vol. 1", 1975, §5.6 (M/D/1 mean wait
   rho / (2 (1 - rho)) service times).
6. DeepSeek-AI, arXiv:2405.04434, Appendix C (MLA decode with absorbed up-projections
   attends over the d_c + d_h^R latent).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

TERA = 1e12


def attention_flops_per_token(layers: int, heads: int, qk_dim: int, v_dim: int, context_tokens: ArrayLike,
                              window_layers: int = 0, window_tokens: int = 0) -> float | np.ndarray:
    r"""Attention score and value FLOPs of one new token over its context (forward).

    .. math:: F_a = 2\, n_h\, (d_{qk} + d_v) \left[(L - L_w)\, c + L_w \min(w, c)\right]

    Parameters
    ----------
    layers : int
        L [-].
    heads : int
        n_h, query heads [-].
    qk_dim, v_dim : int
        d_qk and d_v per head [-] (MLA decode, absorbed: d_c + d_h^R and d_c).
    context_tokens : float or array
        c, tokens the new token attends to [-].
    window_layers, window_tokens : int
        L_w layers with a window of w tokens [-].

    Returns
    -------
    flops : float or array
        F_a [FLOP].

    References
    ----------
    .. [1] Pope et al. 2023 §2; Kaplan et al. 2020 (arXiv:2001.08361) Table 1 (2 n_ctx d_attn
       per layer).
    """
    c = v.nonnegative("context_tokens", context_tokens)
    n_l = v.integer("layers", layers)
    lw = v.integer("window_layers", window_layers, minimum=0)
    w = v.integer("window_tokens", window_tokens, minimum=0)
    per = 2.0 * heads * (qk_dim + v_dim)
    win = np.minimum(w, c) if w else c
    return v.result(per * ((n_l - lw) * c + lw * win))


def prefill_flops(matmul_params: ArrayLike, layers: int, heads: int, qk_dim: int, v_dim: int,
                  input_tokens: ArrayLike, window_layers: int = 0,
                  window_tokens: int = 0) -> float | np.ndarray:
    r"""Forward FLOPs to prefill a prompt of s tokens (causal attention, quadratic term).

    .. math:: F_p = 2\, P_{mm}\, s + n_h (d_{qk} + d_v)\, s^2 \,(L - L_w) + 2\, n_h (d_{qk}
        + d_v)\, L_w\, s \min(w, s)

    (the causal mean context of s/2 per token on dense layers).

    Parameters
    ----------
    matmul_params : float or array
        P_mm, matmul weights one token meets (active, with the output head) [-].
    layers, heads, qk_dim, v_dim, window_layers, window_tokens
        As :func:`attention_flops_per_token`.
    input_tokens : float or array
        s [-].

    Returns
    -------
    flops : float or array
        F_p [FLOP].

    References
    ----------
    .. [1] Pope et al. 2023 §2; Dao et al., FlashAttention-2 (arXiv:2307.08691) §4.1
       (causal attention forward 2 s^2 n_h d FLOPs per layer, half of full).
    """
    s = v.nonnegative("input_tokens", input_tokens)
    p = v.nonnegative("matmul_params", matmul_params)
    n_l = v.integer("layers", layers)
    lw = v.integer("window_layers", window_layers, minimum=0)
    w = v.integer("window_tokens", window_tokens, minimum=0)
    per = 2.0 * heads * (qk_dim + v_dim)
    win = np.minimum(w, s) if w else s / 2.0
    return v.result(2.0 * p * s + per * s * ((n_l - lw) * s / 2.0 + lw * win))


def expert_read_fraction(tokens: ArrayLike, experts: int, top_k: int) -> float | np.ndarray:
    r"""Expected share of a layer's routed experts that a step of n tokens activates.

    .. math:: \rho_e = 1 - (1 - k/E)^{n}

    (uniform routing, tokens independent): one token reads k of E experts; at large batch
    every expert is read once per step.

    Parameters
    ----------
    tokens : float or array
        n, tokens in the step on the instance [-].
    experts : int
        E [-] (0: dense, returns 1).
    top_k : int
        k [-].

    Returns
    -------
    fraction : float or array
        rho_e [-], in [k/E, 1].

    References
    ----------
    .. [1] Pope et al. 2023 §3.4 (MoE weight loading); the occupancy of E bins by n k
       uniform draws.
    """
    n = v.nonnegative("tokens", tokens)
    if not experts:
        return v.result(np.ones_like(n))
    return v.result(1.0 - (1.0 - top_k / experts) ** np.maximum(n, 1.0))


def roofline_time_s(flops: ArrayLike, bytes_moved: ArrayLike, peak_tflops: ArrayLike, hbm_tb_per_s: ArrayLike,
                    compute_efficiency: ArrayLike = 1.0,
                    memory_efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Roofline time of a kernel sequence: the slower of compute and memory traffic.

    .. math:: t = \max\left(\frac{F}{\eta_c P}, \frac{Q}{\eta_m B}\right)

    Parameters
    ----------
    flops : float or array
        F [FLOP].
    bytes_moved : float or array
        Q, HBM traffic [bytes].
    peak_tflops : float or array
        P [TFLOP/s].
    hbm_tb_per_s : float or array
        B [TB/s].
    compute_efficiency, memory_efficiency : float or array
        eta_c, eta_m, achieved shares [-].

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Williams, Waterman, Patterson 2009.
    """
    f = v.nonnegative("flops", flops)
    q = v.nonnegative("bytes_moved", bytes_moved)
    p = v.positive("peak_tflops", peak_tflops) * TERA * v.fraction("compute_efficiency",
                                                                 compute_efficiency)
    b = v.positive("hbm_tb_per_s", hbm_tb_per_s) * TERA * v.fraction("memory_efficiency",
                                                             memory_efficiency)
    return v.result(np.maximum(f / p, q / b))


def closed_loop(prefill_s: ArrayLike, decode_step_s: ArrayLike, concurrency: ArrayLike, output_tokens: ArrayLike
                ) -> tuple[float | np.ndarray, float | np.ndarray, float | np.ndarray]:
    r"""TTFT, TPOT and request latency of closed-loop aggregated serving at concurrency C.

    Over one request lifetime T every one of the C slots emits o tokens (o decode steps of
    t_d) and is refilled once (C prefills of t_p):

    .. math::
        T &= o\, t_d + C\, t_p, \qquad \rho = C t_p / T \\
        \mathrm{TTFT} &= t_p + \tfrac{1}{2} t_d + t_p \min\left(\frac{\rho}{2(1-\rho)},
            \frac{C-1}{2}\right) \\
        \mathrm{TPOT} &= \frac{T - \mathrm{TTFT}}{o - 1} \;(o > 1; \text{ else } t_d)

    A new prompt waits half a step, then for the prefills queued before it (M/D/1, at most
    half of the other slots); the decodes of a request are stalled by the other slots'
    prefills, which is why TPOT carries (C - 1) t_p / o.

    Parameters
    ----------
    prefill_s : float or array
        t_p, one prompt's prefill [s].
    decode_step_s : float or array
        t_d, one decode step of the C running sequences [s].
    concurrency : float or array
        C [-], >= 1.
    output_tokens : float or array
        o [-], >= 1.

    Returns
    -------
    ttft_s, tpot_s, latency_s : float or array
        [s] each; latency = T = TTFT + (o - 1) TPOT.

    References
    ----------
    .. [1] Orca (Yu et al. 2022); Sarathi-Serve (Agrawal et al. 2024) §3; Kleinrock 1975
       §5.6.
    """
    tp_ = v.nonnegative("prefill_s", prefill_s)
    td = v.positive("decode_step_s", decode_step_s)
    c = v.in_range("concurrency", concurrency, 1, None)
    o = v.in_range("output_tokens", output_tokens, 1, None)
    T = o * td + c * tp_
    rho = c * tp_ / T
    q = np.minimum(rho / (2.0 * (1.0 - rho) + 1e-300), (c - 1.0) / 2.0)
    ttft = tp_ + 0.5 * td + tp_ * q
    tpot = np.where(o > 1, (T - ttft) / np.maximum(o - 1.0, 1.0), td)
    latency = ttft + (o - 1.0) * tpot
    return v.result(ttft), v.result(tpot), v.result(latency)


def output_tokens_per_s_per_gpu(concurrency: ArrayLike, output_tokens: ArrayLike, latency_s: ArrayLike,
                                gpus: ArrayLike) -> float | np.ndarray:
    r"""Output tokens per second per GPU of a closed loop (Little's law).

    .. math:: X = \frac{C\, o}{T\, g}

    Parameters
    ----------
    concurrency : float or array
        C, requests in flight on the instance [-].
    output_tokens : float or array
        o [-].
    latency_s : float or array
        T, one request's latency [s].
    gpus : float or array
        g, GPUs of the instance [-].

    Returns
    -------
    tokens_per_s : float or array
        X [tokens/s per GPU].

    References
    ----------
    .. [1] J. D. C. Little, "A Proof for the Queuing Formula L = lambda W", Operations
       Research 9(3), 1961.
    """
    c = v.positive("concurrency", concurrency)
    o = v.positive("output_tokens", output_tokens)
    return v.result(c * o / (v.positive("latency_s", latency_s) * v.positive("gpus", gpus)))


def mean_ttft_floor_s(flops_per_prompt_token: ArrayLike, max_prompt_tokens: ArrayLike, first_wave: ArrayLike,
                      requests: ArrayLike, peak_flops_per_s: ArrayLike) -> float | np.ndarray:
    r"""A lower bound on the mean TTFT of a benchmark whose first C requests arrive at once,
    with prompt lengths drawn uniformly in [1, L] (a serving benchmark's random dataset at its
    default range ratio): the check a published mean TTFT must pass.

    The C prompts of the first wave hold work w_k = f s_k on an instance of at most P FLOP/s.
    Whatever the schedule, the k-th prefill to finish ends no sooner than the k shortest
    prompts' work over P (shortest job first minimizes the sum of completion times on one
    machine), and E[s_(k)] = k L / (C + 1) for the order statistics of uniform lengths:

    .. math::
        \sum_k \mathrm{TTFT}_k \ge \frac{f L}{P (C+1)} \sum_{k=1}^{C} k (C - k + 1)
            = \frac{f L}{P} \frac{C (C + 2)}{6},
        \qquad \overline{\mathrm{TTFT}} \ge \frac{f L\, C (C + 2)}{6 P\, n}

    over the n requests of the run (the later ones counted at 0, attention and the LM head
    left out: every omission lowers the bound). It holds in expectation over the draw of the
    lengths, so a caller compares with a margin.

    Parameters
    ----------
    flops_per_prompt_token : float or array
        f, prefill FLOPs per prompt token, e.g. 2 x the active matmul parameters [FLOP].
    max_prompt_tokens : float or array
        L, the dataset's nominal prompt length (the upper end of the draw) [tokens].
    first_wave : float or array
        C, requests that arrive at once: the client's max concurrency, or every prompt of a
        burst [-].
    requests : float or array
        n, requests the mean is taken over, >= C [-].
    peak_flops_per_s : float or array
        P, the instance's dense peak at the weights' format (every GPU) [FLOP/s].

    Returns
    -------
    ttft_s : float or array
        [s].

    References
    ----------
    .. [1] W. E. Smith, "Various optimizers for single-stage production", Naval Research
       Logistics Quarterly 3(1-2), 1956 (shortest processing time first).
    .. [2] H. A. David and H. N. Nagaraja, *Order Statistics*, 3rd ed., Wiley 2003, §2.5
       (E[U_(k)] = k / (n + 1)).
    """
    f = v.positive("flops_per_prompt_token", flops_per_prompt_token)
    L = v.positive("max_prompt_tokens", max_prompt_tokens)
    c = v.in_range("first_wave", first_wave, 1, None)
    n = v.in_range("requests", requests, 1, None)
    p = v.positive("peak_flops_per_s", peak_flops_per_s)
    return v.result(f * L * c * (c + 2.0) / (6.0 * p * np.maximum(n, c)))
