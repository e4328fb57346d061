"""What each catalog column may hold (:data:`COLUMNS`) and the checks a table's rows pass
before use: the first fault raises :class:`CatalogError`, one line naming the file, the row
and the column."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import _validate as v


class CatalogError(v.InputError):
    """A catalog file or user row that cannot be used: one line naming the file, the row and
    the column. ``param`` is the column (the file name for faults of a whole file);
    ``path``, ``row`` (1-based data row, None for the file or its header) and ``column``
    carry the parts for apps that lay them out."""

    def __init__(self, origin: str, problem: str, *, column: str | None = None,
                 row: int | None = None, where: str = ""):
        place = where or ("" if row is None else f"row {row}")
        parts = [p for p in (place, f"column {column}" if column else "") if p]
        text = f"catalog {origin}: " + (", ".join(parts) + ": " if parts else "") + problem
        super().__init__(column or Path(origin).name, " ".join(text.split()))
        self.path, self.row, self.column = origin, row, column


@dataclass(frozen=True)
class Col:
    """What a column may hold: ``text``, ``number`` (finite float), ``count`` (whole
    number) or ``flag`` (true/false); numbers and counts lie in [low, high] (``low``
    excluded when ``strict``)."""

    kind: str
    required: bool = False
    low: float | None = None
    strict: bool = False
    high: float | None = None
    choices: tuple = ()


def _text(required=False, choices=()):
    return Col("text", required, choices=choices)


def _pos(required=False):
    return Col("number", required, 0.0, strict=True)


def _nonneg(required=False):
    return Col("number", required, 0.0)


def _share(required=False):
    return Col("number", required, 0.0, strict=True, high=1.0)


def _count(low=1, required=False):
    return Col("count", required, low, high=v.MAX_INTEGER)


_FLAG = Col("flag")

#: every column the code reads, per table (id, source and as_of are required everywhere;
#: columns not listed, such as notes, are free text). Counts are whole numbers: 8.5 GPUs per
#: node is refused, not truncated.
COLUMNS: dict[str, dict[str, Col]] = {
    "gpus": {
        "name": _text(True), "vendor": _text(), "generation": _text(True),
        "form_factor": _text(), "bf16_dense_tflops": _pos(True), "fp8_dense_tflops": _pos(),
        "fp16_dense_tflops": _pos(), "tf32_dense_tflops": _pos(), "memory_gib": _pos(True),
        "hbm_bandwidth_tb_per_s": _pos(True), "scale_up": _text(True),
        "scale_up_bandwidth_gb_per_s": _pos(True), "gpus_per_node": _count(required=True),
        "tdp_w": _pos(True), "system_power_kw": _pos(), "system_gpus": _count(),
        "system_power_note": _text(), "capex_usd_per_system": _pos(),
        "scale_up_domain_gpus": _count(), "exp_per_s": _pos(), "scale_out": _text(),
        "scale_out_source": _text()},
    "models": {
        "name": _text(), "layers": _count(required=True), "hidden": _count(required=True),
        "heads": _count(required=True), "kv_heads": _count(), "ffn_hidden": _count(),
        "gated_ffn": _FLAG, "vocab": _count(required=True), "seq_len": _count(required=True),
        "tied_embeddings": _FLAG, "position_embedding": _text(), "norm": _text(),
        "biases": _text(), "dropout": _FLAG, "published_params_b": _pos(),
        "head_dim": _count(), "moe_experts": _count(0), "moe_top_k": _count(0),
        "moe_ffn_hidden": _count(), "moe_shared_ffn_hidden": _count(0),
        "moe_dense_layers": _count(0), "moe_layer_step": _count(),
        "moe_expert_biases": _FLAG, "moe_router_bias": _FLAG, "attention": _text(),
        "q_lora_rank": _count(0), "kv_lora_rank": _count(0), "qk_rope_head_dim": _count(0),
        "v_head_dim": _count(), "qk_norm": _FLAG, "attention_sinks": _FLAG,
        "attention_window": _count(0), "window_layers": _count(0), "mtp_layers": _count(0),
        "active_params_counts": _text(), "published_active_params_b": _pos()},
    "fabrics": {
        "name": _text(), "kind": _text(True, ("scale_up", "scale_out")), "technology": _text(),
        "link_gbit_per_s": _pos(), "bandwidth_gb_per_s_per_gpu": _pos(True),
        "latency_us": _pos(True), "oversubscription": _pos(), "efficiency": _share(),
        "congestion_per_doubling": _nonneg(),
        # which of the row's figures cite a measurement or datasheet, and which are assumptions
        # (semicolon-separated column names; FABRIC_TERMS): the review bands the assumed ones
        "measured": _text(), "assumed": _text()},
    # an optional price of 0 means "not offered" (usd_per_gpu_hour skips it)
    "prices": {
        "provider": _text(True), "instance": _text(), "gpu": _text(True),
        "gpus": _count(required=True), "region": _text(),
        "on_demand_usd_per_hour": _pos(True), "spot_usd_per_hour": _nonneg(),
        "reserved_1y_usd_per_hour": _nonneg(), "reserved_3y_usd_per_hour": _nonneg(),
        # the largest spot allocation the provider documents for the offer [GPUs]; blank: none
        # documented (spot is then costed but never named the cheapest way to pay)
        "spot_capacity_gpus": _count(),
        # the fabrics.csv id of the offer's scale-out network
        "fabric": _text(),
        # "offer": a provider sells it; a market composite or an article's figure is a
        # reference price, never priced as an offer (blank: an offer)
        "kind": _text(False, ("offer", "composite", "article")),
        # the price read from the provider's own page (true) or from a third party's table
        # (false); the rule prefers the provider's own figure at an equal price
        "first_party": _FLAG},
    "published_runs": {
        "model": _text(True), "gpu": _text(), "gpus": _count(), "tp": _count(), "pp": _count(),
        "cp": _count(), "global_batch": _count(), "seq_len": _count(),
        "achieved_tflops_per_gpu": _pos(), "pct_of_peak": _share(), "mfu": _share(),
        "hfu": _share(), "flops_counted": _text()},
    "failure_rates": {
        "generation": _text(), "failures_per_1000_gpu_days": _pos(True),
        "counts": _text(True), "default_for": _text()},
    # rows = 0: no calibration rows for the pair (uncertainty falls back to the envelope)
    "step_model_errors": {
        "generation": _text(True), "precision": _text(True), "rows": _count(0, True),
        "mean_abs_error": _nonneg(), "max_abs_error": _nonneg(True), "method": _text(True),
        "band_abs_error": _nonneg()},
    # global batch of published pre-training runs (training/batch.py); compute = 6 x active x tokens
    "published_batches": {
        "model": _text(True), "params_b": _pos(True), "active_params_b": _pos(True),
        "tokens": _pos(True), "compute_flops": _pos(True), "seq_len": _count(required=True),
        "batch_sequences": _count(), "batch_tokens": _pos(True), "batch_tokens_start": _pos()},
    # published whole runs over the review's floor (economics/realized.py); written by
    # make validate WRITE=1 from data/whole_runs.csv; fitted = false: listed, never used
    "realized_runs": {
        "stack": _text(True), "moe": Col("flag", True), "params": _pos(True),
        "gpu": _text(True), "gpus": _count(required=True), "tokens": _pos(True),
        "published_gpu_hours": _pos(True), "floor_gpu_hours": _pos(True),
        "ratio": _pos(True), "fitted": Col("flag", True), "not_fitted_because": _text()},
}
_ALWAYS = ("id", "source", "as_of")


_TRUE, _FALSE = ("true", "1", "1.0", "yes"), ("false", "0", "0.0", "no")


def _short(x, n: int = 40) -> str:
    s = repr(x.strip() if isinstance(x, str) else x)
    return s if len(s) <= n else s[:n - 3] + "..."


def _file_lines(path: str) -> list[int]:
    """The file line each data row starts on (blank lines skipped, as pandas does)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        starts, at = [], 1
        for record in reader:
            if record:      # pandas skips blank lines, not rows of empty cells
                starts.append(at)
            at = reader.line_num + 1
    return starts[1:]


