"""One serving layout of a model on a GPU: memory, TTFT, TPOT, throughput (vectorized over
tp, ep and concurrency arrays). Composes :mod:`llmcost.serving.memory`, :mod:`llmcost.serving.latency` and
:mod:`llmcost.training.comm`; the model and GPU are the catalog's ModelSpec and GPUSpec.

:func:`predict` runs named stages, each a private function of this module that can be read,
tested or replaced alone: the formats (:func:`_formats`), the memory of one instance
(:func:`_memory`), the concurrency served (:func:`_concurrency`), the step times
(:class:`_Steps`), the steady closed loop (:func:`_steady`), the saturation rate
(:func:`_saturation`), a benchmark run simulated step by step (:func:`_benchmark`) and the
client's time outside the engine (:func:`_client_overhead`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..training import comm
from ..training.arch import ModelSpec
from ..training.hardware import GPUSpec
from . import latency as lat
from . import memory as mem
from . import scheduler as sched
from .deployment import Deployment, Workload
from .engines import Engine

ACT_BYTES = 2.0
#: generations whose tensor cores run FP4 at twice the FP8 rate (NVIDIA Blackwell datasheet:
#: B200 dense FP4 9 PFLOP/s = 2 x FP8 4.5)
FP4_GENERATIONS = ("blackwell",)
#: a figure of one layout (a numpy scalar) or of many (an array)
Figure = float | np.ndarray


class ServePrediction(NamedTuple):
    ttft_s: Figure
    tpot_s: Figure
    latency_s: Figure
    output_tokens_per_s_per_gpu: Figure
    concurrency: Figure
    max_concurrency: Figure
    fits: Figure
    weights_bytes_per_gpu: Figure
    kv_bytes_per_token: float
    kv_bytes_per_gpu: Figure
    activation_bytes_per_gpu: Figure
    prefill_s: Figure
    decode_step_s: Figure
    kv_format: str
    weight_format: str
    attention_dp: bool
    #: "steady" (closed loop at a fixed concurrency, closed form), "concurrency" (a benchmark
    #: of N prompts at a client concurrency), "rate" or "burst" (simulated step by step)
    load_shape: str = "steady"
    ttft_p50_s: Figure | None = None
    ttft_p99_s: Figure | None = None
    #: mean wait from arrival to the first prefill chunk [s]
    queue_s: Figure | None = None
    #: sequences decoding in a step, time-weighted mean [-]
    running_batch: Figure | None = None
    achieved_requests_per_s: Figure | None = None
    #: the arrival rate the instance sustains: beyond it the queue grows without bound [1/s]
    saturation_requests_per_s: Figure | None = None


def compute_peak_tflops(gpu: GPUSpec, weight_format: str) -> float:
    """Dense peak [TFLOP/s] the GEMMs run at: FP8 weights at the FP8 rate, FP4 at twice it on
    FP4 hardware (else FP8, else BF16: weight-only dequantization), int4/int8 weight-only at
    the BF16 rate (AWQ/GPTQ kernels dequantize to FP16)."""
    fp8 = gpu.fp8_dense_tflops
    if weight_format == "fp8" and fp8:
        return float(fp8)
    if weight_format in ("nvfp4", "mxfp4") and fp8:
        return float(fp8) * (2.0 if gpu.generation in FP4_GENERATIONS else 1.0)
    return float(gpu.bf16_dense_tflops)


def _attention_dims(model: ModelSpec, decode: bool) -> tuple[int, int]:
    # ModelSpec.__post_init__ fills head_dim and v_head_dim
    assert model.head_dim is not None and model.v_head_dim is not None
    if model.attention == "mla":
        if decode:   # absorbed: scores over the latent and the RoPE key, values in the latent
            return model.kv_lora_rank + model.qk_rope_head_dim, model.kv_lora_rank
        return model.qk_head_dim, model.v_head_dim
    return model.head_dim, model.v_head_dim



class _Setup(NamedTuple):
    """What every stage reads: the groups, the engine and the formats they resolve to."""

    deployment: Deployment
    workload: Workload
    engine: Engine
    #: weights', routed experts' and KV cache's formats
    weight_format: str
    expert_format: str
    kv_format: str
    attention_dp: bool


class _Memory(NamedTuple):
    """One instance's memory per GPU and the sequences it holds."""

    weights_bytes_per_gpu: Figure
    #: the routed experts' share of the weights per GPU [bytes]
    expert_bytes_per_gpu: Figure
    kv_bytes_per_token: float
    kv_bytes_per_sequence_per_gpu: Figure
    #: share of a sequence's KV cache one GPU holds [-]
    kv_shard: Figure
    #: sequences one GPU's attention runs side by side (tp under attention DP, else 1) [-]
    sequences_per_gpu: Figure
    activation_bytes_per_gpu: Figure
    max_concurrency: Figure
    #: the engine's cap on running sequences per instance, None: memory alone limits them
    running_cap: Figure | None

    def most_running(self) -> Figure:
        """The most sequences the instance runs: its memory's, within the engine's cap."""
        c_max, cap = self.max_concurrency, self.running_cap
        return np.maximum(np.minimum(c_max, cap) if cap is not None else c_max, 1.0)


