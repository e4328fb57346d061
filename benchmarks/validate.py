"""Measured vs predicted throughput on every calibration row (issue 9, items 5 and 6).

Run: ``make validate`` (or ``.venv/bin/python benchmarks/validate.py [--fit]``).

Reads data/calibration_runs.csv (Narayanan et al. 2021 Table 1, Llama 3 Table 4, the
Megatron-Bridge performance summary for releases 25.11 and newer), decides for each row
whether today's step model can express it, predicts tokens/s/GPU for those it can with
:func:`llmcost.training.step.predict_step`, and prints one line per row and a summary per
source table and GPU generation. Expressibility is probed at run time (a layout the library
rejects with InputError is reported with the library's reason), so the script follows the
library as it gains uneven pipelines, precisions and so on.

After the calibration table it prints :func:`whole_runs`: the review's and the napkin's
GPU-hours against published whole pre-training runs (data/whole_runs.csv); ``--whole-runs``
prints that section alone.

``--fit`` fits the :class:`~llmcost.training.step.Calibration` constants per GPU generation
with ``scipy.optimize.least_squares`` on log(predicted / measured tokens/s), reports which
constants the rows cannot identify, and the leave-one-group-out error (group = source table
x model). It prints; it changes nothing in the library (DEFAULT_CALIBRATION stays).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from llmcost import catalog  # noqa: E402
from llmcost._validate import InputError  # noqa: E402
from llmcost.training import step  # noqa: E402
from llmcost.training.hardware import Hardware  # noqa: E402
from llmcost.training.layout import Layout  # noqa: E402
from llmcost.training.memory import MemoryOptions  # noqa: E402
from llmcost.training.moe import A2A_OVERLAP  # noqa: E402
from llmcost.training.step import DEFAULT_CALIBRATION, Calibration, Options, predict_step  # noqa: E402

DATA = ROOT / "data" / "calibration_runs.csv"

#: Scale-out fabric per source (not in the tables): Selene ran HDR InfiniBand (Narayanan
#: et al. 2021 §5); Meta's 405B cluster RoCE at 400 Gb/s (Llama 3 paper §3.3.1); DGX systems
#: in the Megatron-Bridge runs, NDR InfiniBand (assumption: DGX H100/B200 ship ConnectX-7).
SCALE_OUT = {"narayanan2021 table 1": "ib-hdr", "llama3 table 4": "roce-400-tuned",
             # llm-foundry's A100 tables: "1600 Gbps node-node interconnect (RoCE)", 200 Gb/s
             # per GPU; its MFU does not fall from 32 to 128 GPUs (30B on A100 40GB: 51.7% ->
             # 52.3%), so a tuned fabric (FABRIC_TUNED), not roce-200's congested seed anecdote.
             # Its H100 tables do not name the fabric: NDR InfiniBand (ib-ndr, assumption).
             "llm-foundry a100-80gb bf16": "roce-200-tuned",
             "llm-foundry a100-40gb bf16": "roce-200-tuned",
             # torchtitan's Grand Teton hosts: "400 Gb/s per GPU" RDMA, Meta's RoCE as in Llama 3
             "torchtitan h100 2024-12": "roce-400-tuned"}
SCALE_OUT_DEFAULT = "ib-ndr"
#: Fabrics named here but not in the catalog: a catalog fabric tuned as roce-400-tuned is
#: (NCCL at 90% of line rate, no congestion growth; assumption stated per source above).
FABRIC_TUNED = {"roce-200-tuned": "roce-200"}

#: GPUs a source describes that no catalog row is: the fields that differ from the row's
#: catalog GPU. torchtitan's Grand Teton H100s (its page, "Hardware" and footnote 2): 96GB
#: HBM2e at 2.4 TB/s, a 500 W power limit, "the actual peak TFLOPs number is between SXM and
#: NVL, and we don't know its exact value": the midpoint of H100 SXM (989.4) and H100 NVL
#: (835.5, NVIDIA H100 datasheet, dense BF16) is taken (assumption), and the exponential
#: rate of the special function units scales with the same clock.
H100_500W_CLOCK = (989.4 + 835.5) / 2 / 989.4
SOURCE_GPU = {"torchtitan h100 2024-12": dict(
    id="h100-96gb-500w", bf16_dense_tflops=989.4 * H100_500W_CLOCK,
    fp8_dense_tflops=1978.9 * H100_500W_CLOCK, memory_gib=96.0, hbm_bandwidth_tb_per_s=2.4,
    tdp_w=500.0, exp_per_s=3.865e12 * H100_500W_CLOCK)}


def source_gpu(row, cat):
    """The GPU a row ran on: its catalog row, with what the source says differs
    (:data:`SOURCE_GPU`)."""
    gpu = cat.gpu(row["gpu"])
    own = SOURCE_GPU.get(row["source_table"])
    return replace(gpu, **own) if own else gpu


#: Sources that ran PyTorch FSDP: predicted with ``Options(stack="fsdp")``. Only
#: llm-foundry's tables fit the fsdp constants (fit_fsdp); torchtitan's rows check them out
#: of sample.
FSDP_SOURCES = ("llm-foundry", "torchtitan")
FSDP_FIT_SOURCE = "llm-foundry"


def row_stack(row) -> str:
    """"fsdp" for a row of an FSDP source (FSDP_SOURCES), else "megatron"."""
    return "fsdp" if str(row["source_table"]).startswith(FSDP_SOURCES) else "megatron"


def scale_out_fabric(row, cat):
    """The scale-out FabricSpec a row ran on (SCALE_OUT, FABRIC_TUNED)."""
    name = SCALE_OUT.get(row["source_table"], SCALE_OUT_DEFAULT)
    if name in FABRIC_TUNED:
        return replace(cat.fabric(FABRIC_TUNED[name]), id=name, efficiency=0.9,
                       congestion_per_doubling=0.0)
    return cat.fabric(name)

#: Calibration constants the fit may move, with bounds (the fit runs in log space).
FIT_PARAMS = ("matmul_efficiency", "gemm_traffic", "elementwise_traffic",
              "nvlink_efficiency")
FIT_BOUNDS = {"matmul_efficiency": (0.2, 0.98), "gemm_traffic": (0.02, 20.0),
              "elementwise_traffic": (0.1, 40.0), "nvlink_efficiency": (0.3, 0.98)}
#: Megatron-Bridge's printed MoE model names -> catalog ids ("DeepSeekV3" without a suffix
#: is taken without multi-token prediction, like "w/o MTP"; the "w/ MTP" row trains one MTP
#: module more, about 1/61 of the layers, which the prediction leaves out).
MOE_MODELS = {"DeepSeekV3": "deepseek-v3", "DeepSeekV3 (w/o MTP)": "deepseek-v3",
              "DeepSeekV3 (w/ MTP)": "deepseek-v3", "GPT OSS 120B": "gpt-oss-120b",
              "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b"}
#: Megatron-Bridge MoE recipes that capture the whole iteration in one CUDA graph with the
#: sync-free dropless dispatcher (``cuda_graph_impl="full_iteration"``, ``moe_paged_stash``):
#: MXFP8 on GB200 and GB300 for all four models, and on B300 for Qwen3-30B-A3B, from the 26.06
#: container on (read from NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/*/
#: *_workload_base_configs.py at tags v0.5.0 and v0.5.1, matched to each row by its layout,
#: and src/megatron/bridge/perf_recipes at v0.6.0 for 26.08; introduced by #3983, #4173,
#: #4211, #4226, June 2026). Every earlier release (tags v0.2.1-v0.4.2) and every other
#: recipe runs eager or with per-module graphs (attention, router, dispatch preprocessing).
FULL_GRAPH_RECIPES = {("deepseek-v3", "gb200"), ("deepseek-v3", "gb300"),
                      ("gpt-oss-120b", "gb200"), ("gpt-oss-120b", "gb300"),
                      ("qwen3-30b-a3b", "gb200"), ("qwen3-30b-a3b", "gb300"),
                      ("qwen3-30b-a3b", "b300"),
                      ("qwen3-235b-a22b", "gb200"), ("qwen3-235b-a22b", "gb300")}
FULL_GRAPH_FROM = (26, 6)


def recipe_cuda_graphs(row) -> str:
    """"full" when the row's recipe runs full-iteration CUDA graphs, else "none" (per-module
    graphs keep the dispatcher's host round trip, so the step model treats them as eager)."""
    release = tuple(int(x) for x in str(row["source_table"]).split()[-1].split(".")[:2])
    model = MOE_MODELS.get(row["model"], row["model"])
    full = (release >= FULL_GRAPH_FROM and row["precision"] == "mxfp8"
            and (model, row["gpu"]) in FULL_GRAPH_RECIPES)
    return "full" if full else "none"


#: Share of the expert all-to-all the Megatron-Bridge MoE recipes hide behind compute [-]
#: (fitted with the MoE constants by fit_moe; an Options value, not a library default).
MOE_A2A_OVERLAP = A2A_OVERLAP["1f1b"]
#: Constants refit per generation. Ampere: e_max and gamma, as benchmarks/calibrate.py fits
#: them to Table 1. Hopper and Blackwell: e_max only; with all of FIT_PARAMS free their fits
#: run to the bounds (see llmcost.training.step.CALIBRATION_BY_GENERATION).
#: GPUs fitted apart from their generation, e_max only: those with their own set in the
#: library (llmcost.training.step.CALIBRATION_BY_GPU; GB300 runs the same layouts 20-27%
#: faster than GB200 with the same dense peak on paper).
#: GPUs calibrated on paired runs (fit_paired), not on calibration_runs.csv rows.
PAIRED_GPUS = ("mi300x", "mi325x")
FIT_APART = tuple(g for g in step.CALIBRATION_BY_GPU if g not in PAIRED_GPUS)
GEN_PARAMS = {"ampere": ("matmul_efficiency", "elementwise_traffic"),
              "hopper": ("matmul_efficiency",), "blackwell": ("matmul_efficiency",),
              **{gpu: ("matmul_efficiency",) for gpu in FIT_APART}}
