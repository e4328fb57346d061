"""One serving layout of a model on a GPU: memory, TTFT, TPOT, throughput (vectorized over
tp, ep and concurrency arrays). Composes :mod:`llmcost.serving.memory`, :mod:`llmcost.serving.latency` and
:mod:`llmcost.training.comm`; the model and GPU are the catalog's ModelSpec and GPUSpec."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from ..training import comm
from ..training.arch import ModelSpec
from ..training.hardware import FabricSpec, GPUSpec
from . import latency as lat
from . import memory as mem
from . import scheduler as sched
from .engines import Engine

ACT_BYTES = 2.0
#: generations whose tensor cores run FP4 at twice the FP8 rate (NVIDIA Blackwell datasheet:
#: B200 dense FP4 9 PFLOP/s = 2 x FP8 4.5)
FP4_GENERATIONS = ("blackwell",)


class ServePrediction(NamedTuple):
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    latency_s: np.ndarray
    output_tokens_per_s_per_gpu: np.ndarray
    concurrency: np.ndarray
    max_concurrency: np.ndarray
    fits: np.ndarray
    weights_bytes_per_gpu: np.ndarray
    kv_bytes_per_token: float
    kv_bytes_per_gpu: np.ndarray
    activation_bytes_per_gpu: np.ndarray
    prefill_s: np.ndarray
    decode_step_s: np.ndarray
    kv_format: str
    weight_format: str
    attention_dp: bool
    #: "steady" (closed loop at a fixed concurrency, closed form), "concurrency" (a benchmark
    #: of N prompts at a client concurrency), "rate" or "burst" (simulated step by step)
    load_shape: str = "steady"
    ttft_p50_s: np.ndarray | None = None
    ttft_p99_s: np.ndarray | None = None
    #: mean wait from arrival to the first prefill chunk [s]
    queue_s: np.ndarray | None = None
    #: sequences decoding in a step, time-weighted mean [-]
    running_batch: np.ndarray | None = None
    achieved_requests_per_s: np.ndarray | None = None
    #: the arrival rate the instance sustains: beyond it the queue grows without bound [1/s]
    saturation_requests_per_s: np.ndarray | None = None


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


def predict(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, engine: Engine, *,
            isl: int, osl: int, tp: ArrayLike = 1, ep: ArrayLike = 1, weights: str = "bf16",
            expert_weights: str | None = None, kv: str | None = None,
            concurrency: ArrayLike | None = None, attention_dp: bool | None = None,
            requests: int | None = None, request_rate: ArrayLike | None = None,
            length_spread: float | tuple[float, float] = 0.0) -> ServePrediction:
    """Memory and times of serving ``model`` on instances of ``tp`` GPUs.

    ``concurrency`` None: the most the memory and the engine's batch cap allow (the offline
    maximum-throughput regime). ``ep`` splits routed experts over ep GPUs (ep divides tp);
    ``attention_dp`` None: the engine's default for MoE models.

    Load shapes: with neither ``requests`` nor ``request_rate``, the steady closed loop at
    ``concurrency`` (closed form, :func:`llmcost.serving.latency.closed_loop`); otherwise the
    engine's steps are simulated (:func:`llmcost.serving.scheduler.simulate`) for a benchmark
    of ``requests`` prompts: at a client ``concurrency`` (the first C sent at once, one more
    as each completes), at ``request_rate`` Poisson arrivals per second, or, with neither,
    all at once (a burst). ``length_spread``: how far the simulated requests' lengths spread
    about ``isl`` and ``osl`` (:func:`llmcost.serving.scheduler.request_lengths`)."""
    fmt = mem.weight_format(weights)
    efmt = mem.weight_format(expert_weights) if expert_weights else fmt
    kvf = kv or engine.kv_format(fmt)
    v.choice("kv", kvf, tuple(mem.KV_FORMATS))
    isl = v.integer("isl", isl)  # type: ignore[assignment]  # a 0-d int array, used as the int
    osl = v.integer("osl", osl)  # type: ignore[assignment]  # a 0-d int array, used as the int
    # one instance lives in one NVLink domain (the comm model prices NVLink only)
    t = v.integer("tp", tp, maximum=gpu.scale_up_domain)
    if np.any(model.heads % np.asarray(t)):
        raise v.InputError("tp", f"tp must divide the {model.heads} attention heads of "
                                 f"{model.id}, got tp={int(np.asarray(t).flat[0])}")
    e = v.integer("ep", ep, maximum=4096)
    if np.any(np.asarray(t) % np.asarray(e)):
        raise v.InputError("ep", f"ep must divide tp, got ep={int(np.max(e))} with "
                                 f"tp={int(np.min(t))}")
    if not model.is_moe and np.any(np.asarray(e) > 1):
        raise v.InputError("ep", f"ep applies to MoE models; {model.id} is dense")
    adp = (engine.attention_dp_moe and model.is_moe) if attention_dp is None else bool(attention_dp)
    # ModelSpec.__post_init__ fills kv_heads and ffn_hidden
    assert model.kv_heads is not None and model.ffn_hidden is not None
    dense_p, expert_p, vocab_p = mem.model_weight_split(model)
    w_gpu = mem.weights_bytes_per_gpu(dense_p, expert_p, vocab_p, t, fmt, efmt, adp)

    ctx_max = isl + osl
    ctx_mean = isl + osl / 2.0
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
    m_bytes = gpu.memory_bytes
    phi: float | np.ndarray = engine.memory_fraction
    if engine.fraction_of_free:     # TRT-LLM: a share of what weights and activations leave
        phi = np.clip((phi * np.maximum(m_bytes - w_gpu - act, 0) + w_gpu + act) / m_bytes,
                      1e-9, 1.0)
    c_max = mem.max_concurrency(m_bytes, w_gpu, act, kv_seq_gpu, phi, seqs_per_gpu)
    if concurrency is None:
        c = np.maximum(np.minimum(c_max, cap) if cap is not None else c_max, 1.0)
    else:
        c = v.integer("concurrency", concurrency, maximum=10**7) * np.ones_like(c_max)
    # beyond the engine's running-sequence cap requests queue: not that concurrency served
    fits = (c_max >= c) & (c_max >= 1) & ((c <= cap) if cap is not None else True)

    # mixed formats (gpt-oss: BF16 attention, MXFP4 experts): the slower rate, conservatively
    peak = min(compute_peak_tflops(gpu, fmt), compute_peak_tflops(gpu, efmt))
    if gpu.generation in FP4_GENERATIONS and "fp4" in fmt + efmt:
        # FP4 GEMMs reach a smaller share of their doubled peak than FP8 ones of theirs
        peak = peak * engine.fp4_efficiency
    hbm = gpu.hbm_bandwidth_tb_per_s
    L, h, V = model.layers, model.hidden, model.vocab
    win_l = model.window_layers if model.attention_window else 0
    win = model.attention_window
    p_mm = model.active_matmul_params_per_layer * L

    # ---- communication per forward: TP all-reduces, EP all-to-all (NVLink domain)
    bw, alpha, eff = scale_up.bandwidth_gb_per_s_per_gpu, scale_up.latency_us, scale_up.efficiency
    lm = model.moe_layers
    ep_on = np.asarray(e) > 1
    n_ar = 2.0 * (L - lm) + lm * np.where(ep_on, 1.0, 2.0)

    def comm_s(tokens: float | np.ndarray) -> float | np.ndarray:
        # the engine's own cost per collective (launch, barrier) beside the link's latency
        ar = comm.tree_allreduce_time_s(tokens * h * ACT_BYTES, t, bw, alpha, eff) + \
            np.where(t > 1, engine.collective_latency_us * 1e-6, 0.0)
        a2a_bytes = tokens / np.where(adp, t, 1) * model.moe_top_k * h * ACT_BYTES * (e - 1) / e
        a2a = 2.0 * lm * (a2a_bytes / (bw * 1e9 * eff) + (e - 1) * alpha * 1e-6)
        return n_ar * ar + np.where(ep_on, a2a, 0.0)

    # ---- prefill of one prompt: compute-bound, attention quadratic in isl
    qk, vd = _attention_dims(model, decode=False)
    f_pre = lat.prefill_flops(p_mm, L, model.heads, qk, vd, isl, win_l, win) + 2.0 * V * h
    # routed-expert GEMMs run below the dense ones (grouped GEMMs, load imbalance): their
    # FLOPs count 1 / moe_efficiency times
    p_exp = float(model.active_expert_params)
    moe_extra = 2.0 * p_exp * (1.0 / engine.moe_efficiency - 1.0)
    f_pre = f_pre + moe_extra * isl
    t_pre = lat.roofline_time_s(f_pre / t, w_gpu, peak, hbm, engine.prefill_efficiency,
                                engine.memory_efficiency) + comm_s(isl)

    # ---- one decode step of c sequences: weights + KV over HBM, or compute at large batch
    qk_d, vd_d = _attention_dims(model, decode=True)
    expert_gpu = mem.weights_bytes_per_gpu(0, expert_p, 0, t, fmt, efmt)
    f_dec_seq = (2.0 * p_mm + moe_extra + 2.0 * V * h + lat.attention_flops_per_token(
        L, model.heads, qk_d, vd_d, ctx_mean, win_l, win)) / t

    def t_dec_of(cc: float | np.ndarray) -> float | np.ndarray:
        # the c tokens of a step route over all of the instance's experts
        w_read = w_gpu - expert_gpu * (1.0 - lat.expert_read_fraction(cc, model.moe_experts,
                                                                      model.moe_top_k))
        kv_read = cc * mem.model_kv_bytes_per_sequence(model, ctx_mean, kvf, 1) * shard \
            / seqs_per_gpu
        return lat.roofline_time_s(cc * f_dec_seq, w_read + kv_read, peak, hbm,
                                   engine.decode_compute_efficiency, engine.memory_efficiency) \
            + comm_s(cc) + engine.step_overhead_s + cc * engine.sequence_overhead_s

    t_dec = t_dec_of(c)

    ttft, tpot, latency = lat.closed_loop(t_pre, t_dec, c, osl)
    x = lat.output_tokens_per_s_per_gpu(c, osl, latency, t)
    rate_in = None if request_rate is None else v.positive("request_rate", request_rate)
    bshape = np.broadcast(c, t_pre, t_dec, 1.0 if rate_in is None else rate_in).shape
    f_pre_tok = f_pre / isl

    def step_time_s(n_p: np.ndarray, b: np.ndarray) -> np.ndarray:
        # a step's prompt chunks and decodes share the weights read and the peak
        # (Sarathi-Serve's stall-free batches)
        n_p, b = n_p.reshape(bshape), b.reshape(bshape)
        tokens = n_p + b
        w_step = w_gpu - expert_gpu * (1.0 - lat.expert_read_fraction(
            tokens, model.moe_experts, model.moe_top_k))
        kv_b = b * mem.model_kv_bytes_per_sequence(model, ctx_mean, kvf, 1) * shard \
            / seqs_per_gpu
        compute = (n_p * f_pre_tok / t / engine.prefill_efficiency
                   + b * f_dec_seq / engine.decode_compute_efficiency) / (peak * lat.TERA)
        memory_ = (w_step + kv_b) / (hbm * lat.TERA * engine.memory_efficiency)
        out = np.maximum(compute, memory_) + comm_s(tokens) + engine.step_overhead_s \
            + b * engine.sequence_overhead_s
        return np.asarray(out, dtype=float).reshape(-1)

    budget = np.broadcast_to(engine.max_batched_tokens * seqs_per_gpu, bshape)
    # the most the instance sustains: its running cap (memory, the engine), steps shared by
    # decodes and the prompts of those replacing the finished
    c_run = np.broadcast_to(np.maximum(np.minimum(c_max, cap) if cap is not None else c_max,
                                       1.0), bshape)
    sat = sched.saturation_requests_per_s(step_time_s, isl=isl, osl=osl, running=c_run,
                                          token_budget=budget)
    extra: dict[str, Any] = dict(saturation_requests_per_s=sat)
    shape_ = "steady"
    if requests is not None or request_rate is not None:
        n = int(v.integer("num_prompts", 1000 if requests is None else requests,
                          maximum=100_000))
        cap_run = np.broadcast_to(cap if cap is not None else 10**9, bshape)
        kv_tokens = np.broadcast_to(c_max * ctx_max, bshape)
        if request_rate is not None:
            shape_ = "rate"
            assert rate_in is not None    # set above from request_rate
            rate = np.broadcast_to(rate_in, bshape)
            arr = sched.poisson_arrivals_s(rate.reshape(-1), n).reshape(*bshape, n)
            sim = sched.simulate(step_time_s, isl=isl, osl=osl, n_requests=n,
                                 max_running=cap_run, token_budget=budget,
                                 kv_capacity_tokens=kv_tokens, arrivals_s=arr,
                                 length_spread=length_spread)
        elif concurrency is not None:
            shape_ = "concurrency"
            sim = sched.simulate(step_time_s, isl=isl, osl=osl, n_requests=n,
                                 max_running=cap_run, token_budget=budget,
                                 kv_capacity_tokens=kv_tokens,
                                 concurrency=np.broadcast_to(c, bshape).astype(int),
                                 length_spread=length_spread)
        else:
            shape_ = "burst"
            sim = sched.simulate(step_time_s, isl=isl, osl=osl, n_requests=n,
                                 max_running=cap_run, token_budget=budget,
                                 kv_capacity_tokens=kv_tokens, length_spread=length_spread)
        ttft, tpot, latency = sim.ttft_s, sim.tpot_s, sim.latency_s
        x = sim.output_tokens_per_s / t
        extra.update(ttft_p50_s=sim.ttft_p50_s, ttft_p99_s=sim.ttft_p99_s,
                     queue_s=sim.queue_s, running_batch=sim.running_batch,
                     achieved_requests_per_s=sim.achieved_requests_per_s)
        if concurrency is None:
            # a burst or a rate runs what fits and queues the rest: one request must fit
            fits = (c_max >= 1) & np.ones(bshape, dtype=bool)
    # the client's clock: a request's time outside the engine's steps (HTTP, tokenization)
    # (not h: comm_s reads h, the hidden size)
    req_s = engine.request_overhead_s
    if req_s and shape_ == "steady":
        # in a closed loop the client's slot waits through it too (Little's law)
        x = x * latency / (latency + req_s)
    ttft, latency = ttft + req_s, latency + req_s
    # every request's first token is late by it: the percentiles move with the mean
    for k in ("ttft_p50_s", "ttft_p99_s"):
        if extra.get(k) is not None:
            extra[k] = extra[k] + req_s
    # the fields say np.ndarray; a scalar layout gives numpy scalars (the formulas' float | np.ndarray)
    return ServePrediction(ttft_s=ttft, tpot_s=tpot, latency_s=latency,  # type: ignore[arg-type]
                           output_tokens_per_s_per_gpu=x, concurrency=c,  # type: ignore[arg-type]
                           max_concurrency=c_max, fits=fits,  # type: ignore[arg-type]
                           weights_bytes_per_gpu=w_gpu, kv_bytes_per_token=kv_token,  # type: ignore[arg-type]
                           kv_bytes_per_gpu=kv_seq_gpu, activation_bytes_per_gpu=act,  # type: ignore[arg-type]
                           prefill_s=t_pre, decode_step_s=t_dec,  # type: ignore[arg-type]
                           kv_format=kvf, weight_format=fmt, attention_dp=adp, load_shape=shape_, **extra)
