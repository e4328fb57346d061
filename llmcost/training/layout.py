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
from typing import Any, Collection, Mapping

import numpy as np

from .. import _validate as v
from .flops import RECOMPUTE_MODES
from .memory.options import OPTIMIZER_MOMENTS
from .precision import PRECISIONS

#: link / CLI key -> Layout field. One declaration: the Scenario's layout keys, the review's
#: restriction of the planner's space and the CLI's flags read it.
LINK_KEYS = {"tp": "tp", "pp": "pp", "vp": "interleave", "cp": "cp", "ep": "ep", "etp": "etp",
             "micro_batch": "micro_batch", "zero": "zero_stage", "recompute": "recompute",
             "first_stage_layers": "first_stage_layers",
             "last_stage_layers": "last_stage_layers"}


#: bounds of an integer field other than [1, 2**53]
_INT_BOUNDS = {"zero_stage": (0, 3)}
#: fields that record the stage split the planner or predict_step chose (not inputs)
_CHOSEN = ("middle_stage_layers",)
#: fields that may be None: the stage split (None: even, or balanced automatically), the
#: global batch (None: the memory model's many micro-batches) and the per-layout choices
#: whose None takes the step Options' value (:func:`llmcost.training.step.predict_step`)
_OPTIONAL = ("first_stage_layers", "middle_stage_layers", "last_stage_layers", "global_batch",
             "flash_attention", "tp_comm_overlap", "precision")
#: the named choices of a layout's string fields
_NAMES = {"recompute": RECOMPUTE_MODES, "precision": PRECISIONS,
          "optimizer_moments": OPTIMIZER_MOMENTS}


#: a field's value: one scalar, or a numpy array of them for many layouts (broadcasting)
IntOrArray = Any
BoolOrArray = Any
StrOrArray = Any
_KINDS = {"IntOrArray": "int", "BoolOrArray": "bool", "StrOrArray": "str", "tuple": "tuple"}


def field_kind(name: str) -> str:
    """The kind of a :class:`Layout` field's values: "int", "bool", "str" or "tuple" (the
    dtype of its column in a table)."""
    return _KINDS[str(Layout.__dataclass_fields__[name].type).split(" |")[0]]


def _checked_field(name: str, kind: str, x: Any) -> Any:
    """One field checked by its declared kind: a Python scalar for a scalar, an array for an
    array (the planner evaluates many layouts in one Layout)."""
    if x is None and name in _OPTIONAL:
        return None
    if name == "recompute_modules":
        if isinstance(x, str):
            x = tuple(m.strip() for m in x.split(",") if m.strip())
        return tuple(x)
    scalar = np.ndim(x) == 0
    if kind == "int":
        arr = v.integer(name, x, *_INT_BOUNDS.get(name, (1,)))
        return int(arr) if scalar else arr
    if kind == "bool":
        return bool(x) if scalar else v.boolean(name, x)
    if name in _NAMES:
        arr = v.choices(name, x, _NAMES[name])
        return str(arr) if scalar else arr
    return x


