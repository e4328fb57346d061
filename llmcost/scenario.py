"""Scenario: every assumption of a review in one validated object.

A Scenario is what a reviewer saves, shares and loads: JSON round-trip, and URL query string
round-trip (strict: unknown keys or bad values keep the default and produce a warning;
nothing is evaluated). Field metadata (type, bounds, unit, label) drives the apps' controls.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any
from urllib.parse import parse_qs, urlencode

from . import _validate as v
from . import catalog
from .economics import reliability as _rel
from .training import stacks
from .training.precision import PRECISIONS


def _f(default, lo=None, hi=None, *, label, unit="", lo_open=False, hi_open=False, step=None,
       group="run", kind="float"):
    return field(default=default, metadata=dict(kind=kind, lo=lo, hi=hi, lo_open=lo_open,
                                                hi_open=hi_open, label=label, unit=unit,
                                                step=step, group=group))


def _choice(default, table, *, label, group="run", special=()):
    """A catalog id; ``special`` values (e.g. "auto") are modes resolved by the review."""
    return field(default=default, metadata=dict(kind="choice", table=table, label=label,
                                                unit="", group=group,
                                                special=tuple(special)))


def _options(default, options, *, label, group="run", aliases=None):
    """A choice among ``options``; ``aliases`` (other name -> option) are read as the option
    they name (a link written with the CLI's spelling)."""
    return field(default=default, metadata=dict(kind="options", options=tuple(options),
                                                label=label, unit="", group=group,
                                                aliases=dict(aliases or {})))


#: tokens on the busiest expert rank over the mean, for routers balanced as 2025 MoE recipes
#: balance them (DeepSeek-V3's auxiliary-loss-free bias, arXiv:2412.19437 §2.1.2; Wang et al.
#: 2024, arXiv:2408.15664, Table 1: MaxVio under 0.1 per batch with it, against ~0.2-0.7 with an
#: auxiliary loss); assumption: 1.1 on the busiest EP rank. Switch Transformer's capacity
#: factor 1.25 (Fedus et al. 2021 §2.2) is the pre-2024 figure.
MOE_LOAD_IMBALANCE_DEFAULT = 1.1

#: space, staff, storage and maintenance per GPU-month: the cited defaults of
#: :class:`llmcost.economics.tco.OnPrem` (a test keeps the two equal).
ONPREM_OPEX_DEFAULT = 50_000.0 / 8 / 48    # $50k per node over a 4-year life


@dataclass(frozen=True)
class Scenario:
    # ---- the run
    #: a catalog id, or "config": the architecture in ``model_config`` (a Hugging Face
    #: config.json's fields, carried by a link as ``cfg.<field>=`` keys)
    model: str = _choice("llama3-70b", "models", label="Model", special=("config",))
    model_config: str = field(default="", metadata=dict(kind="text", label="Model config.json fields",
                                                        unit="", group="model"))
    tokens: float = _f(2e12, 1e6, 1e15, label="Training tokens", unit="tokens")
    gpu: str = _choice("h100-sxm", "gpus", label="GPU")
    #: a scale-out fabrics.csv id; "auto": the fabric the GPU's systems ship with
    #: (GPUSpec.usual_scale_out: HDR InfiniBand for A100, NDR for H100 and B200, XDR for B300);
    #: or "custom": the bandwidth and technology below, with the other constants of the
    #: technology's reference row (catalog.FABRIC_TECHNOLOGIES)
    fabric: str = _choice("auto", "fabrics", label="Scale-out fabric", special=("auto", "custom"))
    #: GB/s = 1e9 bytes/s per GPU per direction; 0.1 is 0.8 Gb/s, 1000 is 8 Tb/s
    fabric_gb_per_s_per_gpu: float = _f(50.0, 0.1, 1000,
                                        label="Fabric bandwidth per GPU, each way (custom)",
                                        unit="GB/s", step=0.5)
    fabric_technology: str = _options("ib", tuple(catalog.FABRIC_TECHNOLOGIES),
                                      label="Fabric technology (custom)")
    #: GEMMs in FP8 (Transformer Engine, per-tensor current scaling) or MXFP8 (Blackwell),
    #: the rest in BF16; MFU is stated against the BF16 dense peak whatever the precision
    precision: str = _options("bf16", PRECISIONS, label="Precision")
    #: MoE models: tokens on the busiest expert rank over the mean (MOE_LOAD_IMBALANCE_DEFAULT;
    #: 1.0 is perfectly balanced routing) and the share of
    #: the expert all-to-all hidden behind compute (0: none; DualPipe / DeepEP-style overlap
    #: is an assumption the reviewer makes). Dense models ignore both.
    moe_load_imbalance: float = _f(MOE_LOAD_IMBALANCE_DEFAULT, 1.0, 16.0,
                                   label="MoE load imbalance", step=0.05)
    #: how the expert all-to-all is hidden: a named recipe (llmcost.training.moe.A2A_OVERLAP)
    #: or "custom" (the share below). Default "dualpipe": 2025-26 MoE pre-training hides the
    #: dispatch and combine behind the other micro-batch's compute (DeepSeek-V3's DualPipe,
    #: arXiv:2412.19437 §3.2.1; Megatron-Core's DualPipe-style EP overlap,
    #: --overlap-moe-expert-parallel-comm with DeepEP); "1f1b" is the level the Megatron-Bridge
    #: benchmark recipes reach (fitted)
    moe_overlap: str = _options("dualpipe", ("none", "1f1b", "dualpipe", "custom"),
                                label="MoE all-to-all overlap")
    moe_a2a_overlap: float = _f(0.0, 0, 1, label="MoE all-to-all hidden (custom)", step=0.05)
    sizing: str = _options("gpus", ("gpus", "days"), label="Size by")
    gpus: int = _f(1024, 1, 131072, label="GPUs", kind="int", step=8)
    target_days: float = _f(30.0, 0.1, 3650, label="Target days", unit="days")
    #: "rule": the batch a team would choose for the run's compute (llmcost.training.batch:
    #: DeepSeek LLM's batch law within the batches published runs of that compute used);
    #: "custom": the figure below
    batch: str = _options("rule", ("rule", "custom"), label="Global batch from")
    global_batch_tokens: float = _f(4_194_304, 1024, 1e9, label="Global batch", unit="tokens")
    #: 0: the model's training length (a config.json model: min(max positions, 8192))
    seq_len: int = _f(0, 0, 1_048_576, label="Sequence length (0: the model's)", kind="int",
                      unit="tokens")
    #: the training stack, llmcost.training.stacks.STACKS (Megatron-Core, PyTorch FSDP2,
    #: DeepSpeed with Megatron's model code, nanotron); "auto": not named, the floor runs
    #: llmcost.training.stacks.DEFAULT and the forecast compares with the published runs of
    #: every stack (llmcost.economics.realized)
    stack: str = _options("auto", ("auto", *stacks.NAMES), label="Training stack")
    # ---- a given layout (0 or auto: the planner chooses; llmcost.training.layout.LINK_KEYS)
    tp: int = _f(0, 0, 1024, label="TP (0: planner)", kind="int", group="layout")
    pp: int = _f(0, 0, 1024, label="PP (0: planner)", kind="int", group="layout")
    vp: int = _f(0, 0, 1024, label="Interleave v (0: planner)", kind="int", group="layout")
    cp: int = _f(0, 0, 1024, label="CP (0: planner)", kind="int", group="layout")
    ep: int = _f(0, 0, 4096, label="EP (0: planner)", kind="int", group="layout")
    etp: int = _f(0, 0, 1024, label="Expert TP (0: planner)", kind="int", group="layout")
    micro_batch: int = _f(0, 0, 4096, label="Micro-batch (0: planner)", kind="int",
                          unit="sequences", group="layout")
    zero: str = _options("auto", ("auto", "0", "1", "2", "3"), label="ZeRO stage",
                         group="layout")
    recompute: str = _options("auto", ("auto", "none", "selective", "full"),
                              label="Recomputation", group="layout")
    first_stage_layers: int = _f(0, 0, 100_000, label="First stage layers (0: balanced)",
                                 kind="int", group="layout")
    last_stage_layers: int = _f(0, 0, 100_000, label="Last stage layers (0: balanced)",
                                kind="int", group="layout")
    headroom: float = _f(0.10, 0, 1, label="Schedule headroom", hi_open=True, step=0.01)
    max_power_mw: float = _f(0.0, 0, 1e4, label="Power limit (0: none)", unit="MW")
    #: tokens a fine-tune sees, epochs included (the ladder's adapt/LoRA/QLoRA/full rungs;
    #: about three epochs over a 330M-token domain corpus: an assumption)
    finetune_tokens: float = _f(1e9, 1e3, 1e13, label="Fine-tune tokens (ladder)", unit="tokens")
    # ---- prices: from the catalog for the chosen GPU, or the custom figures below
    price_source: str = _options("catalog", ("catalog", "custom"), label="Prices from",
                                 group="prices")
    #: a prices.csv id, or "auto": per option the cheapest offer of the chosen GPU
    #: (llmcost.economics.offers.PRICE_RULE)
    price_offer: str = _choice("auto", "prices", label="Catalog offer", group="prices",
                               special=("auto",))
    #: a prices.csv provider: price_offer=auto chooses among its offers only ("any": all)
    provider: str = _choice("any", "providers", label="Provider", group="prices",
                            special=("any",))
    # custom defaults: AWS p5.48xlarge per GPU (data/prices.csv: $55.04 and $23.78 per
    # 8-GPU instance-hour); spot at the cluster guide's 60% off on-demand.
    on_demand_usd_per_gpu_hour: float = _f(6.88, 0, 1e3, lo_open=True, label="On-demand",
                                           unit="$/GPU-h", group="prices", step=0.01)
    reserved_1y_usd_per_gpu_hour: float = _f(0.0, 0, 1e3, label="Reserved 1 year (0: none)",
                                             unit="$/GPU-h", group="prices", step=0.01)
    reserved_3y_usd_per_gpu_hour: float = _f(2.9725, 0, 1e3,
                                             label="Reserved 3 years (0: none)",
                                             unit="$/GPU-h", group="prices", step=0.01)
    spot_discount: float = _f(0.6, 0, 1, hi_open=True, label="Spot discount (0: none)",
                              group="prices", step=0.01)
    # ---- on premises (per GPU; capex and power follow the GPU when prices are from the catalog)
    onprem_capex_usd_per_gpu: float = _f(31_250, 0, 1e7, label="Server per GPU (0: none)",
                                         unit="$", group="onprem", step=100)
    onprem_power_kw_per_gpu: float = _f(1.275, 0, 50, label="System power per GPU", unit="kW",
                                        group="onprem", step=0.01)
    onprem_opex_usd_per_gpu_month: float = _f(ONPREM_OPEX_DEFAULT, 0, 1e5,
                                              label="Facility and operations",
                                              unit="$/GPU-month", group="onprem")
    pue: float = _f(1.58, 1.0, 5.0, label="PUE", group="onprem", step=0.01)
    usd_per_kwh: float = _f(0.0806, 0, 5, label="Electricity", unit="$/kWh", group="onprem",
                            step=0.001)
    life_years: float = _f(4.0, 0.5, 15, label="Depreciation life", unit="years", group="onprem")
    residual_share: float = _f(0.1, 0, 1, hi_open=True, label="Book value left at end of life",
                               group="onprem", step=0.01)
    resale: str = _options("none", ("none", "market"), label="Resale after the run",
                           group="onprem")
    utilization: float = _f(0.9, 0, 1, lo_open=True, label="Utilization of owned GPUs",
                            group="onprem", step=0.01)
    horizon_months: float = _f(36.0, 1, 180, label="Horizon", unit="months", group="onprem")
    discount_rate: float = _f(0.0, 0, 1, label="Discount rate (all flows)", unit="/year",
                              group="onprem", step=0.01)
    # ---- spot
    preemptions_per_day: float = _f(2.4, 0, 48, label="Preemptions per day", group="spot",
                                    step=0.1)
    spot_lost_work: str = _options("from-checkpoints", ("from-checkpoints", "custom"),
                                   label="Work lost per preemption", group="spot")
    lost_hours_per_preemption: float = _f(1.5, 0, 24, label="Hours lost per preemption",
                                          unit="h", group="spot", step=0.1)
    capacity_wait_h: float = _f(0.0, 0, 48, label="Capacity wait", unit="h", group="spot",
                                step=0.1)
    observed_net_savings: float = _f(0.22, -1, 1, hi_open=True, label="Observed net savings",
                                     group="spot", step=0.01)
    # ---- reliability
    #: async: the loop waits for the copy to host memory or local NVMe and the write to shared
    #: storage runs behind training, as NeMo 2.0's Llama 3.1 405B pre-training recipe sets
    #: (ckpt_async_save=True) with Megatron-Core's distributed checkpointing
    checkpoint_mode: str = _options("async", ("sync", "async"), label="Checkpoint writes",
                                    group="reliability")
    #: the shared tier's bandwidth per node, for writes and reads: Llama 3's Tectonic, 2 TB/s
    #: sustained for 2,048 nodes (llmcost.economics.reliability.STORAGE_GB_PER_S_PER_NODE)
    storage_gb_per_s_per_node: float = _f(_rel.STORAGE_GB_PER_S_PER_NODE, 0, 1e3, lo_open=True,
                                          label="Shared storage per node", unit="GB/s",
                                          group="reliability", step=0.01)
    #: the tier's own aggregate figure, whatever the job's size (0: per node x nodes); a link
    #: or file that sets it keeps the aggregate it always meant
    shared_storage_gb_per_s: float = _f(0.0, 0, 1e5, label="Shared storage total (0: per node)",
                                        unit="GB/s", group="reliability")
    local_write_gb_per_s: float = _f(5.0, 0, 1e3, lo_open=True, label="Local NVMe write per node",
                                 unit="GB/s", group="reliability")
    failure_rate: str = _choice("by-gpu", "failure_rates", label="Failure rate from",
                                group="reliability", special=("by-gpu", "custom"))
    failures_per_1000_gpu_days: float = _f(0.4736, 0, 1000, lo_open=True,
                                           label="Failures per 1000 GPU-days",
                                           group="reliability", step=0.01)
    mtbf_h: float = _f(0.0, 0, 1e6, label="Job MTBF (0: from the rate)", unit="h",
                       group="reliability")
    #: restart per interruption from its terms (detection, rescheduling, checkpoint load,
    #: warm-up: llmcost.economics.reliability.restart_terms) or your own figure (custom); a
    #: link or file giving restart_s means that figure, as it always did
    restart: str = _options("from-terms", ("from-terms", "custom"),
                            label="Restart per interruption from", group="reliability")
    failure_detection: str = _options(_rel.DEFAULT_DETECTOR, tuple(_rel.DETECTORS),
                                      label="Hangs seen by", group="reliability")
    reschedule: str = _options(_rel.DEFAULT_RESCHEDULE, tuple(_rel.RESCHEDULE_FITS),
                               label="Failed node replaced by", group="reliability")
    restart_s: float = _f(600.0, 0, 86400, label="Restart per interruption (custom)", unit="s",
                          group="reliability")
    checkpoint_interval_s: float = _f(0.0, 0, 1e6, label="Checkpoint interval (0: Daly)",
                                      unit="s", group="reliability")
    #: data-loading stalls: from the read rate the run needs against the dataset tier
    #: (llmcost.economics.storage.data_stall_share), or the share you measured (custom)
    data_stall: str = _options("from-storage", ("from-storage", "custom"),
                               label="Data-loading stalls from", group="reliability")
    data_tier_read_gb_per_s: float = _f(20.0, 0, 1e5, lo_open=True, label="Dataset tier read",
                                        unit="GB/s", group="reliability")
    data_read_amplification: float = _f(1.0, 1.0, 1e4, label="Read amplification",
                                        group="reliability", step=0.1)
    data_stall_share: float = _f(0.02, 0, 1, hi_open=True, label="Data-loading stalls",
                                 group="reliability", step=0.01)
    # ---- a measured run (effective utilization app)
    measured_flops_per_token: float = _f(0.0, 0, 1e16, label="Model FLOPs per token (0: from model)",
                                         unit="FLOP", group="measured")
    measured_global_batch: float = _f(512, 1, 1e7, label="Global batch", unit="sequences",
                                      group="measured")
    measured_seq_len: float = _f(8192, 1, 1e7, label="Sequence length", unit="tokens",
                                 group="measured")
    measured_steps: float = _f(1000, 1, 1e9, label="Steps", group="measured")
    measured_gpus: float = _f(512, 1, 1e6, label="GPUs", group="measured")
    measured_wall_clock_s: float = _f(10000, 1, 1e9, label="Wall clock", unit="s",
                                      group="measured")
    measured_peak_tflops: float = _f(0.0, 0, 1e5, label="Peak used (0: GPU's dense BF16)",
                                     unit="TFLOP/s", group="measured")
    # ---- serving (the Serving app; the keys of `llmcost serve --query` where they do not
    # clash with the training layout's, and its defaults: llmcost.serving.query.DEFAULTS)
    #: 0: the serving planner's best layout under the latency limits (serve without tp=)
    serve_tp: int = _f(0, 0, 4096, label="Serving TP (0: planner)", kind="int", group="serving")
    #: 0: 1 with a given TP, the planner's choice without one
    serve_ep: int = _f(0, 0, 4096, label="Serving EP (0: 1 or planner)", kind="int", group="serving")
    #: BF16 checkpoints as published; fp8/fp4 as TensorRT-LLM's perf-overview runs them
    weights: str = _options("bf16", ("bf16", "fp8", "int8", "int4", "mxfp4", "nvfp4"),
                            label="Weights format", group="serving",
                            aliases={"fp4": "nvfp4"})    # as llmcost serve reads it
    #: auto: the engine's default KV element (vLLM/SGLang kv_cache_dtype=auto: the model's
    #: dtype; TensorRT-LLM FP8 KV with FP8/FP4 weights)
    kv: str = _options("auto", ("auto", "bf16", "fp8"), label="KV cache precision",
                       group="serving")
    #: 1024/1024: the common input/output lengths of TensorRT-LLM's perf-overview tables and
    #: InferenceX's 1k/1k workload
    isl: int = _f(1024, 1, 10_000_000, label="Input tokens per request", kind="int",
                  unit="tokens", group="serving")
    osl: int = _f(1024, 1, 10_000_000, label="Output tokens per request", kind="int",
                  unit="tokens", group="serving")
    #: 0: the planner's best concurrency (with a given TP and no limits: the engine's cap or
    #: what fits in memory, as serve without concurrency=)
    concurrency: int = _f(0, 0, 10_000_000, label="Concurrency (0: best)", kind="int",
                          unit="requests", group="serving")
    #: vLLM: the most deployed open engine (its defaults: docs.vllm.ai Engine Arguments)
    engine: str = _options("vllm", ("vllm", "sglang", "trtllm"), label="Serving engine",
                           group="serving")
    #: the engine's scheduler, by llmcost serve's (vLLM's) names for every engine; 0: the
    #: engine's default for the GPU and TP (llmcost.serving.engines.defaults)
    max_num_seqs: int = _f(0, 0, 10_000_000, kind="int", unit="sequences", group="serving",
                           label="Max running sequences (0: engine default)")
    max_num_batched_tokens: int = _f(0, 0, 100_000_000, kind="int", unit="tokens",
                                     group="serving", label="Tokens per step (0: engine default)")
    gpu_memory_utilization: float = _f(0.0, 0, 1, group="serving", step=0.01,
                                       label="Memory share (0: engine default)")
    #: 0: no limit
    ttft_ms_max: float = _f(0.0, 0, 1e9, label="TTFT limit (0: none)", unit="ms",
                            group="serving")
    tpot_ms_max: float = _f(0.0, 0, 1e9, label="TPOT limit (0: none)", unit="ms",
                            group="serving")
    #: the pricing option the headline's $ per million output tokens uses (all options are
    #: plotted); on-demand: what anyone can rent today
    price_option: str = _options("on_demand", ("on_demand", "reserved_1y", "reserved_3y",
                                               "spot", "on_prem"),
                                 label="Price of the headline $/M tokens", group="serving")

    def __post_init__(self):
        for f in fields(self):
            check_value(f.name, getattr(self, f.name))

    # ---------------------------------------------------------------- round trips
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str, cat: catalog.Catalog | None = None,
                  strict: bool = False) -> tuple["Scenario", list[str]]:
        dupes: list[str] = []

        def pairs(items):
            seen = {}
            for k, x in items:
                if k in seen and k not in dupes:
                    dupes.append(k)
                seen[k] = x
            return seen

        if len(text) > MAX_SCENARIO_CHARS:
            msg = f"not a scenario file: {len(text):,} characters (at most {MAX_SCENARIO_CHARS:,})"
            if strict:
                raise v.InputError("scenario", msg)
            return cls(), [msg]
        try:
            data = json.loads(text, object_pairs_hook=pairs)
        except (json.JSONDecodeError, RecursionError, ValueError) as e:
            msg = _json_error_text(e)
            if strict:
                raise v.InputError("scenario", f"not a scenario file: {msg}") from None
            return cls(), [f"not a scenario file: {msg}"]
        if not isinstance(data, dict):
            if strict:
                raise v.InputError("scenario", "not a scenario file: expected a JSON object")
            return cls(), ["not a scenario file: expected a JSON object"]
        if dupes and strict:
            raise v.InputError(str(dupes[0])[:60], f"{_short(dupes[0])}: given more than once")
        scenario, warnings = cls.from_mapping(data, cat, strict=strict)
        # as the query path does: the last value wins, and the user is told
        return scenario, [f"{_short(k)}: given more than once; the last is used"
                          for k in dupes] + warnings

    @classmethod
    def from_mapping(cls, data: dict, cat: catalog.Catalog | None = None,
                     strict: bool = False, base: "Scenario | None" = None
                     ) -> tuple["Scenario", list[str]]:
        """Strict per key: a bad or unknown key keeps its default and warns (``strict``:
        raises InputError naming it). Keys renamed since earlier versions are converted and
        noted, so saved files and shared links keep their meaning."""
        base = cls() if base is None else base
        known = {f.name: f for f in fields(cls)}
        data, warnings = _migrate(dict(data))
        good = {}
        cfg = {str(k): data.pop(k) for k in list(data) if str(k).startswith(CONFIG_PREFIX)}
        if cfg:
            text = config_text({k[len(CONFIG_PREFIX):]: x for k, x in cfg.items()})
            try:
                _check_config_text("model_config", text)
            except v.InputError as e:
                if strict:
                    raise
                warnings.append(f"{e}; the config model ignored")
            else:
                good["model_config"] = text
                if "model" not in data:
                    good["model"] = "config"
        for key, raw in data.items():
            if key not in known:
                # strict or not, as the apps treat a link: a key this version does not know
                # (a newer version's, a typo) is a warning, never a refusal
                warnings.append(f"unknown setting {_short(key)!r} ignored")
                continue
            try:
                good[key] = parse_value(known[key], raw, cat)
            except catalog.CatalogError:
                raise       # a broken catalog file is not a bad value in the link
            except ValueError as e:
                if strict:
                    raise v.InputError(key, f"{key}: {e}") from None
                warnings.append(f"{key}: {e}; kept {getattr(base, key)!r}")
        # a figure given without its mode means the user wants that figure used
        for key in list(good):
            mode = CUSTOM_MODE.get(key)
            if mode and mode[0] not in good:
                good[mode[0]] = mode[1]
        return replace(base, **good), warnings

    @property
    def config_name(self) -> str | None:
        """The name of the config.json model (its ``_name_or_path``, else its architecture);
        None for a catalog model."""
        if self.model != "config" or not self.model_config:
            return None
        from .training.hf_config import config_label
        return config_label(json.loads(self.model_config))

    @property
    def model_label(self) -> str:
        """The model as the pages' controls and headers name it: a catalog id, or
        "config: <its name>"."""
        name = self.config_name
        return self.model if name is None else f"config: {name}"

    def to_query(self, only_changed=True) -> str:
        base = Scenario()
        items = _with_modes({k: val for k, val in self.to_dict().items()
                             if not only_changed or val != getattr(base, k)}, self)
        return urlencode(_expand_config({k: _fmt(val) for k, val in items.items()}))

    @classmethod
    def from_query(cls, query: str, cat: catalog.Catalog | None = None,
                   strict: bool = False) -> tuple["Scenario", list[str]]:
        """Parse a page's query string. Voila's own parameters are not ours: ignored; so are
        the compared scenarios' ``b.``/``c.`` keys (:func:`scenarios_from_query` reads them)."""
        scenarios, warnings = scenarios_from_query(query, cat, strict=strict)
        return scenarios[0], warnings