#: GPU generation of each calibration GPU id; the fit groups rows by it.
GENERATION = {"a100-80gb": "ampere", "a100-40gb": "ampere", "h100-sxm": "hopper", "b200": "blackwell",
              "gb200": "blackwell", "b300": "blackwell", "gb300": "blackwell"}


def load_rows(path=DATA) -> pd.DataFrame:
    """The calibration table as read from CSV."""
    return pd.read_csv(path)


def _int(x, default=None):
    return default if pd.isna(x) else int(x)


def _table1_interleave(layers: int, pp: int) -> int:
    # Table 1 does not print v; Megatron 2021 used the interleaved schedule for PP > 1, here
    # with the smallest v > 1 dividing the layers per stage (as benchmarks/calibrate.py).
    if pp == 1:
        return 1
    per = layers // pp
    return next((c for c in range(2, per + 1) if per % c == 0), 1)


def layout_for(row, model) -> tuple[dict, Options, str]:
    """The layout's fields with ``seq_len`` (and ``memory_kwargs``, the memory options), the
    Options and the assumptions stated for one row."""
    src = row["source_table"]
    tp, pp, cp = _int(row["tp"], 1), _int(row["pp"], 1), _int(row["cp"], 1)
    kw = dict(gpus=int(row["gpus"]), tp=tp, pp=pp, cp=cp,
              global_batch=int(row["global_batch"]), seq_len=int(row["seq_len"]))
    if src == "narayanan2021 table 1":
        kw.update(micro_batch=1, interleave=_table1_interleave(model.layers, pp),
                  recompute="full")
        opts = Options(dp_overlap=0.0)
        note = ("mb 1, v = smallest divisor > 1 of the layers per stage when PP > 1, full "
                "recompute, no DP overlap, no flash attention (assumption, as "
                "benchmarks/calibrate.py)")
    elif src == "llama3 table 4":
        # §3.3.2: interleaved schedule with V stages per rank, one layer less on the first
        # and last stage (whose first / last chunk holds only the embedding / the head): 126
        # layers = 16 V - 2 chunks of one layer gives V = 8; no activation checkpointing at
        # 8K; FSDP shards optimizer states and gradients but not the weights (ZeRO-2).
        kw.update(micro_batch=1, interleave=8 if pp == 16 else 1, recompute="none",
                  sequence_parallel=tp > 1, zero_stage=2)
        opts = Options(flash_attention=True)
        note = ("mb 1, V 8 with 7/8/7 layers (derived from §3.3.2), no recompute, ZeRO-2 "
                "(FSDP shards gradients and optimizer, §3.3.2), sequence parallel, flash "
                "attention, DP overlap 0.9, tuned RoCE (roce-400-tuned; assumption)")
    elif row_stack(row) == "fsdp":
        # tp = pp = cp = 1: sharding strategy FULL_SHARD (ZeRO-3, the fsdp column holds the
        # shard group) or SHARD_GRAD_OP (ZeRO-2); activation checkpointing wraps each block
        # (full recomputation); gradients reduced in fp32 under Composer's DEFAULT mixed
        # precision and torchtitan's default, in bf16 under PURE
        notes = str(row["notes"])
        titan = src.startswith("torchtitan")
        mods = ()
        if titan:
            # torchtitan's per-op selective checkpointing: the "op_sac" policy
            full = "full activation checkpointing" in notes
            rec, mods = ("full", ()) if full else ("none", ("op_sac",))
        else:
            rec = "full" if "Activation Checkpointing True" in notes else "none"
        kw.update(micro_batch=int(row["micro_batch"]), recompute=rec, recompute_modules=mods,
                  zero_stage=3 if _int(row["fsdp"], 0) > 0 else 2)
        if titan:
            # torchtitan's 2D-4D rows: TP with sequence-parallel norms (its parallelize plan),
            # interleaved stages per rank where the row gives them; its loss upcasts the
            # logits to FP32 (the fsdp stack's usual loss, memory.STACK_LOSS)
            kw.update(interleave=_int(row["vp"], 1), sequence_parallel=tp > 1)
        else:
            # llm-foundry's loss_fn default, flash-attn's fused cross-entropy
            kw.update(memory_kwargs={"loss": "fused"})
        # FP8 (llm-foundry's fc_type "te"): Transformer Engine's te.Linear, in 2023 with its
        # only recipe, DelayedScaling (per-tensor amax history); torchtitan's Float8 is
        # torchao's tensorwise dynamic scaling (current scaling)
        opts = Options(stack="fsdp", flash_attention=True,
                       fp8_scaling="current" if titan else "delayed",
                       grad_bytes=2.0 if "PURE" in str(row["precision_printed"]) else 4.0)
        note = ("stack fsdp: no TP, FULL_SHARD as ZeRO-3 (SHARD_GRAD_OP as ZeRO-2), "
                "activation checkpointing as full recompute (torchtitan's per-op selective "
                "checkpointing as its own policy, op_sac), flash attention, fp32 gradient "
                "reduce-scatter unless MP Mode PURE, llm-foundry's fused cross-entropy and "
                "torchtitan's FP32 one; torchtitan's TP rows with sequence-parallel norms, its "
                "Float8 as fp8 with current scaling, torch.compile not modelled")
        if src in SOURCE_GPU:
            g = SOURCE_GPU[src]
            note += (f"; GPU as the source states it ({g['id']}: {g['memory_gib']:.0f} GiB, "
                     f"{g['hbm_bandwidth_tb_per_s']} TB/s, dense BF16 peak "
                     f"{g['bf16_dense_tflops']:.0f} TFLOP/s, the midpoint of H100 SXM and NVL: "
                     "assumption)")
    else:
        vp = _int(row["vp"], 1)
        kw.update(micro_batch=int(row["micro_batch"]), interleave=vp, recompute="none",
                  sequence_parallel=tp > 1, zero_stage=3 if _int(row["fsdp"], 0) > 0 else 1)
        opts = Options(flash_attention=True, tp_comm_overlap=tp > 1)
        if row["model_kind"] == "moe":
            # the performance recipes force balanced routing (moe_router_force_load_balancing)
            # and overlap the expert all-to-all with computation (overlap_moe_expert_parallel_
            # comm with DeepEP / HybridEP dispatchers): its hidden share is fitted (MOE_A2A)
            kw.update(ep=_int(row["ep"], 1), etp=_int(row["etp"], 1))
            opts = replace(opts, moe_load_imbalance=1.0, moe_a2a_overlap=MOE_A2A_OVERLAP,
                           cuda_graphs=recipe_cuda_graphs(row))
        note = ("no recompute, sequence parallel, fused attention, TP comm overlap, "
                "distributed optimizer (ZeRO-1) or Megatron FSDP (ZeRO-3), DP overlap 0.9 "
                "(assumption: Megatron-Bridge performance recipes; some recipes also offload "
                "activations to the CPU or recompute, which the 'fits' column shows); MoE: "
                "balanced routing (imbalance 1.0), all-to-all overlap as fitted, full-"
                "iteration CUDA graphs where the recipe runs them (FULL_GRAPH_RECIPES)")
    kw["precision"] = row["precision"]
    return kw, opts, note


#: The source's own words marking a row as a software regression it will fix (copied into
#: the row's notes): Megatron-Bridge 26.06.01 flags gpt-oss-120b pre-training as a "known
#: issue" (NVIDIA/cudnn-frontend#256, attention with sinks), and 26.08 restores the earlier
#: throughput on the same layouts (28,672 vs 18,304 tokens/s on GB200). Such rows measure a
#: bug, not the hardware and layout the step model describes: they stay in the table and are
#: listed, but neither fit a constant nor count in the errors.
SOURCE_FLAGGED_REGRESSION = ("Performance regression", "known issue")
#: status of such a row, and its words in the docs table's "left out: why" column
REGRESSION_STATUS = "excluded: the source flags a known regression (see notes)"
REGRESSION_WHY = "source-flagged regression"


def source_flagged_regression(row) -> bool:
    """True when the row's notes quote its source flagging a known performance regression."""
    notes = str(row.get("notes", ""))
    return all(word in notes for word in SOURCE_FLAGGED_REGRESSION)


def expressibility(row, cat) -> tuple[str, object]:
    """('', ModelSpec) when the step model can express the row, else (reason, None)."""
    if row["task"] != "pretrain":
        return f"not expressible yet: {row['task']} (fine-tuning)", None
    if source_flagged_regression(row):
        return REGRESSION_STATUS, None
    try:
        model = catalog_model(cat, row)
    except InputError:
        return "not expressible: architecture not in the catalog", None
    try:
        cat.gpu(row["gpu"])
    except InputError:
        return f"not expressible: GPU {row['gpu']} not in the catalog", None
    return "", model


def predict_row(row, model, cat, calibration: Calibration | None = None, options=None):
    """Predicted tokens/s per GPU for one row, or (None, reason) when the layout is refused.
    ``options``: a dict of Options fields that override the row's."""
    gpu = source_gpu(row, cat)
    kw, opts, note = layout_for(row, model)
    if options:
        opts = replace(opts, **options)
    up = cat.fabric(gpu.scale_up)
    out = scale_out_fabric(row, cat)
    try:
        # flash attention and TP overlap as the row's options say
        lay = {k: x for k, x in kw.items() if k not in ("seq_len", "memory_kwargs")}
        p = predict_step(model, Hardware(gpu, up, out),
                         Layout(**lay, flash_attention=None, tp_comm_overlap=None), options=opts,
                         calibration=calibration,
                         memory=MemoryOptions(**kw.get("memory_kwargs", {})),
                         seq_len=kw["seq_len"], with_scaling=False)
    except InputError as e:
        if model.layers % kw["pp"] != 0 and e.param in ("pp", "interleave"):
            return None, "not expressible yet: uneven pipeline", note
        return None, f"not expressible: {e}", note
    return float(p.tokens_per_s) / kw["gpus"], "", note, float(p.memory_bytes) / 1e9