@dataclass(frozen=True)
class Layout:
    """A parallel layout on ``gpus`` GPUs (all sizes [-], batches [sequences]).

    The one declaration of a layout's fields: their order is the order of the layout's
    columns in the planner's frame, ``plan`` and ``size`` (:func:`layout_columns`). Each
    field is a scalar, or an array (numpy broadcasting) for many layouts at once; each is
    checked once, here."""

    gpus: IntOrArray
    tp: IntOrArray = 1
    pp: IntOrArray = 1
    cp: IntOrArray = 1
    micro_batch: IntOrArray = 1
    #: sequences per step; None: many micro-batches (the memory model's bound)
    global_batch: IntOrArray | None = 1
    #: interleaved (virtual) pipeline chunks per stage, v
    interleave: IntOrArray = 1
    zero_stage: IntOrArray = 0
    recompute: StrOrArray = "none"
    sequence_parallel: BoolOrArray = False
    #: FlashAttention, TP communication overlap and GEMM precision; None: the step
    #: Options' value (``predict_step`` only)
    flash_attention: BoolOrArray | None = True
    tp_comm_overlap: BoolOrArray | None = False
    precision: StrOrArray | None = "bf16"
    #: modules recomputed by name (Megatron-Core's --recompute-modules), beside ``recompute``
    recompute_modules: tuple = ()
    #: AdamW moments' precision: "fp32", or "bf16" (DeepSeek-V3, Megatron's
    #: --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
    optimizer_moments: StrOrArray = "fp32"
    #: layers on the first and last pipeline stages; None: even, or balanced automatically
    first_stage_layers: IntOrArray | None = None
    #: layers on each middle stage, as the planner or ``predict`` split them (for the text)
    middle_stage_layers: IntOrArray | None = None
    last_stage_layers: IntOrArray | None = None
    ep: IntOrArray = 1
    etp: IntOrArray = 1

    def __post_init__(self) -> None:
        # each field checked by its declared type (annotations are strings here)
        for f in fields(self):
            object.__setattr__(self, f.name, _checked_field(f.name, field_kind(f.name),
                                                            getattr(self, f.name)))

    @property
    def vp(self) -> int:
        return self.interleave

    @property
    def dp(self) -> Any:
        """Data-parallel size gpus / (tp pp cp) [-] (an array for an array layout)."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def num_microbatches(self) -> Any:
        """Micro-batches per pipeline per step, B / (dp b) [-]; None without a global batch."""
        if self.global_batch is None:
            return None
        m = np.maximum(1, self.global_batch // np.maximum(1, self.dp * self.micro_batch))
        return int(m) if np.ndim(m) == 0 else m

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

    def to_dict(self) -> dict:
        """The layout as JSON: every field, with dp, vp, micro-batches and the description."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _CHOSEN}
        d["recompute_modules"] = list(self.recompute_modules)
        d.update(dp=self.dp, vp=self.vp, num_microbatches=self.num_microbatches,
                 description=self.description)
        return d

    @classmethod
    def from_row(cls, row: Mapping[str, Any], global_batch: int | None = None,
                 precision: str | None = None) -> "Layout":
        """The layout of one row of a planner frame (:func:`llmcost.planning.planner.plan`);
        a field the row lacks takes its default, the middle stages the first's layers."""
        kw: dict[str, Any] = {f.name: (str(row[f.name]) if field_kind(f.name) == "str" else row[f.name])
              for f in fields(cls) if f.name in row}
        kw["recompute_modules"] = str(kw.get("recompute_modules", "") or "")
        kw.setdefault("middle_stage_layers", kw.get("first_stage_layers"))
        kw["global_batch"] = (global_batch if global_batch is not None else
                              kw.get("global_batch",
                                     row["dp"] * row["micro_batch"] * row["num_microbatches"]))
        if precision is not None:
            kw["precision"] = precision
        return cls(**kw)


def layout_columns(derived: dict | None = None, drop: Collection[str] = ()) -> tuple:
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
            assert derived is not None
            cols.append(derived[k])
    return tuple(cols)


def stage_layers_text(pp: int, first: int, middle: int, last: int) -> str:
    """'7/8/7' for an uneven pipeline (first/each middle/last stage's layers; '63/63' style
    for two stages), '' for an even one."""
    p, f, mid, l_ = int(pp), int(first), int(middle), int(last)
    if p == 1 or (f == l_ and (p == 2 or f == mid)):
        return ""
    return f"{f}/{l_}" if p == 2 else f"{f}/{mid}/{l_}"


def describe_layout(row: Mapping[str, Any]) -> str:
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


#: what each ZeRO stage shards over the data-parallel group
_ZERO_WORDS = {0: "nothing sharded", 1: "optimizer states sharded over DP",
               2: "optimizer states and gradients sharded over DP",
               3: "weights, gradients and optimizer states sharded over DP (FSDP)"}