def _json_error_text(e: Exception) -> str:
    """What is wrong with a JSON text, in words: the decoder's message with its line and
    column, arrays or objects nested too deep, or a number with too many digits."""
    if isinstance(e, json.JSONDecodeError):
        return f"{e.msg} (line {e.lineno}, column {e.colno})"
    if isinstance(e, RecursionError):
        return "arrays or objects nested too deeply"
    text = str(e)
    if "digits" in text:
        # Python's int-from-text limit (sys.get_int_max_str_digits, 4,300 by default)
        n = re.search(r"value has (\d+) digits", text)
        return (f"a number with {int(n.group(1)):,} digits" if n else "a number with too many "
                "digits") + " (a scenario's numbers have at most a few dozen)"
    return text[:200]


#: a link carries a config.json model's fields as cfg.<field>=<value> keys
CONFIG_PREFIX = "cfg."
#: the most config fields and characters a scenario carries (a config.json reader reads ~40)
MAX_CONFIG_FIELDS = 200
MAX_CONFIG_CHARS = 20_000


def config_text(fields_: dict) -> str:
    """The ``model_config`` text of config fields: JSON of field -> value as a link writes it
    (lists ``a,b``, booleans ``true``/``false``), sorted, so equal models compare equal."""
    def text(x):
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, (list, tuple)):
            return ",".join(text(y) for y in x)
        if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return "null" if x is None else str(x)
    return json.dumps({str(k): text(x) for k, x in sorted(fields_.items())},
                      separators=(",", ":"))


