"""Serving engines as a handful of constants: the defaults each engine ships with (cited)
and the efficiencies the time model applies (fitted, see ``FIT_NOTES``).

Defaults, from each engine's documentation of its arguments:

* vLLM (docs.vllm.ai, "Engine Arguments", v0.10, 2025-08): ``gpu_memory_utilization`` 0.9 of
  HBM, ``max_num_seqs`` 256, ``max_num_batched_tokens`` 8192 with chunked prefill,
  ``kv_cache_dtype`` auto (= the model's dtype).
* SGLang (docs.sglang.ai, "Server Arguments", 2025-08): ``mem_fraction_static`` 0.88 on
  80-GB-class GPUs, ``chunked_prefill_size`` 8192, ``max_running_requests`` from memory
  (no fixed cap), ``kv_cache_dtype`` auto, DP attention off (``--enable-dp-attention``).
* TensorRT-LLM (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md, 2025-09):
  ``kv_cache_free_gpu_mem_fraction`` 0.9 of the memory left after weights and activations,
  ``max_num_tokens`` 8192, CUDA graphs to batch 8192 (the benchmark's max batch is set to
  2048 here), FP8 KV cache in ModelOpt's FP8/FP4 checkpoints, attention DP for MoE models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import _validate as v


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

    def kv_format(self, weight_format: str) -> str:
        """The engine's default KV element for a weight format."""
        if self.kv_default == "fp8" and weight_format not in ("bf16",):
            return "fp8"
        return "bf16"

    def with_(self, **changes) -> "Engine":
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
_SGLANG_FITTED = dict(decode_compute_efficiency=0.2905, memory_efficiency=0.5898,
                      step_overhead_s=4.34e-3, request_overhead_s=0.1185)
ENGINES = {
    "trtllm": Engine(id="trtllm", memory_fraction=0.95, fraction_of_free=True,
                     max_batched_tokens=8192, max_batch=2048, kv_default="fp8",
                     attention_dp_moe=True, **_FITTED,
                     source="NVIDIA/TensorRT-LLM perf-overview.md: defaults and the 0.95 KV "
                            "share its runs use; efficiencies fitted (FIT_NOTES)"),
    "vllm": Engine(id="vllm", memory_fraction=0.9, fraction_of_free=False, max_batched_tokens=8192,
                   max_batch=256, kv_default="auto", attention_dp_moe=False,
                   **{**_FITTED, **_VLLM_DECODE},
                   source="docs.vllm.ai Engine Arguments (defaults); decode constants solved "
                          "from vLLM's latency benchmark; other efficiencies as trtllm"),
    "sglang": Engine(id="sglang", memory_fraction=0.88, fraction_of_free=False,
                     max_batched_tokens=8192, max_batch=0, kv_default="auto",
                     attention_dp_moe=False, **{**_FITTED, **_VLLM_DECODE, **_SGLANG_FITTED},
                     source="docs.sglang.ai Server Arguments (defaults); decode, HBM, step "
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