_RECOMPUTE_WORDS = {"none": "activations kept for the backward pass",
                    "selective": "attention activations recomputed in the backward pass",
                    "full": "every layer's activations recomputed in the backward pass"}


def _gpus(n: str) -> str:
    return f"{n} GPU" + ("" if n == "1" else "s")


#: the one-line key under a layout string: (token prefix, short meaning)
LAYOUT_KEY = (("TP", "tensor parallel"), ("PP", "pipeline stages (x interleaved chunks; layers "
              "on first/middle/last stage)"), ("CP", "context parallel"),
              ("EP", "expert parallel"), ("ETP", "expert tensor parallel"),
              ("DP", "data-parallel replicas"), ("mb", "micro-batch, sequences"),
              ("ZeRO", "sharding stage"), ("recompute", "activation recomputation"),
              ("SP", "sequence parallel"), ("flash", "FlashAttention"))


def layout_key_line(description: str) -> str:
    """The one-line key to the parts a layout string shows ("TP tensor parallel · ...")."""
    toks = description.split(" ")
    parts = [f"{p} {w}" for p, w in LAYOUT_KEY
             if any(t.startswith(p) and (p != "EP" or not t.startswith("ETP")) for t in toks)]
    return " · ".join(parts)


def layout_legend(row: Mapping[str, Any]) -> list:
    """The key to :func:`describe_layout`'s string: (token, meaning) for each part it shows,
    in the same order, e.g. ("TP8", "tensor parallel over 8 GPUs")."""
    return description_legend(describe_layout(row))


def description_legend(description: str) -> list:
    """:func:`layout_legend` of a layout string as :func:`describe_layout` writes it."""
    text = description.split(" ")
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        tok = text[i]
        if tok.startswith("(") and out:          # the stage split belongs to the PP part
            last = out[-1]
            out[-1] = (f"{last[0]} {tok}", f"{last[1]}; {tok[1:-1]} layers on the first"
                       + ("/middle" if tok.count("/") == 2 else "") + "/last stage")
            i += 1
            continue
        n = tok.rstrip("+").split("=")[0]
        if tok.startswith("TP") and tok[2:].isdigit():
            out.append((tok, f"tensor parallel over {_gpus(tok[2:])}"))
        elif tok.startswith("PP"):
            p, _, v = tok[2:].partition("x")
            out.append((tok, f"pipeline of {p} stages"
                        + (f", {v} interleaved chunks per GPU" if v else "")))
        elif tok.startswith("CP"):
            out.append((tok, f"context parallel: each sequence split over {_gpus(tok[2:])}"))
        elif tok.startswith("EP"):
            out.append((tok, f"expert parallel: the experts spread over {_gpus(tok[2:])}"))
        elif tok.startswith("ETP"):
            out.append((tok, f"expert tensor parallel over {_gpus(tok[3:])}"))
        elif tok.startswith("DP"):
            out.append((tok, f"{tok[2:]} data-parallel replicas"))
        elif tok.startswith("mb"):
            out.append((tok, f"micro-batch of {tok[2:]} sequence{'s' if tok[2:] != '1' else ''}"))
        elif tok.startswith("ZeRO-"):
            out.append((tok, _ZERO_WORDS.get(int(tok[5:]), "")))
        elif n == "recompute":
            mode, _, mods = tok.split("=", 1)[1].partition("+")
            out.append((tok, _RECOMPUTE_WORDS.get(mode, mode)
                        + (f", and {mods.replace(',', ', ')} recomputed" if mods else "")))
        elif tok.endswith("-moments"):
            out.append((tok, f"Adam moments kept in {tok.split('-')[0]}"))
        elif tok == "SP":
            out.append((tok, "sequence parallel: norms and dropout split over the TP group"))
        elif tok == "flash":
            out.append((tok, "FlashAttention (attention without the score matrix in memory)"))
        elif tok == "TP-overlap":
            out.append((tok, "TP communication overlapped with the GEMMs"))
        else:
            out.append((tok, f"GEMMs in {tok}"))
        i += 1
    return out