def _check_config_text(name, value) -> None:
    if not isinstance(value, str) or len(value) > MAX_CONFIG_CHARS:
        raise v.InputError(name, f"{name} must be the fields of a config.json (at most "
                                 f"{MAX_CONFIG_CHARS:,} characters)")
    if not value:
        return
    try:
        d = json.loads(value)
    except (json.JSONDecodeError, RecursionError, ValueError):
        raise v.InputError(name, f"{name} must be a JSON object of config fields") from None
    if not isinstance(d, dict) or len(d) > MAX_CONFIG_FIELDS or \
            not all(isinstance(x, str) for x in d.values()):
        raise v.InputError(name, f"{name} must be a JSON object of at most {MAX_CONFIG_FIELDS} "
                                 "config fields with text values")


def _expand_config(items: dict) -> dict:
    """A query's items with ``model_config`` written as ``cfg.<field>`` keys."""
    text = items.pop("model_config", "")
    if text:
        items.update({CONFIG_PREFIX + k: x for k, x in json.loads(text).items()})
    return items


#: a scenario file holds ~60 short values: anything far larger is not one
MAX_SCENARIO_CHARS = 200_000

#: Voila and Jupyter put these in the page's query string; they are not scenario settings.
VOILA_PARAMS = {"theme", "template", "token", "voila-template", "kernel_name", "reload"}