def capacity_gb(gpu) -> float:
    """HBM capacity [GB] (the catalog keeps GiB)."""
    return gpu.memory_gib * 2**30 / 1e9


def catalog_model(cat, row):
    """The catalog architecture of a calibration row. A DeepSeek-V3 row trained with its
    multi-token-prediction module (the summary's plain "DeepSeekV3" and "w/ MTP") runs it as
    one more MoE layer at the end of the pipeline, so 62 layers, which with the embedding and
    the loss fill 64 pipeline slots (PP2 x VP8 x 4, PP4 x VP4 x 4, PP8 x 8, PP16 x 4)."""
    m = cat.model(MOE_MODELS.get(row["model"], row["model"]))
    if m.mtp_layers and "w/o MTP" not in str(row["model"]):
        m = m.with_(layers=m.layers + m.mtp_layers, mtp_layers=0)
    return m


def layout_text(row) -> str:
    parts = [f"TP{_int(row['tp'], 1)}", f"PP{_int(row['pp'], 1)}", f"CP{_int(row['cp'], 1)}"]
    for col, tag in (("vp", "VP"), ("ep", "EP"), ("fsdp", "FSDP")):
        if col in row and not pd.isna(row[col]) and int(row[col]) > 1:
            parts.append(f"{tag}{int(row[col])}")
    if not pd.isna(row["micro_batch"]):
        parts.append(f"mb{int(row['micro_batch'])}")
    return " ".join(parts) + f" B{int(row['global_batch'])} s{int(row['seq_len'])}"


def evaluate(rows: pd.DataFrame, cat=None, calibration: Calibration | None = None
             ) -> pd.DataFrame:
    """One line per row: measured, predicted, error (predicted / measured - 1) or the reason."""
    cat = cat or catalog.default()
    out = []
    for _, row in rows.iterrows():
        reason, model = expressibility(row, cat)
        pred, note, mem_gb = None, "", np.nan
        if model is not None:
            pred, reason, note, *rest = predict_row(row, model, cat, calibration)
            mem_gb = rest[0] if rest else np.nan
        meas = float(row["tokens_per_s_per_gpu"])
        out.append(dict(id=row["id"], source_table=row["source_table"], model=row["model"],
                        kind=row["model_kind"],
                        gpu=row["gpu"], generation=GENERATION.get(row["gpu"], row["gpu"]),
                        precision=row["precision"], layout=layout_text(row),
                        measured=meas, predicted=np.nan if pred is None else pred,
                        error=np.nan if pred is None else pred / meas - 1,
                        memory_gb=mem_gb,
                        capacity_gb=capacity_gb(source_gpu(row, cat)) if model is not None
                        else np.nan,
                        status=reason or "ok", assumptions=note))
    return pd.DataFrame(out)


def summarize(res: pd.DataFrame) -> pd.DataFrame:
    """Mean and max |error| and expressible / total per source table and GPU generation."""
    g = res.assign(abs_err=res["error"].abs()).groupby(["source_table", "generation", "kind"],
                                                       sort=False)
    return pd.DataFrame({"expressible": g["error"].count(), "total": g.size(),
                         "mean_abs_error": g["abs_err"].mean(),
                         "max_abs_error": g["abs_err"].max()}).reset_index()


def readme_table(res: pd.DataFrame) -> str:
    """The docs' table (docs/model.md, built by docs/gen.py): per source family, GPU and
    precision, rows predicted / listed and the mean and max |error|, with what the model
    cannot express yet."""
    fam = res["source_table"].str.replace(r"megatron-bridge .*", "Megatron-Bridge 25.11-26.08",
                                          regex=True)
    fam = fam.replace({"narayanan2021 table 1": "Narayanan 2021 Table 1",
                       "llama3 table 4": "Llama 3 Table 4"})
    fam = fam.str.replace(r"llm-foundry .*", "llm-foundry (stack fsdp)", regex=True)
    fam = fam.str.replace(r"torchtitan .*", "torchtitan (stack fsdp, not fitted)", regex=True)
    lines = ["| source | kind | GPU | precision | rows predicted / listed | mean abs. error "
             "| max abs. error | left out: why |", "|---|---|---|---|---|---|---|---|"]
    for (f, kind, gpu, prec), g in res.assign(family=fam).groupby(
            ["family", "kind", "gpu", "precision"]):
        e = g["error"].dropna().abs()
        why = sorted({REGRESSION_WHY if st == REGRESSION_STATUS else
                      st.replace("not expressible yet: ", "").replace("not expressible: ", "")
                      .split(" (")[0] for st in g["status"] if st != "ok"})
        why = ["NVFP4" if "nvfp4" in w else w for w in why]
        mean = f"{100 * e.mean():.1f}%" if len(e) else ""
        mx = f"{100 * e.max():.1f}%" if len(e) else ""
        lines.append(f"| {f} | {kind} | {gpu} | {prec} | {len(e)} / {len(g)} | {mean} | {mx} | "
                     f"{', '.join(sorted(set(why)))} |")
    return "\n".join(lines)


def _pct(x):
    return "" if x is None or pd.isna(x) else f"{100 * x:+.2f}%"


def format_table(res: pd.DataFrame) -> str:
    lines = [f"{'id':52s} {'source table':26s} {'gpu':9s} {'prec':6s} {'layout':40s} "
             f"{'measured':>10s} {'predicted':>10s} {'error':>9s} {'memory GB':>15s}  status"]
    for _, r in res.iterrows():
        pred = "" if pd.isna(r["predicted"]) else f"{r['predicted']:10.2f}"
        mem = ""
        if not pd.isna(r["memory_gb"]):
            # a run that ran fits; "over" means the memory model misses a recipe setting
            # (activation offload, recomputation) or overcounts
            over = "" if r["memory_gb"] <= r["capacity_gb"] else " over"
            mem = f"{r['memory_gb']:.0f}/{r['capacity_gb']:.0f}{over}"
        lines.append(f"{r['id']:52s} {r['source_table']:26s} {r['gpu']:9s} {r['precision']:6s} "
                     f"{r['layout']:40s} {r['measured']:10.2f} {pred:>10s} "
                     f"{_pct(r['error']):>9s} {mem:>15s}  {r['status']}")
    return "\n".join(lines)


def format_summary(summ: pd.DataFrame) -> str:
    lines = [f"{'source table':26s} {'generation':11s} {'kind':6s} {'expressible':>11s} "
             f"{'mean |err|':>10s} {'max |err|':>10s}"]
    for _, r in summ.iterrows():
        mean = "" if pd.isna(r["mean_abs_error"]) else f"{100 * r['mean_abs_error']:.1f}%"
        mx = "" if pd.isna(r["max_abs_error"]) else f"{100 * r['max_abs_error']:.1f}%"
        lines.append(f"{r['source_table']:26s} {r['generation']:11s} {r['kind']:6s} "
                     f"{r['expressible']:>5d} / {r['total']:<4d} {mean:>10s} {mx:>10s}")
    return "\n".join(lines)


def mfu_convention(cat=None) -> str:
    """The FLOP count the tool reports, and how Megatron-Bridge's TFLOP/s relate to it."""
    cat = cat or catalog.default()
    m = cat.model("llama3-405b")
    s = 8192
    full = float(m.flops_per_token("none", seq_len=s))
    attn = 12.0 * m.layers * s * m.heads * m.head_dim
    half = full - attn / 2
    return (
        "MFU convention: llmcost reports model FLOPs per token C = 6 (l P_mm + V h) + 12 l s d_q "
        "(every matmul weight 6 FLOPs/token, attention over the full s x s score matrix, no "
        "recomputation: PaLM App. B / Korthikanti et al. 2022 Eq. 7; "
        "llmcost.training.flops.flops_per_token, recompute='none') against the BF16 dense peak for every "
        "precision (an FP8 run's MFU is comparable with a BF16 run's). Megatron-Bridge's 'Model TFLOP/s' "
        "count causal attention at half "
        "(6 l s d_q), so for the same tokens/s they are lower by the factor "
        "1 - 6 l s d_q / C: for Llama 3.1 405B at s = 8192 that is "
        f"{half / full:.4f} ({full:.4g} vs {half:.4g} FLOP/token). Narayanan et al. Table 1 "
        "prints hardware TFLOP/s (Eq. 3, full recompute, full attention); Llama 3 Table 4 does "
        "not state its count. Rows are compared on tokens/s, never on TFLOP/s.")


