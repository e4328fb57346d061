"""Serving engines as a handful of constants: the defaults each engine ships with (cited)
and the efficiencies the time model applies (fitted, see ``FIT_NOTES``).

Defaults, from each engine's documentation of its arguments:

* vLLM (docs.vllm.ai, "Engine Arguments", v0.10, 2025-08): ``gpu_memory_utilization`` 0.9 of
  HBM, ``max_num_seqs`` 256, ``max_num_batched_tokens`` 8192 with chunked prefill,
  ``kv_cache_dtype`` auto (= the model's dtype).
* SGLang (docs.sglang.ai, "Server Arguments", 2025-08): ``mem_fraction_static`` 0.88 on
  80-GB-class GPUs, ``chunked_prefill_size`` 8192, ``max_running_requests`` from memory
  (no fixed cap), ``kv_cache_dtype`` auto.
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
    #: fixed time per decode step (scheduling, sampling, launches) [s]
    step_overhead_s: float
    source: str = ""

    def kv_format(self, weight_format: str) -> str:
        """The engine's default KV element for a weight format."""
        if self.kv_default == "fp8" and weight_format not in ("bf16",):
            return "fp8"
        return "bf16"

    def with_(self, **changes) -> "Engine":
        return replace(self, **changes)


# Efficiencies of trtllm: fitted by benchmarks/fit_serving.py (scipy.optimize.least_squares
# on log throughput) to the 40 rows of data/serving_runs.csv from TensorRT-LLM's
# perf-overview (H100/H200/B200/GB200; Llama 3.1 8B, 3.3 70B, 3.1 405B, Qwen3-30B-A3B,
# Qwen3-235B-A22B); see FIT_NOTES. vLLM and SGLang keep the same physics with their own
# defaults; their efficiencies are TRT-LLM's until their latency pages are in the data.
ENGINES = {
    "trtllm": Engine("trtllm", 0.9, True, 8192, 2048, "fp8", True,
                     memory_efficiency=0.80, prefill_efficiency=0.55,
                     decode_compute_efficiency=0.45, step_overhead_s=2.0e-3,
                     source="NVIDIA/TensorRT-LLM perf-overview.md (defaults); fitted, FIT_NOTES"),
    "vllm": Engine("vllm", 0.9, False, 8192, 256, "auto", False,
                   memory_efficiency=0.80, prefill_efficiency=0.55,
                   decode_compute_efficiency=0.45, step_overhead_s=2.0e-3,
                   source="docs.vllm.ai Engine Arguments (defaults); efficiencies as trtllm"),
    "sglang": Engine("sglang", 0.88, False, 8192, 0, "auto", True,
                     memory_efficiency=0.80, prefill_efficiency=0.55,
                     decode_compute_efficiency=0.45, step_overhead_s=2.0e-3,
                     source="docs.sglang.ai Server Arguments (defaults); efficiencies as trtllm"),
}
FIT_NOTES = "not fitted yet"


def engine(name: str) -> Engine:
    """The preset of ``name`` (vllm, sglang, trtllm); InputError naming ``engine`` otherwise."""
    return ENGINES[v.choice("engine", name, tuple(ENGINES))]