#: a shared link compares up to three scenarios: A is the plain keys, B and C the keys
#: prefixed ``b.`` and ``c.``, each only where it differs from A
COMPARE_LABELS = ("A", "B", "C")
_PREFIXES = ("b.", "c.")


def _with_modes(items: dict, s: "Scenario") -> dict:
    """A link's items plus the mode of each custom figure they carry whose mode is not
    custom: a figure read without its mode switches the mode to custom (from_mapping), so a
    figure kept beside catalog prices would come back as custom prices."""
    out = dict(items)
    for k in items:
        mode = CUSTOM_MODE.get(k)
        if mode and getattr(s, mode[0]) != mode[1] and mode[0] not in out:
            out[mode[0]] = getattr(s, mode[0])
    return out


def scenarios_to_query(scenarios) -> str:
    """One link for up to three scenarios: A as plain keys (those that differ from the
    defaults), B and C as ``b.<key>`` / ``c.<key>`` for the keys that differ from A."""
    scenarios = list(scenarios)
    if not 1 <= len(scenarios) <= len(COMPARE_LABELS):
        raise v.InputError("scenarios", f"a link carries 1 to {len(COMPARE_LABELS)} scenarios, "
                                        f"got {len(scenarios)}")
    a = scenarios[0]
    parts = [a.to_query()]
    for prefix, s in zip(_PREFIXES, scenarios[1:]):
        diff = _with_modes({k: x for k, x in s.to_dict().items() if x != getattr(a, k)}, s)
        # an identical scenario still needs one key to exist in the link
        diff = diff or {"model": s.model}
        parts.append(urlencode({prefix + k: x for k, x in
                                _expand_config({k: _fmt(x) for k, x in diff.items()}).items()}))
    return "&".join(p for p in parts if p)


