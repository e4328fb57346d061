"""The inputs of a serving prediction, grouped as serving engines and their benchmarks group
them: a :class:`Deployment` is what an engine is launched with (vLLM's ``EngineArgs``,
SGLang's ``ServerArgs``: the model, the GPU, the tensor- and expert-parallel sizes, the
weight and KV-cache formats, the engine and its scheduler settings); a :class:`Workload` is
the load a benchmark client sends (``benchmark_serving.py``: prompt and output lengths, the
client's concurrency, the prompts of a run, a request rate, how far the lengths spread);
:class:`Search` is what the serving planner tries and the latency limits it keeps to.

Each group checks its values once, when it is built: bad input raises
:class:`llmcost.InputError` naming the parameter. Values that may vary (tp, ep, concurrency,
request rate) are scalars or numpy arrays that broadcast against one another.

References
----------
1. vLLM ``vllm/engine/arg_utils.py`` ``EngineArgs`` (``tensor_parallel_size``, ``dtype``,
   ``kv_cache_dtype``, ``max_num_seqs``, ``max_num_batched_tokens``,
   ``gpu_memory_utilization``); ``benchmarks/benchmark_serving.py`` (``--random-input-len``,
   ``--random-output-len``, ``--max-concurrency``, ``--num-prompts``, ``--request-rate``,
   ``--random-range-ratio``).
2. SGLang ``python/sglang/srt/server_args.py`` ``ServerArgs`` (``tp_size``, ``ep_size``,
   ``enable_dp_attention``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .. import _validate as v
from . import engines
from . import memory as mem

if TYPE_CHECKING:
    from ..training.arch import ModelSpec
    from ..training.hardware import FabricSpec, GPUSpec
    from .engines import Engine


@dataclass(frozen=True)
class Deployment:
    """One serving instance as an engine is launched: model, GPU, layout, formats, engine.

    Parameters
    ----------
    model : ModelSpec
        The model served (the catalog's ModelSpec).
    gpu : GPUSpec
        The GPU of every rank.
    scale_up : FabricSpec
        The GPU's NVLink (scale-up) fabric: one instance lives in one such domain.
    tp : int or array
        Tensor-parallel size, GPUs per instance [-]; divides the attention heads, at most
        the GPU's scale-up domain. Stored as an int64 array.
    ep : int or array
        Expert-parallel size [-]: routed experts split over ep of the tp GPUs (divides tp;
        above 1 on MoE models only). Stored as an int64 array.
    weights : str
        Weight format (:data:`llmcost.serving.memory.WEIGHT_CHOICES`).
    expert_weights : str or None
        Routed experts' weight format; None: as ``weights``.
    kv : str or None
        KV-cache element (:data:`llmcost.serving.memory.KV_FORMATS`); None: the engine's
        default for the weights (``kv_cache_dtype`` auto).
    attention_dp : bool or None
        Attention data-parallel over the tp GPUs (SGLang's ``--enable-dp-attention``);
        None: the engine's default for MoE models.
    engine : str
        Engine preset (:data:`llmcost.serving.engines.ENGINES`).
    settings : mapping or None
        The engine's scheduler keys (:data:`llmcost.serving.engines.KEYS`: max_num_seqs,
        max_num_batched_tokens, gpu_memory_utilization) over its defaults for this GPU and
        TP.
    """

    model: ModelSpec
    gpu: GPUSpec
    scale_up: FabricSpec
    tp: int | np.ndarray = 1
    ep: int | np.ndarray = 1
    weights: str = "bf16"
    expert_weights: str | None = None
    kv: str | None = None
    attention_dp: bool | None = None
    engine: str = "vllm"
    settings: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        engines.engine(self.engine)
        mem.weight_format(self.weights)
        if self.expert_weights:
            v.choice("expert_weights", self.expert_weights, mem.WEIGHT_CHOICES)
        if self.kv:
            v.choice("kv", self.kv, tuple(mem.KV_FORMATS))
        model = self.model
        # one instance lives in one NVLink domain (the comm model prices NVLink only)
        tp = v.integer("tp", self.tp, maximum=self.gpu.scale_up_domain)
        if np.any(model.heads % tp):
            raise v.InputError("tp", f"tp must divide the {model.heads} attention heads of "
                                     f"{model.id}, got tp={int(tp.flat[0])}")
        ep = v.integer("ep", self.ep, maximum=4096)
        if np.any(tp % ep):
            raise v.InputError("ep", f"ep must divide tp, got ep={int(np.max(ep))} with "
                                     f"tp={int(np.min(tp))}")
        if not model.is_moe and np.any(ep > 1):
            raise v.InputError("ep", f"ep applies to MoE models; {model.id} is dense")
        object.__setattr__(self, "tp", tp)
        object.__setattr__(self, "ep", ep)
        if self.attention_dp is not None:
            object.__setattr__(self, "attention_dp", bool(self.attention_dp))

    @property
    def weight_format(self) -> str:
        """The weights' format, aliases resolved (fp4 -> nvfp4)."""
        return mem.weight_format(self.weights)

    @property
    def expert_weight_format(self) -> str:
        """The routed experts' format: ``expert_weights``, else the weights'."""
        return mem.weight_format(self.expert_weights) if self.expert_weights \
            else self.weight_format

    def attention_dp_on(self, engine: Engine | None = None) -> bool:
        """Whether attention runs data-parallel: as given, else ``engine``'s default (the
        deployment's preset when None) for MoE models."""
        if self.attention_dp is not None:
            return self.attention_dp
        preset = engines.engine(self.engine) if engine is None else engine
        return preset.attention_dp_moe and self.model.is_moe

    def resolved_engine(self) -> Engine:
        """The engine preset with its scheduler settings for this GPU and TP (SGLang's memory
        share follows the TP) and ``settings`` over them (:func:`engines.resolve`)."""
        return engines.resolve(self.engine, self.gpu, self.tp, self.attention_dp_on(),
                               **(self.settings or {}))


@dataclass(frozen=True)
class Workload:
    """The load on one instance, as a serving benchmark sends it.

    With neither ``requests`` nor ``request_rate``: the steady closed loop at
    ``concurrency`` (closed form). Otherwise a benchmark run of ``requests`` prompts,
    simulated step by step: at a client ``concurrency`` (the first C sent at once, one more
    as each completes), at ``request_rate`` Poisson arrivals per second, or, with neither,
    all at once (a burst).

    Parameters
    ----------
    isl : int
        Input (prompt) tokens per request [tokens].
    osl : int
        Output tokens per request [tokens].
    concurrency : int or array or None
        Requests in flight [-]; None: the most the memory and the engine's cap allow (the
        offline maximum-throughput regime). Stored as an int64 array.
    requests : int or None
        Prompts a benchmark run sends (``--num-prompts``) [-]; None with a
        ``request_rate``: 1,000.
    request_rate : float or array or None
        Poisson arrivals per second [1/s] (``--request-rate``).
    length_spread : float or (float, float)
        How far the simulated requests' prompt and output lengths spread about ``isl`` and
        ``osl``, one for both or each, in [0, 0.99] [-]
        (:func:`llmcost.serving.scheduler.request_lengths`).
    """

    isl: int
    osl: int
    concurrency: int | np.ndarray | None = None
    requests: int | None = None
    request_rate: float | np.ndarray | None = None
    length_spread: float | tuple[float, float] = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "isl", int(v.integer("isl", self.isl)))
        object.__setattr__(self, "osl", int(v.integer("osl", self.osl)))
        if self.concurrency is not None:
            object.__setattr__(self, "concurrency",
                               v.integer("concurrency", self.concurrency, maximum=10**7))
        if self.requests is not None:
            object.__setattr__(self, "requests",
                               int(v.integer("num_prompts", self.requests, maximum=100_000)))
        if self.request_rate is not None:
            object.__setattr__(self, "request_rate",
                               v.positive("request_rate", self.request_rate))
        v.in_range("length_spread", self.length_spread, 0.0, 0.99)

    @property
    def simulated(self) -> bool:
        """Whether the load is a benchmark run, simulated step by step."""
        return self.requests is not None or self.request_rate is not None

    @property
    def load_shape(self) -> str:
        """"steady", or the benchmark's shape: "rate", "concurrency" or "burst"."""
        if self.request_rate is not None:
            return "rate"
        if not self.simulated:
            return "steady"
        return "concurrency" if self.concurrency is not None else "burst"


@dataclass(frozen=True)
class Search:
    """What the serving planner (:func:`llmcost.serving.serve.plan`) tries and keeps to.

    Parameters
    ----------
    tps : sequence of int or None
        Tensor-parallel sizes to try [-] (those within the GPU's scale-up domain that divide
        the heads); None: :data:`llmcost.serving.serve.TPS`. On MoE models each TP above 1
        is tried with ep 1 and ep = tp.
    ttft_ms_max : float or None
        Mean TTFT limit [ms].
    tpot_ms_max : float or None
        Mean TPOT limit [ms].
    top : int
        Best layouts the answer lists [-].
    """

    tps: Sequence[int] | None = None
    ttft_ms_max: float | None = None
    tpot_ms_max: float | None = None
    top: int = 5

    def __post_init__(self) -> None:
        if self.ttft_ms_max is not None:
            v.positive("ttft_ms_max", self.ttft_ms_max)
        if self.tpot_ms_max is not None:
            v.positive("tpot_ms_max", self.tpot_ms_max)
        object.__setattr__(self, "top", int(v.integer("top", self.top, minimum=0)))
