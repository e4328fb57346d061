"""Serving engines as a handful of constants: the scheduler settings each engine ships with
(cited, for a stated version) and the efficiencies the time model applies (fitted, see
``FIT_NOTES``).

Scheduler defaults, from each engine's own code or documentation of its arguments; where they
depend on the GPU's memory or the TP, :func:`settings` follows the engine's rule:

* vLLM 0.10 (V1 engine, ``vllm serve``; vllm/engine/arg_utils.py ``_set_default_args_v1``,
  the same rule in later releases' ``get_batch_defaults``): ``gpu_memory_utilization`` 0.9 of
  HBM; on GPUs of 70 GiB or more other than A100 ``max_num_seqs`` 1024 and
  ``max_num_batched_tokens`` 8192, on the others 256 and 2048 (chunked prefill on);
  ``kv_cache_dtype`` auto (= the model's dtype).
* SGLang 0.5.4 (python/sglang/srt/server_args.py ``_handle_gpu_memory_settings``, October
  2025): ``chunked_prefill_size`` 2048 below 35 GiB, 4096 below 60, 8192 below 160, 16384
  above; ``mem_fraction_static`` = 1 - reserved / HBM, reserved = 512 MiB + 1.5 x the chunk +
  2 x ``cuda_graph_max_bs`` + TP / 8 GiB (at least 10 GiB above 60 GiB of HBM);
  ``max_running_requests`` unset: the KV pool limits it; ``kv_cache_dtype`` auto; DP attention
  off (``--enable-dp-attention``).
* TensorRT-LLM 1.0 (tensorrt_llm/llmapi/llm_args.py; perf-overview.md, 2025-09):
  ``max_batch_size`` 2048, ``max_num_tokens`` 8192; ``kv_cache_free_gpu_mem_fraction`` 0.9 of
  the memory left after weights and activations (KvCacheConfig), 0.95 as trtllm-bench runs
  the perf-overview tables the efficiencies are fitted to (the preset follows those); FP8 KV
  cache in ModelOpt's FP8/FP4 checkpoints, attention DP for MoE models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

if TYPE_CHECKING:
    from ..training.hardware import GPUSpec


@dataclass(frozen=True)
class Engine:
    """One serving engine's defaults and efficiencies."""

    id: str
    #: share of HBM the engine takes for weights, activations and KV cache [-]
    memory_fraction: float
    #: True: ``memory_fraction`` is a share of what weights and activations leave (TRT-LLM)
    fraction_of_free: bool
    #: token budget of one step (chunked prefill) [tokens]
    max_batched_tokens: int
    #: cap on running sequences per instance [-]; 0: memory alone limits it
    max_batch: int
    #: KV element by default: "auto" follows the weights (bf16) or "fp8" on quantized weights
    kv_default: str
    #: attention data-parallel on MoE models by default
    attention_dp_moe: bool
    #: achieved share of HBM bandwidth in decode [-]
    memory_efficiency: float
    #: achieved share of the dense peak in prefill [-]
    prefill_efficiency: float
    #: achieved share of the dense peak in decode GEMMs [-]
    decode_compute_efficiency: float
    #: fixed time per decode step (scheduling, sampling) [s]
    step_overhead_s: float
    #: time per running sequence per decode step beyond the roofline (host-side scheduling,
    #: sampling, detokenization; padding of the batch) [s]
    sequence_overhead_s: float = 0.0
    #: the engine's time per tensor-parallel collective beyond the link model [us]
    collective_latency_us: float = 0.0
    #: share of the FP8 GEMM efficiency that FP4 GEMMs reach on their doubled peak [-]
    fp4_efficiency: float = 1.0
    #: share of the dense GEMM efficiency that routed-expert GEMMs reach [-]: it stands for all
    #: an MoE step costs beyond its active FLOPs (router, all-to-all, imbalance, small GEMMs)
    moe_efficiency: float = 1.0
    #: time a request spends outside the engine's steps, in its TTFT and its latency: the
    #: HTTP round trip, tokenization, the scheduler's admission and the first detokenization
    #: (a benchmark client measures from sending to the first streamed token) [s]
    request_overhead_s: float = 0.0
    source: str = ""
    #: the release whose defaults the preset takes
    version: str = ""
    #: where the engine's defaults differ by GPU memory, TP or use, which the preset follows
    follows: str = ""

    def kv_format(self, weight_format: str) -> str:
        """The engine's default KV element for a weight format."""
        if self.kv_default == "fp8" and weight_format not in ("bf16",):
            return "fp8"
        return "bf16"

    def with_(self, **changes: Any) -> "Engine":
        return replace(self, **changes)