def scenarios_from_query(query: str, cat: catalog.Catalog | None = None,
                         strict: bool = False) -> tuple[list["Scenario"], list[str]]:
    """The scenarios of a link, A first (see :func:`scenarios_to_query`), with warnings for
    what was not used. B and C start from A; a ``c.`` without a ``b.`` is read as B."""
    parsed = parse_qs((query or "").lstrip("?"), keep_blank_values=True)
    groups: dict[str, dict] = {"": {}, "b.": {}, "c.": {}}
    warnings = []
    for key, vals in parsed.items():
        if key in VOILA_PARAMS:
            continue
        if len(vals) > 1:
            if strict:
                raise v.InputError(key, f"{_short(key)}: given {len(vals)} times")
            warnings.append(f"{_short(key)}: given {len(vals)} times; the last is used")
        prefix = key[:2] if key[:2] in _PREFIXES else ""
        groups[prefix][key[len(prefix):]] = vals[-1]
    a, more = Scenario.from_mapping(groups[""], cat, strict=strict)
    warnings += more
    out = [a]
    for prefix in _PREFIXES:
        if not groups[prefix]:
            continue
        label = COMPARE_LABELS[len(out)]
        try:
            s, more = Scenario.from_mapping(groups[prefix], cat, strict=strict, base=a)
        except v.InputError as e:
            # name the key as the link spells it
            raise v.InputError(prefix + e.param, f"{prefix}{e}") from None
        warnings += [f"scenario {label}: {w}" for w in more]
        out.append(s)
    return out, warnings