def validate(rows=None, row_filter=None, cat=None, calibration=None,
             out=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluate and print the table, the summary and the MFU convention line.

    Parameters
    ----------
    rows : DataFrame, optional
        Calibration rows; default data/calibration_runs.csv.
    row_filter : callable, optional
        DataFrame -> boolean mask selecting the rows to evaluate.
    out : file, optional
        Where to print (default stdout).
    """
    out = out or sys.stdout
    rows = load_rows() if rows is None else rows
    if row_filter is not None:
        rows = rows[row_filter(rows)]
    res = evaluate(rows, cat, calibration)
    summ = summarize(res)
    print(format_table(res), file=out)
    print("\nSummary (errors = predicted / measured tokens/s/GPU - 1, expressible rows only)",
          file=out)
    print(format_summary(summ), file=out)
    print("\n" + mfu_convention(cat), file=out)
    print("\nAssumptions per source (not printed by the sources):", file=out)
    for src, note in res.drop_duplicates("source_table")[["source_table", "assumptions"]].values:
        if note:
            print(f"  {src}: {note}", file=out)
    return res, summ


# ------------------------------------------------------------------ fit harness

def _calibration(x_log, base=DEFAULT_CALIBRATION, params=FIT_PARAMS) -> Calibration:
    return replace(base, **{k: float(np.exp(x)) for k, x in zip(params, x_log)})


def _residuals(x_log, rows, models, cat, params=FIT_PARAMS):
    cal = _calibration(x_log, params=params)
    res = []
    for (_, row), model in zip(rows.iterrows(), models):
        pred = predict_row(row, model, cat, cal)[0]
        res.append(np.log(pred / float(row["tokens_per_s_per_gpu"])))
    return np.array(res)


def fit_generation(rows: pd.DataFrame, cat=None, params=FIT_PARAMS):
    """Least-squares fit of Calibration on log(predicted / measured) for expressible rows.

    Returns a dict with the fitted constants, the singular values of the Jacobian with
    respect to log(constant), the constants the rows cannot identify and the residuals.
    """
    from scipy.optimize import least_squares

    cat = cat or catalog.default()
    models = [cat.model(MOE_MODELS.get(m, m)) for m in rows["model"]]
    x0 = np.log([getattr(DEFAULT_CALIBRATION, k) for k in params])
    lo = np.log([FIT_BOUNDS[k][0] for k in params])
    hi = np.log([FIT_BOUNDS[k][1] for k in params])
    sol = least_squares(_residuals, np.clip(x0, lo + 1e-9, hi - 1e-9), bounds=(lo, hi),
                        args=(rows, models, cat, params), x_scale=1.0, diff_step=1e-3)
    J = sol.jac
    sv = np.linalg.svd(J, compute_uv=False) if J.size else np.array([])
    n, k = J.shape
    dof = max(n - k, 1)
    s2 = float(np.sum(sol.fun ** 2) / dof)
    # A constant is not identified when moving it changes no residual (a zero column), when it
    # sits at a bound, or when its log-standard error exceeds 1 (a factor e either way).
    jtj = J.T @ J
    cov = np.linalg.pinv(jtj) * s2
    std = np.sqrt(np.clip(np.diag(cov), 0, None))
    at_bound = np.isclose(sol.x, lo, atol=1e-4) | np.isclose(sol.x, hi, atol=1e-4)
    col = np.linalg.norm(J, axis=0)
    unidentified = []
    for i, name in enumerate(params):
        why = []
        if col[i] < 1e-6:
            why.append("no effect on these rows")
        if at_bound[i]:
            why.append("at its bound")
        if std[i] > 1.0 or n < k:
            why.append(f"log-std {std[i]:.2g}" if n >= k else f"{n} rows for {k} constants")
        if why:
            unidentified.append(f"{name} ({', '.join(why)})")
    # the weakest direction: a combination of constants the data trade against each other
    if J.size:
        _, _, vt = np.linalg.svd(J, full_matrices=False)
        weak = vt[-1]
        combo = " ".join(f"{w:+.2f}*log({p})" for w, p in zip(weak, params) if abs(w) > 0.2)
    else:
        combo = ""
    return dict(values={p: float(np.exp(x)) for p, x in zip(params, sol.x)},
                singular_values=sv, log_std=dict(zip(params, std)),
                unidentified=unidentified, weakest=combo, residuals=sol.fun,
                cost=float(sol.cost))


def _expressible(rows, cat):
    keep = []
    for i, row in rows.iterrows():
        reason, model = expressibility(row, cat)
        if model is not None and predict_row(row, model, cat)[0] is not None:
            keep.append(i)
    return rows.loc[keep]


def fit(rows=None, cat=None, out=None, free="per-generation"):
    """Fit per GPU generation; print constants, identifiability and leave-one-group-out error.

    ``free``: "per-generation" fits GEN_PARAMS (what the library uses), "all" FIT_PARAMS.
    """
    out = out or sys.stdout
    cat = cat or catalog.default()
    rows = load_rows() if rows is None else rows
    rows = rows.assign(generation=rows["gpu"].map(GENERATION).fillna(rows["gpu"]))
    # a GPU with its own constant set is fitted on its own rows
    rows = rows.assign(generation=rows["generation"].where(~rows["gpu"].isin(FIT_APART),
                                                           rows["gpu"]))
    # dense rows: the MoE rows fit their own constants (fit_moe); the FSDP stack's rows fit
    # theirs (fit_fsdp)
    megatron = rows.apply(row_stack, axis=1) == "megatron"
    ok = _expressible(rows[(rows["model_kind"] == "dense") & megatron], cat)
    print("\nFit of Calibration per GPU generation (scipy.optimize.least_squares on "
          "log(predicted / measured tokens/s); prints only: the library's sets are "
          "llmcost.training.step.CALIBRATION_BY_GENERATION)", file=out)
    results = {}
    for gen in ("ampere", "hopper", "blackwell", *FIT_APART):
        sub = ok[ok["generation"] == gen]
        total = int(((rows["generation"] == gen) & megatron).sum())
        print(f"\n[{gen}] {len(sub)} expressible of {total} rows", file=out)
        if len(sub) == 0:
            print("  nothing to fit: no row of this generation is expressible today", file=out)
            continue
        params = FIT_PARAMS if free == "all" else GEN_PARAMS[gen]
        r = fit_generation(sub, cat, params)
        results[gen] = r
        library = step.calibration_for(cat.gpu(sub["gpu"].iloc[0]))
        for k, val in r["values"].items():
            print(f"  {k:22s} {val:10.4g}  (library {getattr(library, k):.4g}, "
                  f"log-std {r['log_std'][k]:.2g})", file=out)
        sv = r["singular_values"]
        print("  Jacobian singular values (d residual / d log constant): "
              + ", ".join(f"{x:.3g}" for x in sv), file=out)
        print(f"  weakest direction: {r['weakest']}", file=out)
        print("  not identified by these rows: " + ("; ".join(r["unidentified"]) or "none"),
              file=out)
        fitted = np.exp(r["residuals"]) - 1
        print(f"  in-sample error: mean |err| {100 * np.mean(np.abs(fitted)):.1f}%, "
              f"max {100 * np.max(np.abs(fitted)):.1f}%", file=out)
        # leave one group (source table x model) out
        groups = sub["source_table"] + " / " + sub["model"]
        print(f"  leave-one-group-out ({groups.nunique()} groups):", file=out)
        print(f"    {'held-out group':48s} {'rows':>4s} {'mean |err|':>10s} {'max |err|':>10s}",
              file=out)
        errs, base = [], []
        for g in groups.unique():
            train, test = sub[groups != g], sub[groups == g]
            if len(train) == 0:
                print(f"    {g:48s} {len(test):4d} {'n/a: only group':>21s}", file=out)
                continue
            rt = fit_generation(train, cat, params)
            cal = _calibration(np.log(list(rt["values"].values())), params=params)
            base += [predict_row(row, catalog_model(cat, row), cat, DEFAULT_CALIBRATION)[0]
                     / float(row["tokens_per_s_per_gpu"]) - 1 for _, row in test.iterrows()]
            e = np.array([predict_row(row, catalog_model(cat, row), cat, cal)[0]
                          / float(row["tokens_per_s_per_gpu"]) - 1
                          for _, row in test.iterrows()])
            errs += list(e)
            r.setdefault("held_out", []).extend(zip(test["precision"], e))
            print(f"    {g:48s} {len(test):4d} {100 * np.mean(np.abs(e)):9.1f}% "
                  f"{100 * np.max(np.abs(e)):9.1f}%", file=out)
        if errs:
            print(f"    overall held-out: mean |err| {100 * np.mean(np.abs(errs)):.1f}%, "
                  f"max {100 * np.max(np.abs(errs)):.1f}%; with Table 1's constants on the "
                  f"same rows: mean {100 * np.mean(np.abs(base)):.1f}%, "
                  f"max {100 * np.max(np.abs(base)):.1f}%", file=out)
    return results


MOE_PARAMS = ("moe_layer_overhead_s", "moe_a2a_overlap")
MOE_BOUNDS = {"moe_layer_overhead_s": (1e-6, 0.05), "moe_a2a_overlap": (0.001, 0.999)}


def _moe_residuals(x, rows, models, cat):
    vals = dict(zip(MOE_PARAMS, np.exp(x)))
    out = []
    for (_, row), model in zip(rows.iterrows(), models):
        cal = replace(step.calibration_for(cat.gpu(row["gpu"])),
                      moe_layer_overhead_s=vals["moe_layer_overhead_s"])
        pred = predict_row(row, model, cat, cal,
                           dict(moe_a2a_overlap=vals["moe_a2a_overlap"]))[0]
        out.append(np.log(pred / float(row["tokens_per_s_per_gpu"])))
    return np.array(out)


def fit_moe(rows=None, cat=None, out=None):
    """Fit the MoE constants on the expressible MoE rows; print them, their identification
    and the leave-one-group-out error (group = model x GPU: every release of one model on one
    GPU is held out together)."""
    from scipy.optimize import least_squares
    out = out or sys.stdout
    cat = cat or catalog.default()
    rows = load_rows() if rows is None else rows
    moe = rows[(rows["model_kind"] == "moe") & (rows["task"] == "pretrain")]
    moe = moe[[predict_row(r, catalog_model(cat, r), cat)[0] is not None
               if expressibility(r, cat)[1] is not None else False
               for _, r in moe.iterrows()]]
    lo = np.log([MOE_BOUNDS[k][0] for k in MOE_PARAMS])
    hi = np.log([MOE_BOUNDS[k][1] for k in MOE_PARAMS])
    x0 = np.log([1e-3, 0.5])

    def solve(sub):
        models = [catalog_model(cat, r) for _, r in sub.iterrows()]
        return least_squares(_moe_residuals, x0, bounds=(lo, hi), args=(sub, models, cat),
                             diff_step=1e-3)

    sol = solve(moe)
    J = sol.jac
    s2 = float(np.sum(sol.fun ** 2) / max(len(sol.fun) - len(x0), 1))
    std = np.sqrt(np.clip(np.diag(np.linalg.pinv(J.T @ J) * s2), 0, None))
    print(f"\n[moe] {len(moe)} expressible MoE rows (Megatron-Bridge 25.11+)", file=out)
    for k, x, sd in zip(MOE_PARAMS, sol.x, std):
        print(f"  {k:22s} {np.exp(x):10.4g}  (log-std {sd:.2g})", file=out)
    e = np.exp(sol.fun) - 1
    print(f"  in-sample error: mean |err| {100 * np.mean(np.abs(e)):.1f}%, "
          f"max {100 * np.max(np.abs(e)):.1f}%", file=out)
    groups = moe["model"].map(lambda m: MOE_MODELS.get(m, m)) + " / " + moe["gpu"]
    held = []
    for g in groups.unique():
        train, test = moe[groups != g], moe[groups == g]
        st = solve(train)
        r = np.exp(_moe_residuals(st.x, test, [catalog_model(cat, r) for _, r in
                                              test.iterrows()], cat)) - 1
        held += list(r)
        print(f"    {g:40s} {len(test):3d} rows: mean |err| {100 * np.mean(np.abs(r)):5.1f}%, "
              f"max {100 * np.max(np.abs(r)):5.1f}%", file=out)
    held = np.abs(held)
    print(f"  leave-one-group-out: mean |err| {100 * held.mean():.1f}%, "
          f"max {100 * held.max():.1f}%", file=out)
    return dict(zip(MOE_PARAMS, np.exp(sol.x))), held


# ------------------------------------------------------------------ attention's tile overhead

#: FlashAttention-2's causal forward (BF16, head dim 64) on H100 SXM5 against sequence length,
#: at 16k tokens per batch, as printed on the bars of Shah et al. 2024 (FlashAttention-3,
#: arXiv:2407.08608) Fig. 5 [TFLOP/s, FlashAttention's count]. The kernel's own shape, from
#: which the fixed work of a query tile (Calibration.attention_tile_overhead) is fitted.
FA2_CAUSAL_H100 = {512: 180.0, 1024: 229.0, 2048: 262.0, 4096: 284.0, 8192: 295.0,
                   16384: 299.0}


def fit_attention_tile(points=None, out=None) -> dict:
    """Fit the plateau e P and the tile overhead c of s / (s + (2c + 1) T) to a fused-attention
    kernel's published throughput against sequence length (:data:`FA2_CAUSAL_H100`); print the
    values, their log-standard errors (Jacobian) and the residuals."""
    from scipy.optimize import least_squares

    from llmcost.training.attention import ATTENTION_TILE
    out = out or sys.stdout
    pts = FA2_CAUSAL_H100 if points is None else points
    s = np.array(list(pts), float)
    y = np.array(list(pts.values()), float)

    def residuals(x):
        plateau, c = np.exp(x)
        return np.log(plateau * s / (s + (2.0 * c + 1.0) * ATTENTION_TILE)) - np.log(y)

    sol = least_squares(residuals, np.log([y.max(), 1.0]))
    s2 = float(np.sum(sol.fun ** 2) / max(len(s) - 2, 1))
    std = np.sqrt(np.diag(np.linalg.pinv(sol.jac.T @ sol.jac) * s2))
    plateau, c = np.exp(sol.x)
    print(f"\n[attention] FlashAttention-2 causal forward on H100 (Shah et al. 2024 Fig. 5, "
          f"{len(s)} points): plateau {plateau:.0f} TFLOP/s (log-std {std[0]:.3f}), "
          f"attention_tile_overhead c {c:.3f} (library "
          f"{DEFAULT_CALIBRATION.attention_tile_overhead}, log-std {std[1]:.3f}); residuals "
          + ", ".join(f"{100 * e:+.1f}%" for e in np.expm1(sol.fun)), file=out)
    return dict(plateau_tflops=float(plateau), c=float(c), log_std=std, residuals=sol.fun)


# ------------------------------------------------------------------ the fsdp stack

#: Constants of the fsdp stack fitted per GPU generation (properties of the GPU and of the
#: kernel libraries the stack calls: cuBLAS GEMMs, flash-attn) and shared by every generation
#: (properties of the software: bytes moved by its unfused eager kernels, its fixed cost per
#: wrapped block); see llmcost.training.step.CALIBRATION_BY_STACK.
FSDP_GEN_PARAMS = ("matmul_efficiency", "attention_efficiency")
FSDP_SHARED_PARAMS = ("elementwise_traffic", "layer_host_overhead_s")
FSDP_GENERATIONS = ("ampere", "hopper")
FSDP_BOUNDS = {"matmul_efficiency": (0.2, 0.98), "attention_efficiency": (0.05, 0.9),
               "elementwise_traffic": (0.1, 40.0), "layer_host_overhead_s": (1e-6, 0.05)}


def _fsdp_names(gens=FSDP_GENERATIONS):
    return [f"{p}@{g}" for p in FSDP_GEN_PARAMS for g in gens] + list(FSDP_SHARED_PARAMS)


def _fsdp_calibrations(x_log, names) -> dict:
    """{generation: Calibration} from fitted log-constants: Table 1's set with the fsdp
    constants replaced (the NVLink efficiency and the GEMM traffic k stay measured / fixed)."""
    vals = dict(zip(names, np.exp(x_log)))
    gens = sorted({n.split("@")[1] for n in names if "@" in n})
    return {g: replace(DEFAULT_CALIBRATION,
                       **{p: float(vals[f"{p}@{g}"]) for p in FSDP_GEN_PARAMS},
                       **{p: float(vals[p]) for p in FSDP_SHARED_PARAMS}) for g in gens}


def _fsdp_residuals(x_log, rows, models, cat, names):
    cals = _fsdp_calibrations(x_log, names)
    return np.array([np.log(predict_row(r, m, cat, cals[GENERATION[r["gpu"]]])[0]
                            / float(r["tokens_per_s_per_gpu"]))
                     for (_, r), m in zip(rows.iterrows(), models)])


def fsdp_rows(rows=None, cat=None, source=FSDP_FIT_SOURCE) -> pd.DataFrame:
    """The expressible rows of one FSDP source (default: the fitted one, llm-foundry)."""
    cat = cat or catalog.default()
    rows = load_rows() if rows is None else rows
    return _expressible(rows[rows["source_table"].str.startswith(source)], cat)


def fit_fsdp_constants(rows, cat=None) -> dict:
    """Least-squares fit of the fsdp stack's constants (FSDP_GEN_PARAMS per generation,
    FSDP_SHARED_PARAMS once) on log(predicted / measured tokens/s) of ``rows``; returns the
    values, their log-standard errors, the constants the rows do not identify, the
    residuals and the per-generation Calibrations."""
    from scipy.optimize import least_squares
    cat = cat or catalog.default()
    gens = [g for g in FSDP_GENERATIONS if (rows["gpu"].map(GENERATION) == g).any()]
    names = _fsdp_names(gens)
    models = [catalog_model(cat, r) for _, r in rows.iterrows()]
    start = {n: float(getattr(step.CALIBRATION_BY_STACK["fsdp"][n.split("@")[1]]
                              if "@" in n else step.CALIBRATION_BY_STACK["fsdp"][gens[0]],
                              n.split("@")[0])) for n in names}
    lo = np.log([FSDP_BOUNDS[n.split("@")[0]][0] for n in names])
    hi = np.log([FSDP_BOUNDS[n.split("@")[0]][1] for n in names])
    x0 = np.clip(np.log(np.maximum([start[n] for n in names], np.exp(lo))), lo + 1e-6, hi - 1e-6)
    sol = least_squares(_fsdp_residuals, x0, bounds=(lo, hi), args=(rows, models, cat, names),
                        diff_step=1e-3)
    J = sol.jac
    s2 = float(np.sum(sol.fun ** 2) / max(len(sol.fun) - len(names), 1))
    std = np.sqrt(np.clip(np.diag(np.linalg.pinv(J.T @ J) * s2), 0, None))
    at_bound = np.isclose(sol.x, lo, atol=1e-4) | np.isclose(sol.x, hi, atol=1e-4)
    unidentified = [n for n, sd, b in zip(names, std, at_bound) if sd > 1.0 or b]
    return dict(values={n: float(np.exp(x)) for n, x in zip(names, sol.x)},
                log_std=dict(zip(names, std)), unidentified=unidentified,
                residuals=sol.fun, calibrations=_fsdp_calibrations(sol.x, names))


def _errors_text(e) -> str:
    e = np.abs(np.asarray(e))
    return f"mean |err| {100 * e.mean():.1f}%, max {100 * e.max():.1f}% ({len(e)} rows)"


def fit_fsdp(rows=None, cat=None, out=None, hold_out=True):
    """Fit the fsdp stack's constants on llm-foundry's rows; print them beside the library's
    (CALIBRATION_BY_STACK["fsdp"]), their identification, the in-sample error per table, the
    error of each table when it is left out of the fit (``hold_out``), and the error on the
    rows of the other FSDP sources (torchtitan), which no fit sees."""
    out = out or sys.stdout
    cat = cat or catalog.default()
    rows = load_rows() if rows is None else rows
    fit_rows = fsdp_rows(rows, cat)
    r = fit_fsdp_constants(fit_rows, cat)
    print(f"\n[fsdp] {len(fit_rows)} expressible {FSDP_FIT_SOURCE} rows (stack fsdp; "
          "scipy least_squares on log(predicted / measured tokens/s))", file=out)
    lib = step.CALIBRATION_BY_STACK["fsdp"]
    for n, val in r["values"].items():
        p, _, g = n.partition("@")
        print(f"  {n:34s} {val:10.4g}  (library {getattr(lib[g or 'hopper'], p):.4g}, "
              f"log-std {r['log_std'][n]:.2g})", file=out)
    print("  not identified by these rows: " + (", ".join(r["unidentified"]) or "none"),
          file=out)
    e = np.exp(r["residuals"]) - 1
    print(f"  in-sample: {_errors_text(e)}", file=out)
    for t, idx in fit_rows.groupby("source_table").indices.items():
        print(f"    {t:40s} {_errors_text(e[idx])}", file=out)
    if hold_out:
        held = []
        print("  leave-one-table-out (each table predicted with the constants fitted on the "
              "others):", file=out)
        for t in sorted(fit_rows["source_table"].unique()):
            train, test = fit_rows[fit_rows["source_table"] != t], fit_rows[
                fit_rows["source_table"] == t]
            cals = fit_fsdp_constants(train, cat)["calibrations"]
            err = [predict_row(x, catalog_model(cat, x), cat, cals[GENERATION[x["gpu"]]])[0]
                   / float(x["tokens_per_s_per_gpu"]) - 1 for _, x in test.iterrows()]
            held += err
            print(f"    {t:40s} {_errors_text(err)}", file=out)
        print(f"    overall held-out: {_errors_text(held)}", file=out)
    other = _expressible(rows[rows["source_table"].str.startswith(FSDP_SOURCES)
                              & ~rows["source_table"].str.startswith(FSDP_FIT_SOURCE)], cat)
    for _, x in other.iterrows():
        cal = r["calibrations"].get(GENERATION.get(x["gpu"]))
        pred = predict_row(x, catalog_model(cat, x), cat, cal)[0]
        print(f"  out of sample {x['id']:40s} measured {x['tokens_per_s_per_gpu']:8.0f}, "
              f"predicted {pred:8.0f} ({100 * (pred / x['tokens_per_s_per_gpu'] - 1):+.1f}%)",
              file=out)
    return r


ERRORS = ROOT / "data" / "step_model_errors.csv"


def error_table(results: dict, commit: str = "", as_of: str = "",
                moe_held=None) -> pd.DataFrame:
    """data/step_model_errors.csv from :func:`fit`'s held-out errors, per generation and
    precision: each row's error when its group (source table x model) was left out of the
    fit. These bands are what :mod:`llmcost.training.uncertainty` puts on predictions."""
    out = []
    # a GPU fitted apart (FIT_APART) reports with its generation, whose bands it uses
    merged, params = {}, {}
    for gen, r in results.items():
        g = GENERATION.get(gen, gen)
        merged.setdefault(g, []).extend(r.get("held_out", []))
        params.setdefault(g, GEN_PARAMS[gen])
    for gen, held_out in merged.items():
        held = pd.DataFrame(held_out, columns=["precision", "error"])
        for prec, g in held.groupby("precision"):
            e = np.abs(g["error"].to_numpy())
            out.append(dict(
                id=f"{gen}-{prec}", generation=gen, precision=prec, rows=len(e),
                mean_abs_error=round(float(e.mean()), 3), max_abs_error=round(float(e.max()), 3),
                method="leave-one-group-out",
                notes=(f"each of the {len(e)} calibration rows predicted with "
                       f"{', '.join(params[gen])} refit without its group (source table x "
                       f"model){'; GB300 fitted apart' if gen == 'blackwell' else ''}; rows: "
                       f"data/calibration_runs.csv"),
                source=f"make validate FIT=1 (benchmarks/validate.py){commit}", as_of=as_of))
    if moe_held is not None and len(moe_held):
        e = np.abs(np.asarray(moe_held))
        out.append(dict(
            id="moe-all", generation="moe", precision="all", rows=len(e),
            mean_abs_error=round(float(e.mean()), 3), max_abs_error=round(float(e.max()), 3),
            band_abs_error=round(float(np.quantile(e, 0.9)), 3),
            method="leave-one-group-out (model x GPU)",
            notes=(f"each of the {len(e)} Megatron-Bridge MoE rows predicted with the MoE "
                   "constants refit without its model x GPU group; the band is the 90th "
                   "percentile (releases differ by up to 45% on one layout); rows the "
                   "source flags as a known regression are left out"),
            source=f"make validate FIT=1 (benchmarks/validate.py){commit}", as_of=as_of))
    table = pd.DataFrame(out)
    if "band_abs_error" not in table:
        table["band_abs_error"] = np.nan
    return table


PAIRED = ROOT / "data" / "paired_runs.csv"


def load_paired(path=PAIRED) -> pd.DataFrame:
    """data/paired_runs.csv: one benchmark run on a GPU the step model cannot fit directly
    and on a calibrated reference GPU."""
    return pd.read_csv(path)


def paired_step_s(row, cat, calibration: Calibration | None = None) -> float:
    """Forward and backward time of a paired row's step [s]: the step model's compute plus
    exposed tensor- and context-parallel communication of the full-parameter step on the
    row's layout, with the recomputed layers' share of the full-recomputation cost.

    The step model has no LoRA step. A LoRA step runs the same GEMM shapes without the
    weight-gradient GEMMs (a third of them), reduces and updates only the adapters, so the
    optimizer and data-parallel terms are left out and the ratio of two such times is taken
    as the ratio of the LoRA steps (assumption; on Hopper it reproduces the measured H200 /
    H100 ratio, :func:`fit_paired`). One node: the scale-out fabric is never used."""
    gpu = cat.gpu(row["gpu"])
    cal = step.calibration_for(gpu) if calibration is None else calibration
    opts = Options(flash_attention=True, tp_comm_overlap=bool(row["tp_comm_overlap"]))
    t = {}
    for rec in ("none", "full"):
        layout = Layout(gpus=int(row["gpus"]), tp=int(row["tp"]), pp=int(row["pp"]),
                        cp=int(row["cp"]), micro_batch=int(row["micro_batch"]),
                        global_batch=int(row["global_batch"]), recompute=rec,
                        sequence_parallel=bool(row["sequence_parallel"]),
                        precision=row["precision"], flash_attention=None, tp_comm_overlap=None)
        p = predict_step(cat.model(row["model"]),
                         Hardware(gpu, cat.fabric(gpu.scale_up), cat.fabric(SCALE_OUT_DEFAULT)),
                         layout, options=opts, calibration=cal, seq_len=int(row["seq_len"]),
                         with_scaling=False)
        t[rec] = float(p.compute_s + p.tp_comm_s + p.cp_comm_s)
    share = float(row["recompute_layers"]) / cat.model(row["model"]).layers
    return t["none"] + share * (t["full"] - t["none"])


def paired_error(row, ref, cat, calibration: Calibration | None = None) -> float:
    """Predicted / measured - 1 of a row's tokens/s per GPU relative to its reference's:
    (t_ref / t_row) / (measured_row / measured_ref) - 1, the reference predicted with its own
    library constants."""
    measured = float(row["tokens_per_s_per_gpu"]) / float(ref["tokens_per_s_per_gpu"])
    ratio = paired_step_s(ref, cat) / paired_step_s(row, cat, calibration)
    return ratio / measured - 1


def fit_paired(rows=None, cat=None, out=None) -> dict:
    """Fit e_max of each GPU of data/paired_runs.csv to its runs relative to their reference.

    Per GPU: least squares on log(predicted / measured ratio) over its rows, e_max the only
    free constant (the others as Table 1's); log-std from the Jacobian; then each round
    predicted with e_max refit on the other rounds. Prints; returns GPU -> dict(value,
    log_std, residuals, held_out).
    """
    from scipy.optimize import least_squares

    out = out or sys.stdout
    cat = cat or catalog.default()
    rows = load_paired() if rows is None else rows
    by_id = rows.set_index("id")
    paired = rows[rows["reference"].notna()]
    print("\nFit of e_max on paired runs (data/paired_runs.csv; the step model cannot express "
          "them, so each is predicted relative to its reference run on a calibrated GPU; "
          "prints only: the library's constants are llmcost.training.step.CALIBRATION_BY_GPU)",
          file=out)
    lo, hi = np.log(FIT_BOUNDS["matmul_efficiency"])

    def solve(sub):
        def res(x):
            cal = replace(DEFAULT_CALIBRATION, matmul_efficiency=float(np.exp(x[0])))
            return np.array([np.log1p(paired_error(r, by_id.loc[r["reference"]], cat, cal))
                             for _, r in sub.iterrows()])
        sol = least_squares(res, [np.log(DEFAULT_CALIBRATION.matmul_efficiency)],
                            bounds=([lo], [hi]), diff_step=1e-3)
        n = len(sub)
        s2 = float(np.sum(sol.fun ** 2) / max(n - 1, 1))
        jtj = float((sol.jac.T @ sol.jac)[0, 0])
        return float(np.exp(sol.x[0])), (np.sqrt(s2 / jtj) if jtj > 0 else np.inf), sol.fun

    results = {}
    for gpu in [g for g in dict.fromkeys(paired["gpu"]) if g in PAIRED_GPUS]:
        sub = paired[paired["gpu"] == gpu]
        value, log_std, fun = solve(sub)
        library = step.calibration_for(cat.gpu(gpu)).matmul_efficiency
        print(f"\n[{gpu}] {len(sub)} runs against {', '.join(sorted(set(sub['reference'])))}",
              file=out)
        print(f"  matmul_efficiency {value:10.4g}  (library {library:.4g}, log-std "
              f"{log_std:.2g} from {len(sub)} runs)", file=out)
        held = []
        for rnd in dict.fromkeys(sub["round"]):
            train, test = sub[sub["round"] != rnd], sub[sub["round"] == rnd]
            if train.empty:
                continue
            v, _, _ = solve(train)
            cal = replace(DEFAULT_CALIBRATION, matmul_efficiency=v)
            e = [paired_error(r, by_id.loc[r["reference"]], cat, cal) for _, r in test.iterrows()]
            held += e
            print(f"    round {rnd} held out (e_max {v:.4f} from the others): "
                  + ", ".join(f"{x:+.1%}" for x in e), file=out)
        if held:
            print(f"    leave-one-round-out: mean |err| {100 * np.mean(np.abs(held)):.1f}%, "
                  f"max {100 * np.max(np.abs(held)):.1f}%", file=out)
        results[gpu] = dict(value=value, log_std=log_std, residuals=np.expm1(fun),
                            held_out=held)
    checks = paired[~paired["gpu"].isin(PAIRED_GPUS)]
    for _, r in checks.iterrows():
        e = paired_error(r, by_id.loc[r["reference"]], cat)
        print(f"\n  check, not fitted: {r['id']} against {r['reference']} with the library's "
              f"constants: {e:+.1%}", file=out)
        results[r["id"]] = dict(check=e)
    return results


def mxfp8_pairs(rows: pd.DataFrame) -> list:
    """(FP8, MXFP8) row pairs that ran the same model, GPU and layout in one release."""
    mb = rows[rows["source_table"].str.startswith("megatron-bridge")
              & (rows["task"] == "pretrain") & (rows["model_kind"] == "dense")]
    keys = mb.apply(lambda r: (r["source_table"], r["model"], r["gpu"], layout_text(r)), axis=1)
    pairs = []
    for _, g in mb.groupby(keys):
        if {"fp8", "mxfp8"} <= set(g["precision"]):
            pairs.append((g[g["precision"] == "fp8"].iloc[0],
                          g[g["precision"] == "mxfp8"].iloc[0]))
    return pairs


def fit_mxfp8(rows=None, cat=None, out=None):
    """Fit Calibration.mxfp8_gemm_efficiency to the measured MXFP8 / FP8 throughput ratios."""
    from scipy.optimize import least_squares
    out = out or sys.stdout
    cat = cat or catalog.default()
    rows = load_rows() if rows is None else rows
    pairs = mxfp8_pairs(rows)

    def residuals(x):
        cal = replace(DEFAULT_CALIBRATION, mxfp8_gemm_efficiency=float(np.exp(x[0])))
        res = []
        for a, b in pairs:
            m = cat.model(a["model"])
            ratio = predict_row(b, m, cat, cal)[0] / predict_row(a, m, cat, cal)[0]
            res.append(np.log(ratio) - np.log(b["tokens_per_s_per_gpu"]
                                              / a["tokens_per_s_per_gpu"]))
        return np.array(res)

    r = least_squares(residuals, [0.0])
    sigma = np.sqrt(np.sum(r.fun ** 2) / max(len(r.fun) - 1, 1))
    log_std = sigma / np.sqrt(float((r.jac.T @ r.jac)[0, 0]))
    print(f"\n[mxfp8] {len(pairs)} same-layout FP8/MXFP8 pairs: mxfp8_gemm_efficiency "
          f"{np.exp(r.x[0]):.4f} (default {DEFAULT_CALIBRATION.mxfp8_gemm_efficiency}, "
          f"log-std {log_std:.3f}); residuals {', '.join(f'{100 * e:+.1f}%' for e in r.fun)}",
          file=out)
    return float(np.exp(r.x[0])), r.fun


# ------------------------------------------------------------------ whole runs

WHOLE_RUNS = ROOT / "data" / "whole_runs.csv"
#: architectures of the whole runs the catalog does not hold (a row's ``config`` column)
HF_CONFIGS = ROOT / "tests" / "data" / "hf_configs"
#: GPU-hours counted in the summary: as published, or arithmetic on published figures (GPUs x
#: days, a rate per trillion tokens x tokens); "approximate" ones ("two months") are listed only
WHOLE_RUN_STATISTICS = ("reported", "derived")


def not_fitted_because(row) -> str:
    """Why a run's published hours are not one pre-training run (data/whole_runs.csv
    ``not_fitted_because``: several stages, distillation or teacher passes, approximate hours), or
    '' when they are and the run may be counted and fitted."""
    x = row.get("not_fitted_because", "")
    return "" if pd.isna(x) else str(x).strip()


def whole_run_counted(row) -> bool:
    """A run counted in the summary (and usable in fits): its hours reported or derived
    (WHOLE_RUN_STATISTICS) and one pre-training run (no :func:`not_fitted_because`)."""
    return row["hours_status"] in WHOLE_RUN_STATISTICS and not not_fitted_because(row)


def load_whole_runs(path=WHOLE_RUNS) -> pd.DataFrame:
    """data/whole_runs.csv: published GPU-hours of whole pre-training runs."""
    return pd.read_csv(path)


def whole_run_gpus(row) -> int:
    """The run's GPU count: as published, else the count its notes assume."""
    return int(row["gpus"]) if not pd.isna(row["gpus"]) else int(row["gpus_assumed"])


