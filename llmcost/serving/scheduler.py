"""Continuous batching as engines run it, simulated step by step: a token budget per step
shared by the running decodes and chunked prefills, a cap on running sequences, a KV cache
that admits a request only when its tokens fit, and the three load shapes of serving
benchmarks (a client's fixed concurrency, a request rate, a burst).

One engine step, as vLLM's scheduler builds it (and SGLang's and TensorRT-LLM's with chunked
prefill): every running request past its prefill decodes one token; the rest of the step's
token budget goes to prompt chunks in arrival order; waiting requests are admitted, first
come first served, while the running sequences stay under the cap and their KV fits. The step
takes the time the cost model gives for its prefill tokens and decode sequences.

Configurations (layouts, concurrencies, rates) are simulated together, each with its own
clock: arrays of (configurations x requests), one loop over engine steps.

References
----------
1. W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
   PagedAttention", SOSP 2023 (vLLM: admission by free KV blocks, FCFS).
2. A. Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
   Sarathi-Serve", OSDI 2024, §4 (stall-free batching: decodes first, then prompt chunks up
   to the token budget).
3. vLLM ``vllm/v1/core/sched/scheduler.py`` (running requests scheduled before waiting
   ones, ``max_num_batched_tokens`` and ``max_num_seqs``); ``benchmarks/benchmark_serving.py``
   (``--max-concurrency``: a semaphore of C requests in flight; ``--request-rate``: Poisson
   arrivals; ``inf``: every prompt at once).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

#: load shapes of a serving benchmark
LOAD_SHAPES = ("concurrency", "rate", "burst")
#: seed of the Poisson arrivals of a rate run (the benchmark's own draws are random; a fixed
#: seed makes the answer reproducible)
ARRIVAL_SEED = 0
#: engine steps one simulation may take before it stops [-]: far above any benchmark here
#: (500 prompts of 2,000 + 100 tokens at 12 running: about 4,300 steps)
MAX_STEPS = 200_000


class Simulated(NamedTuple):
    """Per-configuration means (arrays of the configurations' shape)."""

    ttft_s: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    tpot_s: np.ndarray
    latency_s: np.ndarray
    queue_s: np.ndarray
    #: mean number of sequences decoding in a step, weighted by step time [-]
    running_batch: np.ndarray
    #: requests completed over the run's duration (first arrival to last completion) [1/s]
    achieved_requests_per_s: np.ndarray
    #: output tokens over the run's duration [tokens/s] (per instance)
    output_tokens_per_s: np.ndarray
    duration_s: np.ndarray
    steps: np.ndarray


def poisson_arrivals_s(rate_per_s: ArrayLike, n_requests: int, seed: int = ARRIVAL_SEED) -> np.ndarray:
    r"""Arrival times of a Poisson process, the same draws scaled for every rate.

    .. math:: a_i = \frac{1}{\lambda} \sum_{j \le i} E_j, \qquad E_j \sim \mathrm{Exp}(1),
        \; a_0 = 0

    Parameters
    ----------
    rate_per_s : float or array
        lambda, mean arrivals per second [1/s], shape (K,) or scalar.
    n_requests : int
        N [-].
    seed : int
        Seed of the draws [-].

    Returns
    -------
    arrivals_s : ndarray
        (K, N) arrival times [s], the first at 0.

    References
    ----------
    .. [1] vLLM ``benchmarks/benchmark_serving.py`` (``--request-rate``: exponential gaps,
       ``--burstiness 1``).
    """
    lam = np.atleast_1d(np.asarray(v.positive("request_rate", rate_per_s), dtype=float))
    n = int(v.integer("num_prompts", n_requests))
    e = np.random.default_rng(seed).exponential(1.0, n)
    e[0] = 0.0
    return np.cumsum(e)[None, :] / lam[:, None]


def saturation_requests_per_s(step_time_s: Callable, *, isl: int, osl: int, running: ArrayLike,
                              token_budget: ArrayLike) -> float | np.ndarray:
    r"""The arrival rate an instance sustains at its most running sequences: beyond it the
    queue grows without bound.

    At R running requests each step decodes the running ones and spends the rest of its
    budget on the prompts of those replacing the finished: a request's life is
    S = max(o, ceil(R (s + o) / B)) steps, and a step carries n_p = R s / S prompt tokens and
    b = R (o - 1) / S decodes:

    .. math:: \lambda_{max} = \frac{R}{S\, \tau(n_p, b)}

    Parameters
    ----------
    step_time_s : callable
        ``step_time_s(prefill_tokens, decode_sequences) -> seconds`` on arrays [s].
    isl, osl : int
        s, o: prompt and output tokens per request [-].
    running : float or array
        R, the most sequences the instance runs (its cap, its KV cache) [-].
    token_budget : float or array
        B, tokens per step [-].

    Returns
    -------
    rate : float or array
        lambda_max [requests/s].

    References
    ----------
    .. [1] Agrawal et al. 2024 §4 (a step's budget shared by decodes and prompt chunks);
       Little 1961 (R in flight over a life of S steps).
    """
    s_, o = float(v.integer("isl", isl)), float(v.integer("osl", osl))
    r = np.asarray(v.positive("running", running), dtype=float)
    b_ = np.asarray(v.positive("token_budget", token_budget), dtype=float)
    steps = np.maximum(o, np.ceil(r * (s_ + o) / b_))
    n_p, b = r * s_ / steps, r * (o - 1.0) / steps
    shape = np.broadcast(r, b_).shape
    tau = np.asarray(step_time_s(np.broadcast_to(n_p, shape).reshape(-1),
                                 np.broadcast_to(b, shape).reshape(-1))).reshape(shape)
    return v.result(r / (steps * tau))


def request_lengths(mean_tokens: int, n_requests: int, spread: float = 0.0,
                    seed: int = ARRIVAL_SEED) -> np.ndarray:
    r"""Token counts of N requests with a given mean, spread evenly over a range and shuffled:
    a benchmark's random dataset.

    .. math:: \ell_i \in \left[\bar\ell (1 - f),\; \bar\ell (1 + f)\right], \quad
        \text{evenly spaced, mean } \bar\ell

    Parameters
    ----------
    mean_tokens : int
        The mean length [tokens].
    n_requests : int
        N [-].
    spread : float
        f in [0, 1): 0 gives every request the mean; vLLM's and SGLang's random datasets
        draw lengths uniformly below the nominal one (``--random-range-ratio``) [-].
    seed : int
        Seed of the shuffle [-].

    Returns
    -------
    lengths : ndarray
        (N,) whole token counts, at least 1 [tokens].

    References
    ----------
    .. [1] vLLM ``benchmarks/benchmark_dataset.py`` ``RandomDataset``; SGLang
       ``bench_serving.py`` ``sample_random_requests`` (lengths uniform in
       [ratio x length, length]).
    """
    m = float(v.positive("mean_tokens", mean_tokens))
    n = int(v.integer("num_prompts", n_requests))
    f = float(v.in_range("spread", spread, 0.0, 0.99))
    if n == 1 or f == 0:
        return np.full(n, max(round(m), 1), dtype=float)
    x = m * (1.0 + f * np.linspace(-1.0, 1.0, n))
    x = np.maximum(np.round(x), 1.0)
    return np.random.default_rng(seed).permutation(x)


def simulate(step_time_s: Callable, *, isl: int, osl: int, n_requests: int,
             max_running: ArrayLike, token_budget: ArrayLike, kv_capacity_tokens: ArrayLike,
             concurrency: ArrayLike | None = None, arrivals_s: ArrayLike | None = None,
             length_spread: float | tuple[float, float] = 0.0) -> Simulated:
    r"""Serve ``n_requests`` prompts of ``isl`` tokens, each answered with ``osl`` tokens, step
    by step, for K configurations at once.

    A step decodes one token of every running request past its prefill (b of them) and gives
    the rest of the budget, B - b tokens, to prompt chunks in arrival order (n_p tokens); it
    lasts ``step_time_s(n_p, b)``. A request's first token comes at the end of the step that
    finishes its prompt; TTFT is that time less its arrival, TPOT (latency - TTFT) / (o - 1).
    A request is admitted, first come first served, while fewer than ``max_running`` run and
    its ``isl + osl`` tokens fit in the KV cache beside those admitted.

    Parameters
    ----------
    step_time_s : callable
        ``step_time_s(prefill_tokens, decode_sequences) -> seconds``, arrays of shape (K,) in
        and out [s].
    isl, osl : int
        Prompt and output tokens per request [-].
    n_requests : int
        N, prompts the run sends [-].
    max_running : int or array
        Cap on running sequences (``max_num_seqs``) [-], (K,).
    token_budget : int or array
        Tokens one step may process (``max_num_batched_tokens``) [-], (K,).
    kv_capacity_tokens : float or array
        Tokens the KV cache holds [-], (K,).
    concurrency : int or array or None
        The client's cap on requests in flight (K,): request i is sent when request i - C
        completes, the first C at once. None: ``arrivals_s`` sets the arrivals.
    arrivals_s : array or None
        (K, N) or (N,) arrival times [s] (a rate: :func:`poisson_arrivals_s`); None with no
        ``concurrency``: a burst, every prompt at 0.
    length_spread : float or (float, float)
        Prompt and output lengths spread about their means (one for both, or each) (:func:`request_lengths`) [-]:
        0, every request alike (a closed loop of identical requests stays in step, waves and
        all); a benchmark's random dataset spreads them.

    Returns
    -------
    Simulated
        Means over the requests per configuration [s, 1/s, tokens/s].

    References
    ----------
    .. [1] Agrawal et al. 2024 §4; Kwon et al. 2023 §4.5; vLLM v1 scheduler.
    """
    isl = int(v.integer("isl", isl))
    osl = int(v.integer("osl", osl))
    n = int(v.integer("num_prompts", n_requests))
    arr = None if arrivals_s is None else np.asarray(arrivals_s, dtype=float)
    lead = np.zeros(arr.shape[:-1]) if arr is not None and arr.ndim > 1 else np.asarray(1)
    shape = np.broadcast(np.asarray(max_running), np.asarray(token_budget),
                         np.asarray(kv_capacity_tokens), lead,
                         np.asarray(1 if concurrency is None else concurrency)).shape
    k = int(np.prod(shape)) if shape else 1

    def flat(x: ArrayLike) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), shape).reshape(k).copy()

    cap_seq = flat(v.integer("max_num_seqs", max_running))
    budget = flat(v.integer("max_num_batched_tokens", token_budget))
    kv_cap = flat(v.nonnegative("kv_capacity_tokens", kv_capacity_tokens))
    # np.ndim 0: one spread for both lengths, else the pair
    f_in, f_out = cast("tuple[float, float]", (length_spread, length_spread)
                       if np.ndim(length_spread) == 0 else length_spread)
    isl_i = request_lengths(isl, n, f_in, ARRIVAL_SEED)
    osl_i = request_lengths(osl, n, f_out, ARRIVAL_SEED + 1)
    need_i = (isl_i + osl_i)[None, :]
    if concurrency is not None:
        conc = flat(v.integer("concurrency", concurrency)).astype(int)
        arrive = np.full((k, n), np.inf)
        idx = np.arange(n)[None, :]
        arrive[idx < conc[:, None]] = 0.0
    else:
        conc = None
        # no arrivals given: a burst, every prompt at once
        arr = np.zeros(n) if arr is None else arr
        arrive = np.broadcast_to(arr.reshape((-1, n)) if arr.ndim > 1 else arr,
                                 (k, n)).copy()

    t = np.zeros(k)
    pre_left = np.broadcast_to(isl_i, (k, n)).copy()
    dec_left = np.broadcast_to(osl_i - 1.0, (k, n)).copy()
    admitted = np.zeros((k, n), dtype=bool)
    done = np.zeros((k, n), dtype=bool)
    start = np.full((k, n), np.nan)      # the first step that runs a chunk of its prompt
    first = np.full((k, n), np.nan)
    finish = np.full((k, n), np.nan)
    batch_time = np.zeros(k)
    busy = np.zeros(k)
    steps = np.zeros(k, dtype=int)
    sent = np.minimum(conc, n) if conc is not None else None
    for _ in range(MAX_STEPS):
        active = ~done.all(axis=1)
        if not active.any():
            break
        running = admitted & ~done
        # admission, FCFS: as many arrived waiting requests as the cap and the KV allow
        waiting = ~admitted & (arrive <= t[:, None] + 1e-12)
        room = cap_seq - running.sum(axis=1)
        free = kv_cap - (running * need_i).sum(axis=1)
        order = np.cumsum(waiting, axis=1)
        # first come first served: a request that does not fit blocks those behind it
        fits_kv = np.cumsum(waiting * need_i, axis=1) <= free[:, None]
        fits_kv = np.minimum.accumulate(fits_kv | ~waiting, axis=1)
        new = waiting & (order <= np.maximum(room, 0)[:, None]) & fits_kv
        admitted |= new
        running = admitted & ~done
        decoding = running & (pre_left <= 0)
        b = decoding.sum(axis=1).astype(float)
        prefilling = running & (pre_left > 0)
        left = np.where(prefilling, pre_left, 0.0)
        room_tok = np.maximum(budget - b, 0.0)
        before = np.cumsum(left, axis=1) - left
        alloc = np.clip(room_tok[:, None] - before, 0.0, left)
        n_p = alloc.sum(axis=1)
        idle = active & (b == 0) & (n_p == 0)
        if idle.any():
            # nothing runs: the clock jumps to the next arrival
            nxt = np.where(~admitted, arrive, np.inf).min(axis=1)
            jump = idle & np.isfinite(nxt)
            t[jump] = np.maximum(t[jump], nxt[jump])
            if not (active & ~idle).any():
                if not jump.any():
                    break            # nothing can run: a request larger than the KV cache
                continue
        work = active & ~idle
        dt = np.where(work, step_time_s(n_p, b), 0.0)
        # decode-only steps repeat unchanged until a request completes or one arrives: run
        # them at once (the same steps, counted one by one)
        repeat = np.ones(k)
        only = work & (n_p == 0) & (b > 0)
        if only.any():
            to_done = np.where(decoding, dec_left, np.inf).min(axis=1)
            nxt = np.where(~admitted & (arrive > t[:, None]), arrive, np.inf).min(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                to_arrival = np.floor((nxt - t) / np.where(dt > 0, dt, np.inf))
            repeat = np.where(only, np.maximum(1.0, np.minimum(to_done, to_arrival)), 1.0)
        dt_all = dt * repeat
        t0 = t.copy()
        t = t + dt_all
        steps += np.where(work, repeat, 0).astype(int)
        batch_time += b * dt_all
        busy += dt_all
        began = (alloc > 0) & np.isnan(start)
        start[began] = np.broadcast_to(t0[:, None], start.shape)[began]
        pre_left = pre_left - alloc
        got_first = prefilling & (pre_left <= 0) & np.isnan(first)
        first[got_first] = np.broadcast_to(t[:, None], first.shape)[got_first]
        dec_left = dec_left - decoding * repeat[:, None]
        fin = (decoding & (dec_left <= 0)) | (got_first & (dec_left <= 0))
        finish[fin] = np.broadcast_to(t[:, None], finish.shape)[fin]
        done |= fin
        if conc is not None:
            # the client sends the next request as one completes (closed loop): the f that
            # completed this step release requests sent .. sent + f - 1, now
            f = fin.sum(axis=1)
            assert sent is not None     # set with conc
            idx = np.arange(n)[None, :]
            rel = (idx >= sent[:, None]) & (idx < (sent + f)[:, None])
            arrive[rel] = np.broadcast_to(t[:, None], arrive.shape)[rel]
            sent = np.minimum(sent + f, n)
    arrive_f = np.where(np.isfinite(arrive), arrive, np.nan)
    ttft = first - arrive_f
    tpot = np.where(osl_i > 1, (finish - first) / np.maximum(osl_i - 1.0, 1.0), np.nan)
    lat = finish - arrive_f
    queue = start - arrive_f
    dur = np.nanmax(finish, axis=1) - np.nanmin(arrive_f, axis=1)
    out = Simulated(
        ttft_s=np.nanmean(ttft, axis=1), ttft_p50_s=np.nanmedian(ttft, axis=1),
        ttft_p99_s=np.nanpercentile(ttft, 99, axis=1),
        tpot_s=np.nanmean(tpot, axis=1) if np.any(osl_i > 1) else np.zeros(k),
        latency_s=np.nanmean(lat, axis=1), queue_s=np.nanmean(queue, axis=1),
        running_batch=batch_time / np.maximum(busy, 1e-300),
        achieved_requests_per_s=done.sum(axis=1) / dur,
        output_tokens_per_s=(done * osl_i).sum(axis=1) / dur, duration_s=dur, steps=steps)
    return Simulated(*(np.reshape(x, shape) if shape else x.reshape(()) for x in out))