#: figure -> (its mode field, the mode that uses it)
CUSTOM_MODE = {
    "on_demand_usd_per_gpu_hour": ("price_source", "custom"),
    "reserved_1y_usd_per_gpu_hour": ("price_source", "custom"),
    "reserved_3y_usd_per_gpu_hour": ("price_source", "custom"),
    "spot_discount": ("price_source", "custom"),
    "data_stall_share": ("data_stall", "custom"),
    "fabric_gb_per_s_per_gpu": ("fabric", "custom"),
    "moe_a2a_overlap": ("moe_overlap", "custom"),
    "global_batch_tokens": ("batch", "custom"),
    "onprem_capex_usd_per_gpu": ("price_source", "custom"),
    "onprem_power_kw_per_gpu": ("price_source", "custom"),
    "onprem_opex_usd_per_gpu_month": ("price_source", "custom"),
    "lost_hours_per_preemption": ("spot_lost_work", "custom"),
    "failures_per_1000_gpu_days": ("failure_rate", "custom"),
    "restart_s": ("restart", "custom"),
}

#: old key -> (new key, factor): before 0.2 prices, capex, power and failure rates were
#: per 8-GPU node, and restarts of spot runs had their own setting in hours.
RENAMED = {
    "on_demand_usd_per_node_hour": ("on_demand_usd_per_gpu_hour", 1 / 8),
    "reserved_1y_usd_per_node_hour": ("reserved_1y_usd_per_gpu_hour", 1 / 8),
    "reserved_3y_usd_per_node_hour": ("reserved_3y_usd_per_gpu_hour", 1 / 8),
    "onprem_capex_usd_per_node": ("onprem_capex_usd_per_gpu", 1 / 8),
    "onprem_power_kw_per_node": ("onprem_power_kw_per_gpu", 1 / 8),
    "onprem_other_usd_per_node_month": ("onprem_opex_usd_per_gpu_month", 1 / 8),
    "node_failures_per_1000_node_days": ("failures_per_1000_gpu_days", 1 / 8),
    "restart_h": ("restart_s", 3600.0),
    # bandwidths are GB/s (bytes): "gbps" read as gigabits by most people
    "shared_storage_gbps": ("shared_storage_gb_per_s", 1.0),
    "local_write_gbps": ("local_write_gb_per_s", 1.0),
}


