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

import warnings
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Requests:
    """The prompts of a benchmark run: how many, how long, and when they are sent.

    Parameters
    ----------
    isl, osl : int
        Prompt and output tokens per request, their means when they spread [-].
    n_requests : int
        N, prompts the run sends [-].
    concurrency : int or array or None
        The client's cap on requests in flight (K,): request i is sent when request i - C
        completes, the first C at once. None: ``arrivals_s`` sets the arrivals.
    arrivals_s : array or None
        (K, N) or (N,) arrival times [s] (a rate: :func:`poisson_arrivals_s`); None with no
        ``concurrency``: a burst, every prompt at 0.
    length_spread : float or (float, float)
        Prompt and output lengths spread about their means (one for both, or each)
        (:func:`request_lengths`) [-]: 0, every request alike (a closed loop of identical
        requests stays in step, waves and all); a benchmark's random dataset spreads them.
    """

    isl: int
    osl: int
    n_requests: int
    concurrency: ArrayLike | None = None
    arrivals_s: ArrayLike | None = None
    length_spread: float | tuple[float, float] = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "isl", int(v.integer("isl", self.isl)))
        object.__setattr__(self, "osl", int(v.integer("osl", self.osl)))
        object.__setattr__(self, "n_requests", int(v.integer("num_prompts", self.n_requests)))
        if self.concurrency is not None:
            object.__setattr__(self, "concurrency", v.integer("concurrency", self.concurrency))
        if self.arrivals_s is not None:
            object.__setattr__(self, "arrivals_s", np.asarray(self.arrivals_s, dtype=float))

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """Each request's prompt and output tokens (:func:`request_lengths`) [-], (N,)."""
        spread = self.length_spread
        # np.ndim 0: one spread for both lengths, else the pair
        f_in, f_out = cast("tuple[float, float]", (spread, spread)
                           if np.ndim(spread) == 0 else spread)
        return (request_lengths(self.isl, self.n_requests, f_in, ARRIVAL_SEED),
                request_lengths(self.osl, self.n_requests, f_out, ARRIVAL_SEED + 1))


@dataclass(frozen=True)
class Batching:
    """An engine's limits on its steps, per configuration (scalars or (K,) arrays).

    Parameters
    ----------
    max_running : int or array
        Cap on running sequences (``max_num_seqs``) [-].
    token_budget : int or array
        Tokens one step may process (``max_num_batched_tokens``) [-].
    kv_capacity_tokens : float or array
        Tokens the KV cache holds [-].
    """

    max_running: ArrayLike
    token_budget: ArrayLike
    kv_capacity_tokens: ArrayLike

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_running", v.integer("max_num_seqs", self.max_running))
        object.__setattr__(self, "token_budget",
                           v.integer("max_num_batched_tokens", self.token_budget))
        object.__setattr__(self, "kv_capacity_tokens",
                           v.nonnegative("kv_capacity_tokens", self.kv_capacity_tokens))


class _Step(NamedTuple):
    """What one engine step runs, per configuration."""

    #: (K, N): requests past their prefill, each decoding one token
    decoding: np.ndarray
    #: (K, N): requests still in their prompt
    prefilling: np.ndarray
    #: (K, N): prompt tokens of each request the step processes
    alloc: np.ndarray
    #: (K,): decoding sequences b and prompt tokens n_p
    decodes: np.ndarray
    prefill_tokens: np.ndarray