# Fitted (llmcost.serving.calibrate.fit, least squares on log(predicted / measured)) to the 147
# trtllm rows of data/serving_runs.csv: FIT_NOTES says how well. memory_efficiency 0.8 and
# step_overhead_s 1 ms are assumptions: throughput at batches of hundreds does not identify them.
_FITTED = dict(memory_efficiency=0.8, prefill_efficiency=0.488, decode_compute_efficiency=0.440,
               step_overhead_s=1.0e-3, sequence_overhead_s=1.43e-5, moe_efficiency=0.310,
               fp4_efficiency=0.583)
# vLLM's decode constants solved from its own latency benchmark (2 rows of data/serving_runs.csv,
# 2 constants: exact, no residual); SGLang takes them too (an assumption).
_VLLM_DECODE = dict(step_overhead_s=1.93e-3, collective_latency_us=21.3)
# SGLang's decode, HBM share, step time and request time: fitted (benchmarks/serving_check.py
# --fit, least squares on log(predicted / published)) to the 24 points of the SGLang cookbook
# (DeepSeek-R1 and Qwen3-235B on 8 B200, Llama 3.1 70B on 8 A100; concurrency 1-100; mean TTFT,
# TPOT and throughput), prefill kept at the trtllm fit (freed, it runs to its bound, 0.95,
# standing in for the first wave the benchmarks' long prompts do not show). In sample: TPOT
# 11.5%, output tokens/s per GPU 11.4%, TTFT 73% (Llama 70B on A100 at concurrency 16-100
# reads 2-4x high). Not judged out of sample: no other source prints SGLang's mean latencies.
#: the published SGLang points the fit used (data/serving_measurements.csv)
SGLANG_FIT_POINTS = 24
#: the GPUs of every row a serving constant was fitted to: TensorRT-LLM's perf overview and
#: vLLM's latency rows (data/serving_runs.csv), the SGLang cookbook's points; on any other
#: GPU the figures are the physics at these constants, uncalibrated (a test recomputes it)
MEASURED_GPUS = ("a100-80gb", "b200", "gb200", "h100-sxm", "h200")


def gpu_calibration_note(gpu_id: str) -> str | None:
    """The note for a GPU no serving constant was fitted on, else None."""
    if gpu_id in MEASURED_GPUS:
        return None
    return (f"no serving measurement on {gpu_id} is in the fits (they hold "
            f"{', '.join(MEASURED_GPUS)}): its TTFT, TPOT and throughput are the physics at "
            "those GPUs' constants, uncalibrated; compare it with a measured GPU only on a "
            "measurement of your own")
_SGLANG_FITTED = dict(decode_compute_efficiency=0.2905, memory_efficiency=0.5898,
                      step_overhead_s=4.34e-3, request_overhead_s=0.1185)
ENGINES = {
    "trtllm": Engine(id="trtllm", memory_fraction=0.95, fraction_of_free=True,
                     max_batched_tokens=8192, max_batch=2048, kv_default="fp8",
                     attention_dp_moe=True, **_FITTED, version="1.0",
                     follows="trtllm-bench as the perf-overview tables run it: "
                             "kv_cache_free_gpu_mem_fraction 0.95 (the LLM API's default 0.9)",
                     source="NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py (max_batch_size "
                            "2048, max_num_tokens 8192), docs KvCacheConfig (0.9), "
                            "perf-overview.md (0.95 in its runs); efficiencies fitted (FIT_NOTES)"),
    "vllm": Engine(id="vllm", memory_fraction=0.9, fraction_of_free=False, max_batched_tokens=8192,
                   max_batch=1024, kv_default="auto", attention_dp_moe=False,
                   **{**_FITTED, **_VLLM_DECODE}, version="0.10",
                   follows="vllm serve (the OpenAI server's defaults, V1 engine): max_num_seqs "
                           "1024 and max_num_batched_tokens 8192 on GPUs of 70 GiB or more other "
                           "than A100, 256 and 2048 on the others",
                   source="vllm-project/vllm vllm/engine/arg_utils.py _set_default_args_v1 "
                          "(v0.10; docs.vllm.ai Engine Arguments: gpu_memory_utilization 0.9); "
                          "decode constants solved from vLLM's latency benchmark; other "
                          "efficiencies as trtllm"),
    "sglang": Engine(id="sglang", memory_fraction=0.88, fraction_of_free=False,
                     max_batched_tokens=8192, max_batch=0, kv_default="auto",
                     attention_dp_moe=False, **{**_FITTED, **_VLLM_DECODE, **_SGLANG_FITTED},
                     version="0.5.4",
                     follows="python -m sglang.launch_server: chunked_prefill_size and "
                             "mem_fraction_static by the GPU's memory and the TP "
                             "(_handle_gpu_memory_settings), max_running_requests unset",
                     source="sgl-project/sglang python/sglang/srt/server_args.py "
                            "_handle_gpu_memory_settings (v0.5.4, 2025-10); decode, HBM, step "
                            "and request constants fitted to the SGLang cookbook's benchmarks "
                            "(data/serving_measurements.csv), prefill as trtllm"),
}
#: what the efficiencies were fitted to and how well (output tokens/s per GPU)
FIT_NOTES = ("trtllm efficiencies fitted to 147 TensorRT-LLM perf-overview throughput rows "
             "(data/serving_runs.csv): mean |error| 18.8%, median 13.9%, by model and GPU "
             "from -17% to +36%")