def _formats(deployment: Deployment, engine: Engine) -> tuple[str, str, str]:
    """The weights', routed experts' and KV cache's formats (the KV: the engine's default
    for the weights unless given)."""
    fmt = deployment.weight_format
    return fmt, deployment.expert_weight_format, deployment.kv or engine.kv_format(fmt)


def _memory(s: _Setup) -> _Memory:
    """Weights, KV cache and activations per GPU, and the sequences the KV cache holds."""
    model, engine, t = s.deployment.model, s.engine, s.deployment.tp
    adp, kvf = s.attention_dp, s.kv_format
    # ModelSpec.__post_init__ fills kv_heads and ffn_hidden
    assert model.kv_heads is not None and model.ffn_hidden is not None
    dense_p, expert_p, vocab_p = mem.model_weight_split(model)
    w_gpu = mem.weights_bytes_per_gpu(dense_p, expert_p, vocab_p, t, s.weight_format,
                                      s.expert_format, adp)
    ctx_max = s.workload.isl + s.workload.osl
    kv_seq = mem.model_kv_bytes_per_sequence(model, ctx_max, kvf)
    kv_token = float(mem.model_kv_bytes_per_sequence(model, ctx_max, kvf, 1)) / float(ctx_max)
    shard = mem.kv_shard_fraction(model.kv_heads, t, model.attention, adp)
    kv_seq_gpu = kv_seq * shard
    seqs_per_gpu = t if adp else 1

    ffn_gpu = max(model.ffn_hidden if model.layers > model.moe_layers else 0,
                  (model.moe_ffn_hidden or 0) * model.moe_top_k + model.moe_shared_ffn_hidden) / t
    cap = engine.max_batch * seqs_per_gpu if engine.max_batch else None
    act = mem.activation_bytes(engine.max_batched_tokens, model.hidden, ffn_gpu, model.vocab,
                               engine.max_batch or 1024, t, ACT_BYTES)
    m_bytes = s.deployment.gpu.memory_bytes
    phi: float | np.ndarray = engine.memory_fraction
    if engine.fraction_of_free:     # TRT-LLM: a share of what weights and activations leave
        phi = np.clip((phi * np.maximum(m_bytes - w_gpu - act, 0) + w_gpu + act) / m_bytes,
                      1e-9, 1.0)
    c_max = mem.max_concurrency(m_bytes, w_gpu, act, kv_seq_gpu, phi, seqs_per_gpu)
    expert_gpu = mem.weights_bytes_per_gpu(0, expert_p, 0, t, s.weight_format, s.expert_format)
    return _Memory(w_gpu, expert_gpu, kv_token, kv_seq_gpu, shard, seqs_per_gpu, act, c_max,
                   cap)