def published_layout(row) -> str:
    """The run's layout as its source publishes it, as review link keys (``tp=4&pp=12...``;
    only the keys the source states), or '' when the source gives none."""
    x = row.get("published_layout", "")
    return "" if pd.isna(x) else str(x)


def whole_run_query(row, with_fabric=True) -> str:
    """The review's link query for one whole run: the run as published (model or config.json
    fields, GPU, GPUs, tokens, precision, sequence length, fabric, stack and, where published,
    the global batch); the layout is left to the planner. ``with_fabric=False`` leaves the
    fabric out (the review's default: the one the GPU's systems ship with)."""
    from urllib.parse import urlencode

    from llmcost.scenario import CONFIG_PREFIX, config_text
    from llmcost.training import hf_config
    items = {}
    if isinstance(row["model"], str) and row["model"]:
        items["model"] = row["model"]
    else:
        fields = hf_config.config_fields(hf_config.read_config_file(HF_CONFIGS / row["config"]))
        items["model"] = "config"
        items.update({CONFIG_PREFIX + k: x for k, x in json.loads(config_text(fields)).items()})
    items.update(gpu=row["gpu"], gpus=whole_run_gpus(row), tokens=f"{float(row['tokens']):.15g}",
                 precision=row["precision"], seq_len=int(row["seq_len"]), stack=row["stack"])
    if with_fabric:
        items["fabric"] = row["fabric"]
    if with_fabric and row["fabric"] == "custom":
        items["fabric_gb_per_s_per_gpu"] = f"{float(row['fabric_gb_per_s_per_gpu']):g}"
    if not pd.isna(row["global_batch_tokens"]):
        items["global_batch_tokens"] = int(row["global_batch_tokens"])
    return urlencode(items)