#: the constants the fit moves; the others are defaults or stated assumptions
FITTED = ("prefill_efficiency", "decode_compute_efficiency", "sequence_overhead_s",
          "moe_efficiency", "fp4_efficiency")


def engine(name: str) -> Engine:
    """The preset of ``name`` (vllm, sglang, trtllm); InputError naming ``engine`` otherwise."""
    return ENGINES[v.choice("engine", name, tuple(ENGINES))]


# ---------------------------------------------------------------- scheduler settings
#: the scheduler keys a serve query takes (vLLM's names) -> the Engine field each sets
KEYS = {"max_num_seqs": "max_batch", "max_num_batched_tokens": "max_batched_tokens",
        "gpu_memory_utilization": "memory_fraction"}
#: each engine's own name of each key
ENGINE_KEYS = {
    "vllm": {"max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
             "gpu_memory_utilization": "gpu_memory_utilization"},
    "sglang": {"max_num_seqs": "max_running_requests",
               "max_num_batched_tokens": "chunked_prefill_size",
               "gpu_memory_utilization": "mem_fraction_static"},
    "trtllm": {"max_num_seqs": "max_batch_size", "max_num_batched_tokens": "max_num_tokens",
               "gpu_memory_utilization": "kv_cache_free_gpu_mem_fraction"},
}
#: what each engine's memory setting is a share of
MEMORY_SHARE_OF = {"vllm": "the GPU's memory", "sglang": "the GPU's memory (weights and KV "
                   "cache)", "trtllm": "the memory weights and activations leave (KV cache)"}
_GIB = 2 ** 30


def _sglang_defaults(gpu_mib: float, tp: ArrayLike, attention_dp: bool) -> tuple[int, float | np.ndarray]:
    """SGLang 0.5.4's chunked_prefill_size, cuda_graph_max_bs and mem_fraction_static for a
    GPU of ``gpu_mib`` MiB at TP ``tp`` (scalar or array; server_args.py
    _handle_gpu_memory_settings, the CUDA branches)."""
    tp = np.asarray(tp)
    small = tp < 4
    if gpu_mib < 20 * 1024:
        chunk, bs = 2048, np.full(tp.shape, 8)
    elif gpu_mib < 35 * 1024:
        chunk, bs = 2048, np.where(small, 24, 80)
    elif gpu_mib < 60 * 1024:
        chunk, bs = 4096, np.where(small, 32, 160)
    elif gpu_mib < 160 * 1024:
        chunk, bs = 8192, np.where(small, 256, 512)
    else:
        chunk, bs = 16384, np.full(tp.shape, 512)
    reserved = 512 + max(chunk, 2048) * 1.5 + bs * 2 + tp / 8 * 1024
    if attention_dp:     # DP attention pads more (dp_size = tp)
        reserved = reserved + bs * tp * 3 + np.where(bs > 300, bs * tp * 1.5, 0)
    if gpu_mib > 60 * 1024:
        reserved = np.maximum(reserved, 10 * 1024)
    frac = np.round((gpu_mib - reserved) / gpu_mib, 3)
    return chunk, frac


