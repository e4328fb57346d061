"""One parallel layout of a training run: the value the planner chooses, ``predict`` and
``memory`` evaluate, the review shows, a link carries and the CLI reads.

A layout is what Megatron-Core's launch flags say: ``--tensor-model-parallel-size`` (tp),
``--pipeline-model-parallel-size`` (pp), ``--num-layers-per-virtual-pipeline-stage`` as
interleaved chunks per stage (vp), ``--num-layers-in-first/last-pipeline-stage``,
``--context-parallel-size`` (cp), ``--expert-model-parallel-size`` (ep),
``--expert-tensor-parallel-size`` (etp), ``--micro-batch-size``, ``--global-batch-size``,
the distributed optimizer's sharding (ZeRO stage), recomputation and the GEMM precision.
Data parallelism follows: dp = gpus / (tp pp cp).

References
----------
1. Megatron-LM, ``megatron/training/arguments.py`` (the flags above); Narayanan et al.
   2021, arXiv:2104.04473, §2-3.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .. import _validate as v
from .memory import OPTIMIZER_MOMENTS

#: link / CLI key -> Layout field. One declaration: the Scenario's layout keys, the review's
#: restriction of the planner's space and the CLI's flags read it.
LINK_KEYS = {"tp": "tp", "pp": "pp", "vp": "interleave", "cp": "cp", "ep": "ep", "etp": "etp",
             "micro_batch": "micro_batch", "zero": "zero_stage", "recompute": "recompute",
             "first_stage_layers": "first_stage_layers",
             "last_stage_layers": "last_stage_layers"}


@dataclass(frozen=True)
class Layout:
    """A parallel layout on ``gpus`` GPUs (all sizes [-], batches [sequences])."""

    gpus: int
    tp: int = 1
    pp: int = 1
    #: interleaved (virtual) pipeline chunks per stage, v
    interleave: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    zero_stage: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False
    flash_attention: bool = True
    tp_comm_overlap: bool = False
    #: layers on the first and last pipeline stages; None: even, or balanced automatically
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    precision: str = "bf16"
    #: modules recomputed by name (Megatron-Core's --recompute-modules), beside ``recompute``
    recompute_modules: tuple = ()
    #: AdamW moments' precision: "fp32", or "bf16" (DeepSeek-V3, Megatron's
    #: --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
    optimizer_moments: str = "fp32"
    #: layers on each middle stage, as the planner or ``predict`` split them (for the text)
    middle_stage_layers: int | None = None

    def __post_init__(self):
        for name in ("gpus", "tp", "pp", "interleave", "cp", "ep", "etp", "micro_batch",
                     "global_batch"):
            object.__setattr__(self, name, int(v.integer(name, getattr(self, name))))
        object.__setattr__(self, "zero_stage", int(v.integer("zero_stage", self.zero_stage, 0, 3)))
        for name in ("first_stage_layers", "last_stage_layers", "middle_stage_layers"):
            x = getattr(self, name)
            if x is not None:
                object.__setattr__(self, name, int(v.integer(name, x)))
        mods = self.recompute_modules
        if isinstance(mods, str):
            mods = tuple(x.strip() for x in mods.split(",") if x.strip())
        object.__setattr__(self, "recompute_modules", tuple(mods))
        v.choice("optimizer_moments", self.optimizer_moments, OPTIMIZER_MOMENTS)
        object.__setattr__(self, "sequence_parallel", bool(self.sequence_parallel))
        object.__setattr__(self, "flash_attention", bool(self.flash_attention))
        object.__setattr__(self, "tp_comm_overlap", bool(self.tp_comm_overlap))

    @property
    def vp(self) -> int:
        return self.interleave

    @property
    def dp(self) -> int:
        """Data-parallel size gpus / (tp pp cp) [-]."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def num_microbatches(self) -> int:
        """Micro-batches per pipeline per step, B / (dp b) [-]."""
        return max(1, self.global_batch // max(1, self.dp * self.micro_batch))

    @property
    def description(self) -> str:
        row = {k: getattr(self, k) for k in ("tp", "pp", "interleave", "cp", "ep", "etp", "dp",
                                             "micro_batch", "zero_stage", "recompute",
                                             "sequence_parallel", "flash_attention",
                                             "tp_comm_overlap", "precision",
                                             "optimizer_moments")}
        row["recompute_modules"] = ",".join(self.recompute_modules)
        if None not in (self.first_stage_layers, self.middle_stage_layers, self.last_stage_layers):
            row.update(first_stage_layers=self.first_stage_layers,
                       middle_stage_layers=self.middle_stage_layers,
                       last_stage_layers=self.last_stage_layers)
        return describe_layout(row)

    def step_kwargs(self) -> dict:
        """Keyword arguments of :func:`llmcost.training.step.predict_step` for this layout."""
        return dict(gpus=self.gpus, tp=self.tp, pp=self.pp, global_batch=self.global_batch,
                    cp=self.cp, micro_batch=self.micro_batch, interleave=self.interleave,
                    recompute=self.recompute, sequence_parallel=self.sequence_parallel,
                    zero_stage=self.zero_stage, flash_attention=self.flash_attention,
                    tp_comm_overlap=self.tp_comm_overlap,
                    first_stage_layers=self.first_stage_layers,
                    last_stage_layers=self.last_stage_layers, precision=self.precision,
                    ep=self.ep, etp=self.etp, recompute_modules=self.recompute_modules)

    def memory_options(self) -> dict:
        """The memory model's options this layout fixes (``predict_step``'s ``memory_kwargs``)."""
        return {"optimizer_moments": self.optimizer_moments}

    def memory_kwargs(self) -> dict:
        """Keyword arguments of :func:`llmcost.training.memory.memory_per_gpu`."""
        kw = self.step_kwargs()
        del kw["tp_comm_overlap"]
        return {**kw, **self.memory_options()}

    def to_dict(self) -> dict:
        """The layout as JSON: every field, with dp, vp, micro-batches and the description."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "middle_stage_layers"}
        d["recompute_modules"] = list(self.recompute_modules)
        d.update(dp=self.dp, vp=self.vp, num_microbatches=self.num_microbatches,
                 description=self.description)
        return d

    @classmethod
    def from_row(cls, row, global_batch: int | None = None, precision: str | None = None
                 ) -> "Layout":
        """The layout of one row of a planner frame (:func:`llmcost.training.planner.plan`)."""
        def get(k, default=None):
            return row[k] if k in row else default

        return cls(gpus=int(row["gpus"]), tp=int(row["tp"]), pp=int(row["pp"]),
                   interleave=int(row["interleave"]), cp=int(row["cp"]),
                   ep=int(get("ep", 1)), etp=int(get("etp", 1)),
                   micro_batch=int(row["micro_batch"]),
                   global_batch=int(global_batch if global_batch is not None else
                                    row["dp"] * row["micro_batch"] * row["num_microbatches"]),
                   zero_stage=int(row["zero_stage"]), recompute=str(row["recompute"]),
                   sequence_parallel=bool(row["sequence_parallel"]),
                   flash_attention=bool(get("flash_attention", True)),
                   tp_comm_overlap=bool(get("tp_comm_overlap", False)),
                   first_stage_layers=int(row["first_stage_layers"]),
                   last_stage_layers=int(row["last_stage_layers"]),
                   middle_stage_layers=int(get("middle_stage_layers", row["first_stage_layers"])),
                   precision=str(precision if precision is not None else get("precision", "bf16")),
                   recompute_modules=str(get("recompute_modules", "") or ""),
                   optimizer_moments=str(get("optimizer_moments", "fp32")))


def stage_layers_text(pp, first, middle, last) -> str:
    """'7/8/7' for an uneven pipeline (first/each middle/last stage's layers; '63/63' style
    for two stages), '' for an even one."""
    p, f, mid, l_ = int(pp), int(first), int(middle), int(last)
    if p == 1 or (f == l_ and (p == 2 or f == mid)):
        return ""
    return f"{f}/{l_}" if p == 2 else f"{f}/{mid}/{l_}"


def describe_layout(row) -> str:
    parts = [f"TP{int(row['tp'])}", f"PP{int(row['pp'])}"]
    if int(row["interleave"]) > 1:
        parts[-1] += f"x{int(row['interleave'])}"
    if "middle_stage_layers" in row and "first_stage_layers" in row:
        split = stage_layers_text(row["pp"], row["first_stage_layers"],
                                  row["middle_stage_layers"], row["last_stage_layers"])
        if split:
            parts[-1] += f" ({split})"
    if int(row["cp"]) > 1:
        parts.append(f"CP{int(row['cp'])}")
    if "ep" in row and int(row["ep"]) > 1:
        parts.append(f"EP{int(row['ep'])}")
    if "etp" in row and int(row["etp"]) > 1:
        parts.append(f"ETP{int(row['etp'])}")
    parts.append(f"DP{int(row['dp'])}")
    parts.append(f"mb{int(row['micro_batch'])}")
    parts.append(f"ZeRO-{int(row['zero_stage'])}")
    parts.append(f"recompute={row['recompute']}")
    if "recompute_modules" in row and row["recompute_modules"]:
        parts[-1] += f"+{row['recompute_modules']}"
    if "optimizer_moments" in row and row["optimizer_moments"] not in ("fp32", None):
        parts.append(f"{str(row['optimizer_moments']).upper()}-moments")
    if bool(row["sequence_parallel"]):
        parts.append("SP")
    if "flash_attention" in row and bool(row["flash_attention"]):
        parts.append("flash")
    if "tp_comm_overlap" in row and bool(row["tp_comm_overlap"]):
        parts.append("TP-overlap")
    if "precision" in row and row["precision"] != "bf16":
        parts.append(str(row["precision"]).upper())
    return " ".join(parts)