def _concurrency(s: _Setup, memory: _Memory) -> tuple[Figure, Figure]:
    """The requests in flight (as given, else the most the instance runs) and whether they
    fit in its memory and under the engine's cap."""
    c_max, cap = memory.max_concurrency, memory.running_cap
    if s.workload.concurrency is None:
        c = memory.most_running()
    else:
        c = s.workload.concurrency * np.ones_like(c_max)
    # beyond the engine's running-sequence cap requests queue: not that concurrency served
    fits = (c_max >= c) & (c_max >= 1) & ((c <= cap) if cap is not None else True)
    return c, fits


def _peak(s: _Setup) -> float:
    """The dense peak the GEMMs reach [TFLOP/s]."""
    gpu, fmt, efmt = s.deployment.gpu, s.weight_format, s.expert_format
    # mixed formats (gpt-oss: BF16 attention, MXFP4 experts): the slower rate, conservatively
    peak = min(compute_peak_tflops(gpu, fmt), compute_peak_tflops(gpu, efmt))
    if gpu.generation in FP4_GENERATIONS and "fp4" in fmt + efmt:
        # FP4 GEMMs reach a smaller share of their doubled peak than FP8 ones of theirs
        peak = peak * s.engine.fp4_efficiency
    return peak


@dataclass(frozen=True)
class _Steps:
    """The time of the engine's steps on one instance: a prompt's prefill, a decode step of
    c sequences, and a mixed step of prompt chunks beside decodes."""

    setup: _Setup
    memory: _Memory
    peak: float
    #: FLOPs of one prompt's prefill, and of one sequence's decode token per GPU
    prefill_flops: Figure
    decode_flops_per_sequence: Figure

    @classmethod
    def build(cls, s: _Setup, memory: _Memory) -> _Steps:
        model, engine, t = s.deployment.model, s.engine, s.deployment.tp
        isl, osl = s.workload.isl, s.workload.osl
        L, h, V = model.layers, model.hidden, model.vocab
        win_l = model.window_layers if model.attention_window else 0
        win = model.attention_window
        p_mm = model.active_matmul_params_per_layer * L
        # ---- prefill of one prompt: compute-bound, attention quadratic in isl
        qk, vd = _attention_dims(model, decode=False)
        f_pre = lat.prefill_flops(p_mm, L, model.heads, qk, vd, isl, win_l, win) + 2.0 * V * h
        # routed-expert GEMMs run below the dense ones (grouped GEMMs, load imbalance): their
        # FLOPs count 1 / moe_efficiency times
        p_exp = float(model.active_expert_params)
        moe_extra = 2.0 * p_exp * (1.0 / engine.moe_efficiency - 1.0)
        f_pre = f_pre + moe_extra * isl
        # ---- one decode token: weights + KV over HBM, or compute at large batch
        qk_d, vd_d = _attention_dims(model, decode=True)
        f_dec_seq = (2.0 * p_mm + moe_extra + 2.0 * V * h + lat.attention_flops_per_token(
            L, model.heads, qk_d, vd_d, isl + osl / 2.0, win_l, win)) / t
        return cls(s, memory, _peak(s), f_pre, f_dec_seq)

    def comm_s(self, tokens: Figure) -> Figure:
        """Communication per forward: TP all-reduces, EP all-to-all (NVLink domain) [s]."""
        d, engine = self.setup.deployment, self.setup.engine
        model, t, e = d.model, d.tp, d.ep
        up = d.scale_up
        bw, alpha, eff = up.bandwidth_gb_per_s_per_gpu, up.latency_us, up.efficiency
        L, h, lm = model.layers, model.hidden, model.moe_layers
        ep_on = np.asarray(e) > 1
        n_ar = 2.0 * (L - lm) + lm * np.where(ep_on, 1.0, 2.0)
        # the engine's own cost per collective (launch, barrier) beside the link's latency
        ar = comm.tree_allreduce_time_s(tokens * h * ACT_BYTES, t, bw, alpha, eff) + \
            np.where(t > 1, engine.collective_latency_us * 1e-6, 0.0)
        a2a_bytes = tokens / np.where(self.setup.attention_dp, t, 1) * model.moe_top_k * h \
            * ACT_BYTES * (e - 1) / e
        a2a = 2.0 * lm * (a2a_bytes / (bw * 1e9 * eff) + (e - 1) * alpha * 1e-6)
        return n_ar * ar + np.where(ep_on, a2a, 0.0)

    def prefill_s(self) -> Figure:
        """One prompt's prefill alone [s]."""
        engine, m = self.setup.engine, self.memory
        return lat.roofline_time_s(self.prefill_flops / self.setup.deployment.tp,
                                   m.weights_bytes_per_gpu, self.peak,
                                   self.setup.deployment.gpu.hbm_bandwidth_tb_per_s,
                                   engine.prefill_efficiency, engine.memory_efficiency) \
            + self.comm_s(self.setup.workload.isl)

    def _weights_read(self, tokens: Figure) -> Figure:
        # the tokens of a step route over all of the instance's experts
        model, m = self.setup.deployment.model, self.memory
        return m.weights_bytes_per_gpu - m.expert_bytes_per_gpu * (
            1.0 - lat.expert_read_fraction(tokens, model.moe_experts, model.moe_top_k))

    def _kv_read(self, sequences: Figure) -> Figure:
        s, m = self.setup, self.memory
        ctx_mean = s.workload.isl + s.workload.osl / 2.0
        return sequences * mem.model_kv_bytes_per_sequence(
            s.deployment.model, ctx_mean, s.kv_format, 1) * m.kv_shard / m.sequences_per_gpu

    def decode_step_s(self, sequences: Figure) -> Figure:
        """One decode step of ``sequences`` running sequences [s]."""
        engine, cc = self.setup.engine, sequences
        return lat.roofline_time_s(cc * self.decode_flops_per_sequence,
                                   self._weights_read(cc) + self._kv_read(cc), self.peak,
                                   self.setup.deployment.gpu.hbm_bandwidth_tb_per_s,
                                   engine.decode_compute_efficiency, engine.memory_efficiency) \
            + self.comm_s(cc) + engine.step_overhead_s + cc * engine.sequence_overhead_s

    def mixed_step_s(self, prefill_tokens: np.ndarray, decodes: np.ndarray,
                     shape: tuple) -> np.ndarray:
        """A step of prompt chunks beside decodes (flat arrays of the configurations of
        ``shape``) [s]: they share the weights read and the peak (Sarathi-Serve's stall-free
        batches)."""
        s, engine = self.setup, self.setup.engine
        t = s.deployment.tp
        n_p, b = prefill_tokens.reshape(shape), decodes.reshape(shape)
        tokens = n_p + b
        f_pre_tok = self.prefill_flops / s.workload.isl
        compute = (n_p * f_pre_tok / t / engine.prefill_efficiency
                   + b * self.decode_flops_per_sequence / engine.decode_compute_efficiency) \
            / (self.peak * lat.TERA)
        memory_ = (self._weights_read(tokens) + self._kv_read(b)) / (
            s.deployment.gpu.hbm_bandwidth_tb_per_s * lat.TERA * engine.memory_efficiency)
        out = np.maximum(compute, memory_) + self.comm_s(tokens) + engine.step_overhead_s \
            + b * engine.sequence_overhead_s
        return np.asarray(out, dtype=float).reshape(-1)