def defaults(name: str, gpu: GPUSpec, tp: ArrayLike = 1, attention_dp: bool = False) -> dict:
    """The engine's own scheduler defaults on ``gpu`` at TP ``tp`` (scalar or array for
    the memory share): common key -> (value, the rule it follows); a cap of 0: none."""
    e = engine(name)
    mem_gib = float(gpu.memory_gib)
    if e.id == "vllm":
        big = mem_gib >= 70 and "a100" not in gpu.id.lower()
        rule = ("GPUs of 70 GiB or more other than A100" if big else
                "GPUs under 70 GiB and A100")
        return {"max_num_seqs": (1024 if big else 256, f"vllm serve default on {rule}"),
                "max_num_batched_tokens": (8192 if big else 2048,
                                           f"vllm serve default on {rule}"),
                "gpu_memory_utilization": (e.memory_fraction, "default")}
    if e.id == "sglang":
        chunk, frac = _sglang_defaults(mem_gib * 1024, tp, attention_dp)
        return {"max_num_seqs": (0, "unset: the KV cache pool limits the running requests"),
                "max_num_batched_tokens": (chunk, f"default for {mem_gib:g} GiB of HBM"),
                "gpu_memory_utilization": (frac, f"1 - reserved / HBM for {mem_gib:g} GiB at "
                                                 "this TP")}
    return {"max_num_seqs": (e.max_batch, "default"),
            "max_num_batched_tokens": (e.max_batched_tokens, "default"),
            "gpu_memory_utilization": (e.memory_fraction, "as trtllm-bench runs the "
                                                          "perf-overview (default 0.9)")}


def resolve(name: str, gpu: GPUSpec, tp: ArrayLike = 1, attention_dp: bool = False, **given: Any) -> Engine:
    """The preset of ``name`` with its scheduler settings for ``gpu`` at ``tp`` (scalar, or an
    array: SGLang's memory share follows the TP) and the keys ``given`` (common names, see
    ``KEYS``; None: the engine's default) over them."""
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise v.InputError(unknown[0], f"unknown engine setting {unknown[0]!r} (known: "
                                       f"{', '.join(KEYS)})")
    got = {KEYS[k]: value if given.get(k) is None else given[k]
           for k, (value, _) in defaults(name, gpu, tp, attention_dp).items()}
    phi = got["memory_fraction"]
    return engine(name).with_(max_batch=int(got["max_batch"]),
                              max_batched_tokens=int(got["max_batched_tokens"]),
                              memory_fraction=float(phi) if np.ndim(phi) == 0 else phi)


def settings(name: str, gpu: GPUSpec, tp: ArrayLike = 1, attention_dp: bool = False, **given: Any) -> dict:
    """The scheduler settings a serve answer used (its ``engine_settings``): per common key
    the value, the engine's own name for it, and whether it was given or the default (with
    the rule the default follows); the engine's version and which defaults the preset
    follows."""
    e = engine(name)
    out: dict[str, Any] = {"engine": e.id, "version": e.version, "follows": e.follows, "source": e.source}
    for key, (value, rule) in defaults(name, gpu, tp, attention_dp).items():
        x = given.get(key)
        item: dict[str, Any] = {"value": None, "engine_key": ENGINE_KEYS[e.id][key]}
        if x is not None:
            item.update(value=x, set_by="query")
        else:
            value = float(np.asarray(value).flat[0]) if key == "gpu_memory_utilization" \
                else int(np.asarray(value).flat[0])
            item.update(value=value or None, set_by="default", rule=rule)
        if key == "gpu_memory_utilization":
            item["share_of"] = MEMORY_SHARE_OF[e.id]
        out[key] = item
    return out


def calibration(name: str) -> str:
    """What the engine's TTFT, TPOT and throughput constants are fitted to, in a sentence."""
    e = engine(name)
    trt = FIT_NOTES.replace("trtllm efficiencies fitted", "fitted")
    if e.id == "trtllm":
        return ("Throughput: prefill, decode and MoE efficiencies " + trt + ". TTFT and TPOT "
                "are not measured in those rows: they follow from the same constants "
                "(1 ms step overhead and 80% of HBM bandwidth are assumptions).")
    if e.id == "vllm":
        return ("TPOT: vLLM's step overhead and per-collective latency solved from vLLM's "
                "own latency benchmark (2 rows, batch 8, 32 in / 128 out, H200: Llama 3 8B "
                "TP 1, 70B TP 4; exact, no residual). TTFT and throughput: TensorRT-LLM's "
                "efficiencies, " + trt + "; no vLLM TTFT or throughput is fitted.")
    return (f"TTFT, TPOT and throughput: decode, HBM, step and per-request times fitted to the "
            f"SGLang cookbook's {SGLANG_FIT_POINTS} benchmark points (DeepSeek-R1 and Qwen3-235B "
            "on 8 B200, Llama 3.1 70B on 8 A100; in sample TPOT 11.5%, throughput 11.4%, TTFT "
            "73%; no other source prints SGLang's mean latencies, so none is out of sample); "
            "prefill as TensorRT-LLM's efficiencies (" + trt + ").")