def whole_runs(out=None, rows=None) -> pd.DataFrame:
    """Review vs published vs napkin GPU-hours for every published whole run, printed to
    ``out`` (default: sys.stdout at call time, so redirecting stdout captures it).

    Each row of data/whole_runs.csv is reviewed as a user would link it
    (:func:`whole_run_query` -> ``Scenario.from_query`` -> ``llmcost.review.evaluate``); nothing
    is fitted to these rows. Errors are estimate / published - 1; the summary's mean and max
    |error| count the rows whose hours are reported or derived (WHOLE_RUN_STATISTICS) and are one
    pre-training run (:func:`whole_run_counted`: no ``not_fitted_because``).

    Returns
    -------
    DataFrame
        One row per run: id, published_gpu_hours, gpu_hours (the review's), error,
        napkin_gpu_hours, napkin_error, layout, mfu, goodput, fits, days, gpus,
        global_batch_tokens, in_statistics, status ("ok" or the InputError the review raised),
        query, auto_error: the review's error with the run's fabric left out (the GPU's
        usual one; NaN if refused), and layout_error / layout_fits: the review given the
        run's published layout (:func:`published_layout`; NaN / None when none is published,
        the refusal's text when the review refuses it), given_layout: that review's layout
        (its JSON ``layout``).
    """
    from llmcost.review import evaluate as review
    from llmcost.scenario import Scenario
    out = out or sys.stdout
    rows = load_whole_runs() if rows is None else rows
    res = []
    for _, row in rows.iterrows():
        pub = float(row["published_gpu_hours"])
        rec = dict(id=row["id"], published_gpu_hours=pub, gpu_hours=np.nan, error=np.nan,
                   floor_gpu_hours=np.nan, floor_error=np.nan, params=np.nan, moe=False,
                   napkin_gpu_hours=np.nan, napkin_error=np.nan, layout="", mfu=np.nan,
                   band_low=np.nan, band_high=np.nan,
                   goodput=np.nan, fits=None, days=np.nan, gpus=whole_run_gpus(row),
                   global_batch_tokens=np.nan,
                   in_statistics=whole_run_counted(row),
                   gpus_published=not pd.isna(row["gpus"]), status="ok",
                   query=whole_run_query(row))
        try:
            s, _ = Scenario.from_query(rec["query"], strict=True)
            r = review(s).to_json()
        except InputError as e:
            rec["status"] = f"review refused: {e}"
        else:
            lay = r.get("layout") or {}
            rec.update(gpu_hours=r["gpu_hours"], error=r["gpu_hours"] / pub - 1,
                       floor_gpu_hours=r["gpu_hours_floor"],
                       floor_error=r["gpu_hours_floor"] / pub - 1, params=r["params"],
                       moe=r["active_params"] < r["params"],
                       napkin_gpu_hours=r["napkin_gpu_hours"],
                       napkin_error=r["napkin_gpu_hours"] / pub - 1,
                       layout=lay.get("description", ""), mfu=r["mfu"], goodput=r["goodput"],
                       fits=r["fits"], days=r["days"],
                       global_batch_tokens=r["global_batch_tokens"],
                       band_low=r["gpu_hours_band"][0], band_high=r["gpu_hours_band"][1])
        rec["layout_error"], rec["layout_fits"], rec["given_layout"] = np.nan, None, None
        given = published_layout(row)
        if given and rec["status"] == "ok":
            # the run's own layout as published (data/whole_runs.csv published_layout): what
            # the review's choice of layout accounts for, beside the step model's physics
            try:
                s, _ = Scenario.from_query(f"{rec['query']}&{given}", strict=True)
                g = review(s).to_json()
            except InputError as e:
                rec["layout_fits"] = f"refused: {e}"
            else:
                rec["layout_error"] = g["gpu_hours"] / pub - 1
                rec["layout_fits"] = g["fits"]
                rec["given_layout"] = g["layout"]
        rec["auto_error"] = np.nan
        try:
            # as a reviewer who does not know the run's fabric would link it
            s, _ = Scenario.from_query(whole_run_query(row, with_fabric=False), strict=True)
            rec["auto_error"] = review(s).to_json()["gpu_hours"] / pub - 1
        except InputError:
            pass
        res.append(rec)
    res = pd.DataFrame(res)
    print("\nWhole published pre-training runs: GPU-hours, review and napkin (6 x active params x "
          "tokens / (0.4 x dense BF16 peak)) against the published figure (data/whole_runs.csv; "
          "nothing fitted to it)", file=out)
    print(format_whole_runs(res), file=out)
    print(whole_runs_summary(res), file=out)
    return res