class _Load(NamedTuple):
    """A load's mean figures, and those a simulated benchmark adds."""

    ttft_s: Figure
    tpot_s: Figure
    latency_s: Figure
    output_tokens_per_s_per_gpu: Figure
    fits: Figure
    extra: dict[str, Any]


def _steady(s: _Setup, c: Figure, prefill_s: Figure, decode_step_s: Figure,
            fits: Figure) -> _Load:
    """The closed loop at concurrency ``c`` in closed form
    (:func:`llmcost.serving.latency.closed_loop`)."""
    ttft, tpot, latency = lat.closed_loop(prefill_s, decode_step_s, c, s.workload.osl)
    x = lat.output_tokens_per_s_per_gpu(c, s.workload.osl, latency, s.deployment.tp)
    return _Load(ttft, tpot, latency, x, fits, {})


def _saturation(steps: _Steps, shape: tuple) -> Figure:
    """The arrival rate the instance sustains: its running cap (memory, the engine), steps
    shared by decodes and the prompts of those replacing the finished
    (:func:`llmcost.serving.scheduler.saturation_requests_per_s`) [1/s]."""
    s, m = steps.setup, steps.memory
    return sched.saturation_requests_per_s(
        lambda n_p, b: steps.mixed_step_s(n_p, b, shape), isl=s.workload.isl,
        osl=s.workload.osl, running=np.broadcast_to(m.most_running(), shape),
        token_budget=_token_budget(steps, shape))