class _Run:
    """The clocks and per-request state of K configurations x N requests, advanced step by
    step: admission, the step's batch, the clock and the client's closed loop."""

    def __init__(self, requests: Requests, batching: Batching, shape: tuple) -> None:
        k, n = (int(np.prod(shape)) if shape else 1), requests.n_requests

        def flat(x: ArrayLike) -> np.ndarray:
            return np.broadcast_to(np.asarray(x, dtype=float), shape).reshape(k).copy()

        self.cap_seq = flat(batching.max_running)
        self.budget = flat(batching.token_budget)
        self.kv_cap = flat(batching.kv_capacity_tokens)
        self.isl_i, self.osl_i = requests.lengths()
        self.need_i = (self.isl_i + self.osl_i)[None, :]
        self.k, self.n = k, n
        self.conc: np.ndarray | None = None
        if requests.concurrency is not None:
            self.conc = flat(requests.concurrency).astype(int)
            self.arrive = np.full((k, n), np.inf)
            self.arrive[np.arange(n)[None, :] < self.conc[:, None]] = 0.0
        else:
            # no arrivals given: a burst, every prompt at once
            arr = np.zeros(n) if requests.arrivals_s is None \
                else np.asarray(requests.arrivals_s)
            self.arrive = np.broadcast_to(arr.reshape((-1, n)) if arr.ndim > 1 else arr,
                                          (k, n)).copy()
        self.t = np.zeros(k)
        self.pre_left = np.broadcast_to(self.isl_i, (k, n)).copy()
        self.dec_left = np.broadcast_to(self.osl_i - 1.0, (k, n)).copy()
        self.admitted = np.zeros((k, n), dtype=bool)
        self.done = np.zeros((k, n), dtype=bool)
        self.start = np.full((k, n), np.nan)   # the first step that runs a chunk of its prompt
        self.first = np.full((k, n), np.nan)
        self.finish = np.full((k, n), np.nan)
        self.batch_time = np.zeros(k)
        self.busy = np.zeros(k)
        self.steps = np.zeros(k, dtype=int)
        self.sent = np.minimum(self.conc, n) if self.conc is not None else None

    def admit(self) -> None:
        """Admission, FCFS: as many arrived waiting requests as the cap and the KV allow."""
        running = self.admitted & ~self.done
        waiting = ~self.admitted & (self.arrive <= self.t[:, None] + 1e-12)
        room = self.cap_seq - running.sum(axis=1)
        free = self.kv_cap - (running * self.need_i).sum(axis=1)
        order = np.cumsum(waiting, axis=1)
        # first come first served: a request that does not fit blocks those behind it
        fits_kv = np.cumsum(waiting * self.need_i, axis=1) <= free[:, None]
        fits_kv = np.minimum.accumulate(fits_kv | ~waiting, axis=1)
        self.admitted |= waiting & (order <= np.maximum(room, 0)[:, None]) & fits_kv

    def batch(self) -> _Step:
        """The step's batch: every running request past its prefill decodes; the rest of the
        token budget goes to prompt chunks in arrival order."""
        running = self.admitted & ~self.done
        decoding = running & (self.pre_left <= 0)
        b = decoding.sum(axis=1).astype(float)
        prefilling = running & (self.pre_left > 0)
        left = np.where(prefilling, self.pre_left, 0.0)
        room_tok = np.maximum(self.budget - b, 0.0)
        before = np.cumsum(left, axis=1) - left
        alloc = np.clip(room_tok[:, None] - before, 0.0, left)
        return _Step(decoding, prefilling, alloc, b, alloc.sum(axis=1))

    def jump_to_next_arrival(self, idle: np.ndarray) -> bool:
        """Where nothing runs the clock jumps to the next arrival; whether any clock moved.
        Only a future arrival moves it: a request that has arrived and still waits while
        nothing runs is larger than the KV cache, and so is every one behind it."""
        nxt = np.where(~self.admitted & (self.arrive > self.t[:, None]), self.arrive,
                       np.inf).min(axis=1)
        jump = idle & np.isfinite(nxt)
        self.t[jump] = np.maximum(self.t[jump], nxt[jump])
        return bool(jump.any())

    def repeats(self, step: _Step, work: np.ndarray, dt: np.ndarray) -> np.ndarray:
        """Decode-only steps repeat unchanged until a request completes or one arrives: how
        many run at once (the same steps, counted one by one)."""
        repeat = np.ones(self.k)
        only = work & (step.prefill_tokens == 0) & (step.decodes > 0)
        if only.any():
            to_done = np.where(step.decoding, self.dec_left, np.inf).min(axis=1)
            nxt = np.where(~self.admitted & (self.arrive > self.t[:, None]), self.arrive,
                           np.inf).min(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                to_arrival = np.floor((nxt - self.t) / np.where(dt > 0, dt, np.inf))
            repeat = np.where(only, np.maximum(1.0, np.minimum(to_done, to_arrival)), 1.0)
        return repeat

    def advance(self, step: _Step, work: np.ndarray, dt: np.ndarray,
                repeat: np.ndarray) -> None:
        """Run the step ``repeat`` times: the clock, the prompts and decodes left, the first
        tokens and completions."""
        dt_all = dt * repeat
        t0 = self.t.copy()
        self.t = t = self.t + dt_all
        self.steps += np.where(work, repeat, 0).astype(int)
        self.batch_time += step.decodes * dt_all
        self.busy += dt_all
        began = (step.alloc > 0) & np.isnan(self.start)
        self.start[began] = np.broadcast_to(t0[:, None], self.start.shape)[began]
        self.pre_left = self.pre_left - step.alloc
        got_first = step.prefilling & (self.pre_left <= 0) & np.isnan(self.first)
        self.first[got_first] = np.broadcast_to(t[:, None], self.first.shape)[got_first]
        self.dec_left = self.dec_left - step.decoding * repeat[:, None]
        fin = (step.decoding & (self.dec_left <= 0)) | (got_first & (self.dec_left <= 0))
        self.finish[fin] = np.broadcast_to(t[:, None], self.finish.shape)[fin]
        self.done |= fin
        if self.conc is not None:
            self._release(fin.sum(axis=1))

    def _release(self, completed: np.ndarray) -> None:
        # the client sends the next request as one completes (closed loop): the f that
        # completed this step release requests sent .. sent + f - 1, now
        f, n = completed, self.n
        assert self.sent is not None     # set with conc
        idx = np.arange(n)[None, :]
        rel = (idx >= self.sent[:, None]) & (idx < (self.sent + f)[:, None])
        self.arrive[rel] = np.broadcast_to(self.t[:, None], self.arrive.shape)[rel]
        self.sent = np.minimum(self.sent + f, n)

    def summary(self, shape: tuple) -> Simulated:
        """Means over the requests per configuration, in the configurations' shape."""
        osl_i = self.osl_i
        arrive_f = np.where(np.isfinite(self.arrive), self.arrive, np.nan)
        ttft = self.first - arrive_f
        tpot = np.where(osl_i > 1, (self.finish - self.first) / np.maximum(osl_i - 1.0, 1.0),
                        np.nan)
        lat = self.finish - arrive_f
        queue = self.start - arrive_f
        with warnings.catch_warnings():
            # a configuration that ran no request (its KV cache holds none) has no figures:
            # NaN, which its fits=False drops
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._summary(shape, ttft, tpot, lat, queue, arrive_f)

    def _summary(self, shape: tuple, ttft: np.ndarray, tpot: np.ndarray, lat: np.ndarray,
                 queue: np.ndarray, arrive_f: np.ndarray) -> Simulated:
        osl_i, k = self.osl_i, self.k
        dur = np.nanmax(self.finish, axis=1) - np.nanmin(arrive_f, axis=1)
        out = Simulated(
            ttft_s=np.nanmean(ttft, axis=1), ttft_p50_s=np.nanmedian(ttft, axis=1),
            ttft_p99_s=np.nanpercentile(ttft, 99, axis=1),
            tpot_s=np.nanmean(tpot, axis=1) if np.any(osl_i > 1) else np.zeros(k),
            latency_s=np.nanmean(lat, axis=1), queue_s=np.nanmean(queue, axis=1),
            running_batch=self.batch_time / np.maximum(self.busy, 1e-300),
            achieved_requests_per_s=self.done.sum(axis=1) / dur,
            output_tokens_per_s=(self.done * osl_i).sum(axis=1) / dur, duration_s=dur,
            steps=self.steps)
        return Simulated(*(np.reshape(x, shape) if shape else x.reshape(()) for x in out))


def simulate(step_time_s: Callable, requests: Requests, batching: Batching) -> Simulated:
    r"""Serve a benchmark run's prompts step by step, for K configurations at once.

    A step decodes one token of every running request past its prefill (b of them) and gives
    the rest of the budget, B - b tokens, to prompt chunks in arrival order (n_p tokens); it
    lasts ``step_time_s(n_p, b)``. A request's first token comes at the end of the step that
    finishes its prompt; TTFT is that time less its arrival, TPOT (latency - TTFT) / (o - 1).
    A request is admitted, first come first served, while fewer than ``max_running`` run and
    its ``isl + osl`` tokens fit in the KV cache beside those admitted.

    .. math:: \tau_{step} = \tau(n_p, b), \qquad n_p \le B - b

    Parameters
    ----------
    step_time_s : callable
        ``step_time_s(prefill_tokens, decode_sequences) -> seconds``, arrays of shape (K,) in
        and out [s].
    requests : Requests
        The run's prompts: lengths, how many, and the client's concurrency or their arrival
        times (neither: a burst).
    batching : Batching
        The engine's cap on running sequences, token budget per step and KV-cache capacity,
        per configuration.

    Returns
    -------
    Simulated
        Means over the requests per configuration [s, 1/s, tokens/s].

    References
    ----------
    .. [1] Agrawal et al. 2024 §4; Kwon et al. 2023 §4.5; vLLM v1 scheduler.
    """
    arr, conc = requests.arrivals_s, requests.concurrency
    lead = np.zeros(np.shape(arr)[:-1]) if arr is not None and np.ndim(arr) > 1 \
        else np.asarray(1)
    shape = np.broadcast(np.asarray(batching.max_running), np.asarray(batching.token_budget),
                         np.asarray(batching.kv_capacity_tokens), lead,
                         np.asarray(1 if conc is None else conc)).shape
    run = _Run(requests, batching, shape)
    for _ in range(MAX_STEPS):
        active = ~run.done.all(axis=1)
        if not active.any():
            break
        run.admit()
        step = run.batch()
        idle = active & (step.decodes == 0) & (step.prefill_tokens == 0)
        if idle.any():
            jumped = run.jump_to_next_arrival(idle)
            if not (active & ~idle).any():
                if not jumped:
                    break            # nothing can run: a request larger than the KV cache
                continue
        work = active & ~idle
        dt = np.where(work, step_time_s(step.prefill_tokens, step.decodes), 0.0)
        run.advance(step, work, dt, run.repeats(step, work, dt))
    return run.summary(shape)
