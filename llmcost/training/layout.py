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


#: bounds of an integer field other than [1, 2**53]
_INT_BOUNDS = {"zero_stage": (0, 3)}
#: fields predict_step takes through its memory_kwargs, not as arguments of its own
_MEMORY_OPTIONS = ("optimizer_moments",)
#: fields that record the stage split the planner or predict_step chose (not inputs)
_CHOSEN = ("middle_stage_layers",)


@dataclass(frozen=True)
class Layout:
    """A parallel layout on ``gpus`` GPUs (all sizes [-], batches [sequences]).

    The one declaration of a layout's fields: their order is the order of the layout's
    columns in the planner's frame, ``plan`` and ``size`` (:func:`layout_columns`)."""

    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    #: interleaved (virtual) pipeline chunks per stage, v
    interleave: int = 1
    zero_stage: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False
    flash_attention: bool = True
    tp_comm_overlap: bool = False
    precision: str = "bf16"
    #: modules recomputed by name (Megatron-Core's --recompute-modules), beside ``recompute``
    recompute_modules: tuple = ()
    #: AdamW moments' precision: "fp32", or "bf16" (DeepSeek-V3, Megatron's
    #: --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
    optimizer_moments: str = "fp32"
    #: layers on the first and last pipeline stages; None: even, or balanced automatically
    first_stage_layers: int | None = None
    #: layers on each middle stage, as the planner or ``predict`` split them (for the text)
    middle_stage_layers: int | None = None
    last_stage_layers: int | None = None
    ep: int = 1
    etp: int = 1

    def __post_init__(self):
        # each field coerced by its declared type (annotations are strings here)
        for f in fields(self):
            x = getattr(self, f.name)
            if f.type == "int" or (f.type == "int | None" and x is not None):
                x = int(v.integer(f.name, x, *_INT_BOUNDS.get(f.name, (1,))))
            elif f.type == "bool":
                x = bool(x)
            elif f.name == "recompute_modules":
                if isinstance(x, str):
                    x = tuple(m.strip() for m in x.split(",") if m.strip())
                x = tuple(x)
            object.__setattr__(self, f.name, x)
        v.choice("optimizer_moments", self.optimizer_moments, OPTIMIZER_MOMENTS)

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

    def row(self) -> dict:
        """The layout as a row of the planner's frame: every field (the modules recomputed
        by name joined by commas) with dp and the micro-batches per pipeline."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row.update(recompute_modules=",".join(self.recompute_modules), dp=self.dp,
                   num_microbatches=self.num_microbatches)
        return row

    @property
    def description(self) -> str:
        row = self.row()
        ends = ("first_stage_layers", "middle_stage_layers", "last_stage_layers")
        if any(row[k] is None for k in ends):
            for k in ends:
                del row[k]
        return describe_layout(row)

    def step_kwargs(self) -> dict:
        """Keyword arguments of :func:`llmcost.training.step.predict_step` for this layout."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in _MEMORY_OPTIONS + _CHOSEN}

    def memory_options(self) -> dict:
        """The memory model's options this layout fixes (``predict_step``'s ``memory_kwargs``)."""
        return {k: getattr(self, k) for k in _MEMORY_OPTIONS}

    def memory_kwargs(self) -> dict:
        """Keyword arguments of :func:`llmcost.training.memory.memory_per_gpu`."""
        kw = self.step_kwargs()
        del kw["tp_comm_overlap"]
        return {**kw, **self.memory_options()}

    def to_dict(self) -> dict:
        """The layout as JSON: every field, with dp, vp, micro-batches and the description."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _CHOSEN}
        d["recompute_modules"] = list(self.recompute_modules)
        d.update(dp=self.dp, vp=self.vp, num_microbatches=self.num_microbatches,
                 description=self.description)
        return d

    @classmethod
    def from_row(cls, row, global_batch: int | None = None, precision: str | None = None
                 ) -> "Layout":
        """The layout of one row of a planner frame (:func:`llmcost.training.planner.plan`);
        a field the row lacks takes its default, the middle stages the first's layers."""
        kw = {f.name: (str(row[f.name]) if f.type == "str" else row[f.name])
              for f in fields(cls) if f.name in row}
        kw["recompute_modules"] = str(kw.get("recompute_modules", "") or "")
        kw.setdefault("middle_stage_layers", kw.get("first_stage_layers"))
        kw["global_batch"] = (global_batch if global_batch is not None else
                              kw.get("global_batch",
                                     row["dp"] * row["micro_batch"] * row["num_microbatches"]))
        if precision is not None:
            kw["precision"] = precision
        return cls(**kw)


def layout_columns(derived: dict | None = None, drop=()) -> tuple:
    """A table's layout columns: :class:`Layout`'s fields in their declared order, less
    ``drop``, each derived column of ``derived`` (field -> a :class:`Layout` property such
    as ``dp``) right after its field. A field added to :class:`Layout` joins every table
    built from this, in its place."""
    names = [f.name for f in fields(Layout)]
    unknown = [k for k in (*(derived or {}), *drop) if k not in names]
    unknown += [x for x in (derived or {}).values() if not isinstance(getattr(Layout, x, None),
                                                                     property)]
    if unknown:
        raise ValueError(f"not Layout fields or properties: {unknown}")
    cols = []
    for k in names:
        if k not in drop:
            cols.append(k)
        if k in (derived or {}):
            cols.append(derived[k])
    return tuple(cols)


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