def _hours(x) -> str:
    return "" if pd.isna(x) else f"{x / 1e6:.3f}M"


def format_whole_runs(res: pd.DataFrame) -> str:
    lines = [f"{'run':21s} {'published':>10s} {'review':>10s} {'error':>8s} {'napkin':>10s} "
             f"{'error':>8s} {'own lay.':>8s} {'GPUs':>6s} {'MFU':>6s} {'goodput':>7s} "
             f"{'fits':>5s}  layout"]
    for _, r in res.iterrows():
        mark = "" if r["in_statistics"] else " *"
        mfu = "" if pd.isna(r["mfu"]) else f"{100 * r['mfu']:.1f}%"
        gp = "" if pd.isna(r["goodput"]) else f"{r['goodput']:.3f}"
        tail = r["layout"] if r["status"] == "ok" else r["status"]
        lines.append(f"{r['id'] + mark:21s} {_hours(r['published_gpu_hours']):>10s} "
                     f"{_hours(r['gpu_hours']):>10s} {_pct(r['error']):>8s} "
                     f"{_hours(r['napkin_gpu_hours']):>10s} {_pct(r['napkin_error']):>8s} "
                     f"{_pct(r.get('layout_error', np.nan)):>8s} "
                     f"{r['gpus']:>6d} {mfu:>6s} {gp:>7s} {str(r['fits']):>5s}  {tail}")
    return ("\n".join(lines) + "\n'own lay.': the review's error given the run's published layout "
            "(data/whole_runs.csv published_layout: the keys the source states; the planner "
            "chooses the rest)")