def _token_budget(steps: _Steps, shape: tuple) -> np.ndarray:
    return np.broadcast_to(steps.setup.engine.max_batched_tokens
                           * steps.memory.sequences_per_gpu, shape)


def _benchmark(steps: _Steps, c: Figure, shape: tuple, steady: _Load) -> _Load:
    """A benchmark run of the workload's prompts, simulated step by step
    (:func:`llmcost.serving.scheduler.simulate`): at its concurrency, at its request rate
    (Poisson arrivals) or all at once."""
    s, m = steps.setup, steps.memory
    w = s.workload
    n = 1000 if w.requests is None else w.requests
    cap = m.running_cap
    requests = sched.Requests(
        isl=w.isl, osl=w.osl, n_requests=n, length_spread=w.length_spread,
        concurrency=np.broadcast_to(c, shape).astype(int) if w.load_shape == "concurrency"
        else None,
        arrivals_s=sched.poisson_arrivals_s(np.broadcast_to(w.request_rate, shape).reshape(-1),
                                            n).reshape(*shape, n)
        if w.request_rate is not None else None)
    batching = sched.Batching(
        max_running=np.broadcast_to(cap if cap is not None else 10**9, shape),
        token_budget=_token_budget(steps, shape),
        kv_capacity_tokens=np.broadcast_to(m.max_concurrency * (w.isl + w.osl), shape))
    sim = sched.simulate(lambda n_p, b: steps.mixed_step_s(n_p, b, shape), requests, batching)
    fits = steady.fits
    if w.concurrency is None:
        # a burst or a rate runs what fits and queues the rest: one request must fit
        fits = (m.max_concurrency >= 1) & np.ones(shape, dtype=bool)
    extra = dict(ttft_p50_s=sim.ttft_p50_s, ttft_p99_s=sim.ttft_p99_s, queue_s=sim.queue_s,
                 running_batch=sim.running_batch,
                 achieved_requests_per_s=sim.achieved_requests_per_s)
    return _Load(sim.ttft_s, sim.tpot_s, sim.latency_s,
                 sim.output_tokens_per_s / s.deployment.tp, fits, extra)


def _client_overhead(s: _Setup, load: _Load) -> _Load:
    """The client's clock: a request's time outside the engine's steps (HTTP, tokenization)
    in its TTFT and its latency; in a closed loop the client's slot waits through it too
    (Little's law)."""
    req_s = s.engine.request_overhead_s
    x = load.output_tokens_per_s_per_gpu
    if req_s and not s.workload.simulated:
        x = x * load.latency_s / (load.latency_s + req_s)
    # every request's first token is late by it: the percentiles move with the mean
    extra = {k: (x_ + req_s if k in ("ttft_p50_s", "ttft_p99_s") and x_ is not None else x_)
             for k, x_ in load.extra.items()}
    return _Load(load.ttft_s + req_s, load.tpot_s, load.latency_s + req_s, x, load.fits, extra)