class _Rows:
    """Where a table's rows came from (a file or "user rows"), to name them in messages."""

    def __init__(self, origin: str, from_file: bool):
        self.origin, self.from_file = origin, from_file
        self._lines = None

    def place(self, i: int, ident=None) -> str:
        line = None
        if self.from_file:
            try:
                if self._lines is None:
                    self._lines = _file_lines(self.origin)
                line = self._lines[i]
            except (OSError, UnicodeDecodeError, csv.Error, IndexError):
                line = None
        extra = [f"line {line}"] if line else []
        if isinstance(ident, str) and ident.strip():
            extra.append(f"id {_short(ident)}")
        return f"row {i + 1}" + (f" ({', '.join(extra)})" if extra else "")


def _cell_number(x):
    """float, None for an empty cell; ValueError for text or a boolean."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError
    if isinstance(x, str):
        x = x.strip()
        if not x:
            return None
    f = float(x)
    return None if math.isnan(f) else f


def _cell_problem(spec: Col, x):
    """(value to store, problem text or None) for one cell."""
    empty = x is None or (isinstance(x, float) and math.isnan(x)) or (
        isinstance(x, str) and not x.strip())
    if spec.kind in ("number", "count"):
        try:
            f = None if empty else _cell_number(x)
        except (TypeError, ValueError, OverflowError):
            return x, f"{_short(x)} is not a number"
        if f is None:
            return None, "empty; a value is required" if spec.required else None
        if not math.isfinite(f):
            return x, f"must be a finite number, got {_short(x)}"
        if spec.kind == "count" and f != round(f):
            return x, f"must be a whole number (a count), got {_short(x)}"
        low_ok = spec.low is None or (f > spec.low if spec.strict else f >= spec.low)
        if not low_ok or (spec.high is not None and f > spec.high):
            lo = "" if spec.low is None else (">" if spec.strict else ">=") + f" {spec.low:g}"
            hi = "" if spec.high is None else f"<= {spec.high:g}"
            span = " and ".join(p for p in (lo, hi) if p)
            return x, f"must be {span}, got {_short(x)}"
        return f, None
    if empty:
        return None, "empty; a value is required" if spec.required else None
    if spec.kind == "flag":
        s = str(x).strip().lower()
        if s not in _TRUE + _FALSE:
            return x, f"{_short(x)} is not true or false"
        return s in _TRUE, None
    if spec.choices and str(x).strip() not in spec.choices:
        return x, f"{_short(x)} is not one of {', '.join(spec.choices)}"
    return x, None


def _check_table(name: str, df: pd.DataFrame, rows: _Rows, header: list | None = None
                ) -> pd.DataFrame:
    """``df`` with its number and count columns made numeric, or CatalogError for the
    first fault: a missing or duplicated column, an empty required cell, text in a number
    column, a fractional count, a value out of range, a duplicate id."""
    specs = COLUMNS[name]
    names = [str(c) for c in (df.columns if header is None else header)]
    seen = set()
    for c in names:
        if not c.strip() or c.startswith("Unnamed: "):
            raise CatalogError(rows.origin, "a column has no name in the header",
                               where="header")
        if c in seen:
            raise CatalogError(rows.origin, "appears twice in the header", column=c,
                               where="header")
        seen.add(c)
    required = [*_ALWAYS, *(c for c, s in specs.items() if s.required)]
    for c in required:
        if c not in df.columns:
            raise CatalogError(rows.origin, "required column missing", column=c,
                               where="header")
    ids = df["id"]
    out = df.copy()
    for c in [*_ALWAYS, *specs]:
        if c not in df.columns:
            continue
        spec = specs.get(c, _text(True))
        col = df[c].tolist()
        values = []
        for i, x in enumerate(col):
            val, problem = _cell_problem(spec, x)
            if problem:
                raise CatalogError(rows.origin, problem, column=c, row=i + 1,
                                   where=rows.place(i, ids.iloc[i]))
            values.append(val)
        numeric = pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        if spec.kind in ("number", "count") and not numeric:
            # text that parsed (a user's "8" or " 8 ") becomes a number like the rest
            out[c] = pd.to_numeric(pd.Series(values, index=df.index, dtype=object))
    key = ids.astype(str).str.strip().str.lower()
    dup = key.duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        first = int((key == key.iloc[i]).to_numpy().nonzero()[0][0])
        raise CatalogError(rows.origin, f"duplicate id {_short(ids.iloc[i])} (ids ignore case): "
                                        f"{rows.place(first)} has it already", column="id",
                           row=i + 1, where=rows.place(i))
    out["id"] = ids.astype(str)
    return out