def _short(x, n=60) -> str:
    s = str(x)
    return s if len(s) <= n else s[:n] + "..."


def _migrate(data: dict) -> tuple[dict, list[str]]:
    """Convert keys of earlier versions (per-node figures, two spot prices) to today's."""
    notes = []
    for old, (new, factor) in RENAMED.items():
        if old not in data:
            continue
        raw = data.pop(old)
        if new in data:
            notes.append(f"{old} is superseded by {new} (both given): {old} ignored")
            continue
        try:
            x = float(raw)
        except (TypeError, ValueError):
            data[new] = raw      # parse_value reports it under the new name
            continue
        data[new] = x * factor
        unit = ("per node of 8 GPUs" if factor == 1 / 8 else "in hours" if factor == 3600.0
                else "GB/s, renamed: 'gbps' reads as gigabits")
        notes.append(f"{old} (old name, {unit}) read as {new} = {_fmt(x * factor)}")
    if "spot_usd_per_node_hour" in data:
        # one stored spot figure: the discount off on-demand
        raw = data.pop("spot_usd_per_node_hour")
        try:
            spot = float(raw)
            od = float(data.get("on_demand_usd_per_gpu_hour",
                                Scenario.__dataclass_fields__["on_demand_usd_per_gpu_hour"].default))
            if "spot_discount" in data:
                notes.append("spot_usd_per_node_hour ignored: spot_discount is given")
            elif spot <= 0:
                data["spot_discount"] = 0.0
                notes.append("spot_usd_per_node_hour = 0 (old name) read as spot not offered")
            else:
                d = 1 - spot / 8 / od
                data["spot_discount"] = d
                notes.append(f"spot_usd_per_node_hour (old name) read as spot_discount = {d:.4g}")
        except (TypeError, ValueError, ZeroDivisionError):
            notes.append(f"spot_usd_per_node_hour: expected a number, got {_short(raw)!r}; ignored")
    return data, notes


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if isinstance(x, float):
        # ten decimals drop float noise (0.30000000000000004); a tiny value keeps its digits
        # (5e-324 is a valid link value that ten decimals would turn into an invalid 0)
        short = repr(round(x, 10))
        return short if abs(float(short) - x) <= 1e-12 * abs(x) else repr(x)
    return str(x)


#: suffixes a person types for large numbers ("2T tokens", "4M batch"); B and G both 1e9
SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}


def parse_number(raw: Any) -> float:
    """A number as a person types it: ``2e12``, ``2T``, ``2 T``, ``1,024``, ``4_194_304``.

    Raises ValueError saying what was expected."""
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {raw!r}")
    if isinstance(raw, str):
        if len(raw) > 40:
            raise ValueError(f"expected a number, got {_short(raw, 20)!r} ({len(raw)} characters)")
        text = raw.strip().replace(",", "").replace("_", "").replace(" ", "")
        mult = 1.0
        if text and text[-1] in SUFFIXES:
            mult, text = SUFFIXES[text[-1]], text[:-1]
        try:
            x = float(text) * mult
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"expected a number, got {_short(raw)!r}") from None
    else:
        try:
            x = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"expected a number, got {_short(raw)!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {_short(raw)!r}")
    return x