def _setup(deployment: Deployment, workload: Workload, engine: Engine | None) -> _Setup:
    """The resolved engine, formats and attention-DP choice of one deployment and workload."""
    engine = deployment.resolved_engine() if engine is None else engine
    return _Setup(deployment, workload, engine, *_formats(deployment, engine),
                  deployment.attention_dp_on(engine))


def most_running(deployment: Deployment, workload: Workload,
                 engine: Engine | None = None) -> Figure:
    """The most requests one instance runs at once: what its memory holds after the weights,
    under the engine's running-sequence cap; :func:`predict`'s concurrency when the workload
    gives none, from the memory stage alone [-].

    Parameters
    ----------
    deployment, workload, engine
        As :func:`predict` (the workload's lengths; its concurrency is not read).

    Returns
    -------
    int or array
        Sequences in flight per instance [-], one per layout of the deployment.
    """
    return _memory(_setup(deployment, workload, engine)).most_running()


def predict(deployment: Deployment, workload: Workload,
            engine: Engine | None = None) -> ServePrediction:
    """Memory and times of serving a deployment under a workload.

    The stages: the formats, the memory of one instance and the sequences it holds, the
    concurrency served, the step times (prefill, decode), the steady closed loop
    (:func:`llmcost.serving.latency.closed_loop`) or, for a benchmark run, the engine's steps
    simulated (:func:`llmcost.serving.scheduler.simulate`), the saturation rate and the
    client's time outside the engine.

    Parameters
    ----------
    deployment : Deployment
        The model, GPU, layout (tp, ep: scalars or arrays that broadcast), formats and engine.
    workload : Workload
        Lengths, concurrency (None: the most the memory and the engine's cap allow) and the
        benchmark run, if any.
    engine : Engine or None
        The engine's constants to run with (a fit's); None: the deployment's engine with its
        scheduler settings resolved for its GPU and TP (:meth:`Deployment.resolved_engine`).

    Returns
    -------
    ServePrediction
        TTFT, TPOT and latency [s], output tokens/s per GPU, memory per GPU [bytes], ...

    References
    ----------
    .. [1] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
       Sarathi-Serve", OSDI 2024; Kwon et al., "Efficient Memory Management for Large
       Language Model Serving with PagedAttention", SOSP 2023.
    """
    s = _setup(deployment, workload, engine)
    memory = _memory(s)
    c, fits = _concurrency(s, memory)
    steps = _Steps.build(s, memory)
    t_pre, t_dec = steps.prefill_s(), steps.decode_step_s(c)
    load = _steady(s, c, t_pre, t_dec, fits)
    rate = workload.request_rate
    shape = np.broadcast(c, t_pre, t_dec, 1.0 if rate is None else rate).shape
    sat = _saturation(steps, shape)
    if workload.simulated:
        load = _benchmark(steps, c, shape, load)
    load = _client_overhead(s, load)
    return ServePrediction(
        ttft_s=load.ttft_s, tpot_s=load.tpot_s, latency_s=load.latency_s,
        output_tokens_per_s_per_gpu=load.output_tokens_per_s_per_gpu, concurrency=c,
        max_concurrency=memory.max_concurrency, fits=load.fits,
        weights_bytes_per_gpu=memory.weights_bytes_per_gpu,
        kv_bytes_per_token=memory.kv_bytes_per_token,
        kv_bytes_per_gpu=memory.kv_bytes_per_sequence_per_gpu,
        activation_bytes_per_gpu=memory.activation_bytes_per_gpu, prefill_s=t_pre,
        decode_step_s=t_dec, kv_format=s.kv_format, weight_format=s.weight_format,
        attention_dp=s.attention_dp, load_shape=workload.load_shape,
        saturation_requests_per_s=sat, **load.extra)