def whole_runs_summary(res: pd.DataFrame) -> str:
    """Mean and max |error| of the review and of the napkin over the counted rows."""
    use = res[res["in_statistics"] & res["error"].notna()]
    left = len(res) - len(res[res["in_statistics"]])
    if use.empty:
        return "no counted run was answered"
    e, n = use["error"].abs(), use["napkin_error"].abs()
    closer = int((e < n).sum())
    line = (f"{len(use)} runs counted (* = approximate hours or not one pre-training run, listed "
            f"only: {left}): review mean "
            f"|error| {100 * e.mean():.1f}%, max {100 * e.max():.1f}%; napkin mean |error| "
            f"{100 * n.mean():.1f}%, max {100 * n.max():.1f}%; the review is closer on {closer} "
            f"of {len(use)}")
    if "auto_error" in use and use["auto_error"].notna().all():
        a = use["auto_error"].abs()
        line += (f"\nthe same runs without their fabric (the GPU's usual one): review mean "
                 f"|error| {100 * a.mean():.1f}%, max {100 * a.max():.1f}%")
    if "layout_error" in use and use["layout_error"].notna().any():
        lay = use[use["layout_error"].notna()]
        line += (f"\n{len(lay)} of them with a published layout: review mean |error| "
                 f"{100 * lay['error'].abs().mean():.1f}% with its own layout, "
                 f"{100 * lay['layout_error'].abs().mean():.1f}% given the run's")
    if "gpus_published" in use and 0 < use["gpus_published"].sum() < len(use):
        # a run whose GPU count is assumed is reviewed at a size it may not have run at
        pub = use[use["gpus_published"]]
        ep, np_ = pub["error"].abs(), pub["napkin_error"].abs()
        line += (f"\n{len(pub)} of them with the GPU count the run published: review mean "
                 f"|error| {100 * ep.mean():.1f}%, max {100 * ep.max():.1f}%; napkin mean |error| "
                 f"{100 * np_.mean():.1f}%, max {100 * np_.max():.1f}%")
    return line


def forecast_report(res, write=False, out=None):
    """The forecast leave one run out (benchmarks/forecast_check.py); ``write``: rewrite
    data/realized_runs.csv from these floors first."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import forecast_check as fcheck
    rows = load_whole_runs()
    if write:
        t = fcheck.write_realized_table(res, rows)
        print(f"\nwrote {fcheck.REALIZED_RUNS.relative_to(ROOT)} ({len(t)} rows)", file=out)
    else:
        t = pd.read_csv(fcheck.REALIZED_RUNS)
    return fcheck.report(res, t, out=out)


# ------------------------------------------------------------------ before / after

#: Each row's error as the step model last stood (``make validate SNAPSHOT=1`` rewrites it):
#: the calibration rows and the whole runs, so a change to the model prints what it moved.
SNAPSHOT = ROOT / "benchmarks" / "step_model_snapshot.csv"
#: what a change may cost a step-time table's mean |error| and one row's |error| [-]
TABLE_RISE_LIMIT = 0.01
ROW_RISE_LIMIT = 0.05


def snapshot_frame(res: pd.DataFrame, whole: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per calibration row (its summary table) and per whole run: the error now."""
    cal = pd.DataFrame({"section": "calibration", "id": res["id"],
                        "table": res["source_table"] + " / " + res["generation"] + " / "
                        + res["kind"], "error": res["error"]})
    if whole is None:
        return cal
    # the floor's error: the physics a change to the step model moves (the forecast's also
    # moves with the realized ratios)
    runs = pd.DataFrame({"section": "whole run", "id": whole["id"], "table": "whole runs",
                         "error": whole["floor_error"]})
    return pd.concat([cal, runs], ignore_index=True)


def write_snapshot(res, whole=None, path=SNAPSHOT):
    snapshot_frame(res, whole).to_csv(path, index=False, float_format="%.6f")


def _print_table_moves(m, cal, path, top, out):
    print(f"\nBefore ({Path(path).relative_to(ROOT)}) and now: mean |error| per step-time "
          f"table (flagged '!' if it rose by more than {100 * TABLE_RISE_LIMIT:.0f} point)",
          file=out)
    print(f"  {'table':56s} {'rows':>4s} {'before':>8s} {'now':>8s} {'change':>8s}", file=out)
    for t, g in cal.groupby("table", sort=False):
        g = g.dropna(subset=["before", "after"])
        if g.empty:
            continue
        b, a = g["before"].abs().mean(), g["after"].abs().mean()
        flag = " !" if a - b > TABLE_RISE_LIMIT else ""
        print(f"  {t:56s} {len(g):4d} {100 * b:7.1f}% {100 * a:7.1f}% {100 * (a - b):+7.1f}"
              f"{flag}", file=out)
    moved = cal.dropna(subset=["before", "after"])
    moved = moved.reindex(moved["rise"].abs().sort_values(ascending=False).index).head(top)
    print(f"  largest row moves (|error| before -> now; '!' if it rose by more than "
          f"{100 * ROW_RISE_LIMIT:.0f} points):", file=out)
    for _, r in moved.iterrows():
        flag = " !" if r["rise"] > ROW_RISE_LIMIT else ""
        print(f"    {r['id']:52s} {_pct(r['before']):>9s} -> {_pct(r['after']):>9s}{flag}",
              file=out)
    gone = m[(m["section"] == "calibration") & m["after"].isna() & m["before"].notna()]
    new_rows = m[(m["section"] == "calibration") & m["before"].isna() & m["after"].notna()]
    if len(gone) or len(new_rows):
        print(f"  rows no longer predicted: {len(gone)}; rows newly predicted: {len(new_rows)}",
              file=out)


def compare_snapshot(res, whole=None, path=SNAPSHOT, out=None, top=12) -> pd.DataFrame:
    """Print each step-time table's mean |error| before (the stored snapshot) and now, the
    rows that moved most, and each whole run's error before and now; flag a table whose mean
    |error| rose by more than TABLE_RISE_LIMIT or a row by more than ROW_RISE_LIMIT.

    Returns the per-row frame (section, id, table, before, after, rise = |after| - |before|).
    """
    out = out or sys.stdout
    if not Path(path).exists():
        print(f"\nno snapshot at {Path(path).relative_to(ROOT)}: `make validate SNAPSHOT=1` "
              "writes one", file=out)
        return pd.DataFrame()
    old = pd.read_csv(path)
    new = snapshot_frame(res, whole)
    m = old.merge(new, on=["section", "id"], how="outer", suffixes=("_before", "_after"))
    m["table"] = m["table_after"].fillna(m["table_before"])
    m = m.rename(columns={"error_before": "before", "error_after": "after"})
    m["rise"] = m["after"].abs() - m["before"].abs()
    cal = m[(m["section"] == "calibration") & m["after"].notna()]
    if len(cal):
        _print_table_moves(m, cal, path, top, out)
    runs = m[(m["section"] == "whole run") & m["after"].notna()]
    if len(runs):
        print(f"\nWhole runs (nothing fitted to them), the floor's GPU-hours error before "
              f"({Path(path).relative_to(ROOT)}) and now:", file=out)
        for _, r in runs.iterrows():
            print(f"    {r['id']:22s} {_pct(r['before']):>9s} -> {_pct(r['after']):>9s}", file=out)
        both = runs.dropna(subset=["before"])
        print(f"  mean |error| over the {len(both)} runs: {100 * both['before'].abs().mean():.1f}% "
              f"-> {100 * both['after'].abs().mean():.1f}%", file=out)
    return m


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--readme" in argv:
        print(readme_table(evaluate(load_rows())))
        return
    if "--whole-runs" in argv:
        whole = whole_runs()
        compare_snapshot(pd.DataFrame(columns=["id", "source_table", "generation", "kind",
                                               "error"]), whole)
        forecast_report(whole, write="--write-ratios" in argv)
        return
    res, _ = validate()
    whole = whole_runs()
    if "--write-snapshot" in argv:
        write_snapshot(res, whole)
        print(f"\nwrote {SNAPSHOT.relative_to(ROOT)}")
    else:
        compare_snapshot(res, whole)
    forecast_report(whole, write="--write-errors" in argv)
    if "--fit" in argv:
        fit_attention_tile()
        _, moe_held = fit_moe()
        fit_mxfp8()
        results = fit()
        fit_fsdp()
        fit_paired()
        if "--write-errors" in argv:
            import datetime
            import subprocess
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip()
            table = error_table(results, f" at commit {commit}" if commit else "",
                                datetime.date.today().isoformat(), moe_held)
            table.to_csv(ERRORS, index=False)
            print(f"\nwrote {ERRORS.relative_to(ROOT)} ({len(table)} rows)")


if __name__ == "__main__":
    main()