def number_text(x: float) -> str:
    """The shortest readable text that :func:`parse_number` reads back as exactly ``x``:
    2e12 -> "2T", 4194304 -> "4,194,304", 0.0806 -> "0.0806"."""
    x = float(x)
    for suffix in ("P", "T", "B", "M"):
        mult = SUFFIXES[suffix]
        q = x / mult
        if abs(q) >= 1 and float(f"{q:g}") * mult == x:
            return f"{q:g}{suffix}"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.10g}" if float(f"{x:.10g}") == x else repr(x)


def range_text(name: str) -> str:
    """The allowed values of a numeric field, in words: "between 1 and 131,072"."""
    md = FIELDS[name].metadata
    unit = f" {md['unit']}" if md["unit"] and md["unit"] not in ("tokens",) else ""
    lo, hi = md["lo"], md["hi"]
    lo_t = number_text(lo) if lo is not None else None
    hi_t = number_text(hi) if hi is not None else None
    if lo is not None and hi is not None:
        if md["lo_open"] or md["hi_open"]:
            left = f"above {lo_t}" if md["lo_open"] else f"at least {lo_t}"
            right = f"below {hi_t}" if md["hi_open"] else f"at most {hi_t}"
            return f"{left} and {right}{unit}"
        return f"between {lo_t} and {hi_t}{unit}"
    if lo is not None:
        return f"{'above' if md['lo_open'] else 'at least'} {lo_t}{unit}"
    return f"{'below' if md['hi_open'] else 'at most'} {hi_t}{unit}"


def parse_value(f, raw: Any, cat: catalog.Catalog | None = None):
    """Convert and check one value for field ``f`` (raises ValueError with the allowed range,
    in the words of the field's label)."""
    kind = f.metadata["kind"]
    if kind in ("float", "int"):
        x = parse_number(raw)
        shown = number_text(x) if abs(x) < 1e18 else f"{x:.3g}"
        if kind == "int" and x != round(x):
            raise ValueError(f"{f.metadata['label']} must be a whole number, got {shown}")
        try:
            check_value(f.name, x)
        except v.InputError:
            raise v.InputError(f.name, f"{f.metadata['label']} must be {range_text(f.name)}, "
                                       f"got {shown}") from None
        return int(x) if kind == "int" else x
    if kind == "text":
        s = str(raw)
        _check_config_text(f.name, s)
        return s
    if kind == "options":
        s = str(raw)
        s = f.metadata.get("aliases", {}).get(s, s)
        if s not in f.metadata["options"]:
            raise ValueError(f"expected one of {', '.join(f.metadata['options'])}, got {_short(s)!r}")
        return s
    s = str(raw).strip()
    if s in f.metadata.get("special", ()):
        return s
    check_value(f.name, s)
    cat = cat or catalog.default()
    if f.metadata["table"] == "providers":
        known = cat.providers()
        match = [p for p in known if p.lower() == s.lower()]
        if not match:
            raise v.InputError(f.name, f"provider {_short(s, 40)!r} has no offer "
                                       f"in the catalog (providers: {', '.join(known)})")
        return match[0]
    try:
        row = cat.lookup(f.metadata["table"], s)
    except KeyError:
        raise
    except v.InputError:
        # say what is there without listing a whole table in one line
        known = cat.ids(f.metadata["table"])
        some = ", ".join(known[:5]) + (f" and {len(known) - 5} more" if len(known) > 5 else "")
        raise v.InputError(f.name, f"{f.metadata['label']} {_short(s, 40)!r} is not in the "
                                   f"catalog (for example {some})") from None
    if f.name == "fabric" and row["kind"] != "scale_out":
        raise v.InputError(f.name, f"fabric {s!r} links GPUs inside a node; pick a scale-out "
                                   "fabric (InfiniBand or RoCE)")
    return row["id"]


def check_value(name: str, value) -> None:
    """Validate one field's value, raising InputError naming it with the allowed range.

    Catalog ids are checked for form only: whether they exist depends on the catalog the
    review runs with (a user's own rows), which the review's first stage resolves."""
    f = FIELDS[name]
    md = f.metadata
    kind = md["kind"]
    if kind in ("float", "int"):
        x = v.in_range(name, value, md["lo"], md["hi"], low_inclusive=not md["lo_open"],
                       high_inclusive=not md["hi_open"])
        if kind == "int":
            v.integer(name, x, minimum=int(md["lo"]))
    elif kind == "options":
        v.choice(name, value, md["options"])
    elif kind == "text":
        _check_config_text(name, value)
    else:
        if not isinstance(value, str) or not value.strip() or len(value) > 100:
            raise v.InputError(name, f"{name} must be a catalog id (a short name), got "
                                     f"{_short(value)!r}")


def describe(name: str) -> dict:
    """Label, unit, bounds and kind of a field, for controls and tables."""
    md = dict(FIELDS[name].metadata)
    md["name"] = name
    md["default"] = FIELDS[name].default
    return md


FIELDS = {f.name: f for f in fields(Scenario)}
