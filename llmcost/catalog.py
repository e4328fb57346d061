"""Catalogs of GPUs, models, fabrics, prices and published runs (``data/*.csv``).

Every shipped row carries ``source`` and ``as_of``. Tables load as pandas DataFrames; single
entries are looked up by id or alias, with a "did you mean" error for a typo. A user's own
rows (a GPU not yet listed, a negotiated price) are added with :meth:`Catalog.with_rows`,
which returns a new catalog and leaves the shipped one untouched.

Data location: an installed wheel carries the CSVs as ``llmcost/data``; a source checkout
reads the repository's top-level ``data/``.
"""

from __future__ import annotations

import difflib
import functools
import os
from datetime import date
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from . import _validate as v
from .training.arch import ModelSpec
from .training.hardware import FabricSpec, GPUSpec
from .economics import reliability
from .economics.reliability import FailureRate

TABLES = ("gpus", "models", "fabrics", "prices", "published_runs", "failure_rates",
          "step_model_errors")

#: columns a row must have (besides id, source, as_of), and which of them must be > 0.
REQUIRED = {
    "gpus": (("name", "bf16_dense_tflops", "memory_gib", "hbm_bandwidth_tbps", "scale_up",
              "scale_up_bandwidth_gbps", "gpus_per_node", "tdp_w", "generation"),
             ("bf16_dense_tflops", "memory_gib", "hbm_bandwidth_tbps",
              "scale_up_bandwidth_gbps", "gpus_per_node", "tdp_w")),
    "models": (("layers", "hidden", "heads", "vocab", "seq_len"),
               ("layers", "hidden", "heads", "vocab", "seq_len")),
    "fabrics": (("kind", "bandwidth_gbps_per_gpu", "latency_us"),
                ("bandwidth_gbps_per_gpu", "latency_us")),
    "prices": (("provider", "gpu", "gpus", "on_demand_usd_per_hour"),
               ("gpus", "on_demand_usd_per_hour")),
    "published_runs": (("model",), ()),
    "failure_rates": (("failures_per_1000_gpu_days", "counts"), ("failures_per_1000_gpu_days",)),
    "step_model_errors": (("generation", "precision", "rows", "max_abs_error", "method"), ()),
}


def data_dir() -> Path:
    """Folder holding the catalog CSVs (``LLMCOST_DATA`` overrides, for tests and forks)."""
    env = os.environ.get("LLMCOST_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    packaged = here / "data"
    if (packaged / "gpus.csv").exists():
        return packaged
    return here.parent / "data"


@functools.lru_cache(maxsize=None)
def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"id": str, "aliases": str}, keep_default_na=True)


class Catalog:
    """Immutable set of tables; ``with_rows`` returns an extended copy."""

    def __init__(self, tables: Mapping[str, pd.DataFrame]):
        self._tables = dict(tables)

    @classmethod
    def default(cls) -> "Catalog":
        return _default()

    @classmethod
    def from_dir(cls, folder) -> "Catalog":
        folder = Path(folder)
        tables = {}
        for name in TABLES:
            df = _read(str(folder / f"{name}.csv")).copy()
            _check_table(name, df, origin=str(folder / f"{name}.csv"))
            tables[name] = df
        return cls(tables)

    def table(self, name: str) -> pd.DataFrame:
        """A copy of one table."""
        v.choice("table", name, TABLES)
        return self._tables[name].copy()

    def gpus(self) -> pd.DataFrame:
        return self.table("gpus")

    def models(self) -> pd.DataFrame:
        return self.table("models")

    def fabrics(self) -> pd.DataFrame:
        return self.table("fabrics")

    def prices(self) -> pd.DataFrame:
        return self.table("prices")

    def published_runs(self) -> pd.DataFrame:
        return self.table("published_runs")

    def failure_rates(self) -> pd.DataFrame:
        return self.table("failure_rates")

    def step_model_errors(self) -> pd.DataFrame:
        return self.table("step_model_errors")

    def price_offer(self, gpu_id: str, offer: str | None = None) -> pd.Series | None:
        """The prices.csv row priced for ``gpu_id``: ``offer`` (an id) if given, else the
        catalog's first offer for the GPU; None when the GPU has no offer."""
        if offer:
            return self.lookup("prices", offer)
        rows = self.prices()
        mine = rows[rows["gpu"] == gpu_id]
        return None if mine.empty else mine.iloc[0]


    def failure_rate(self, key: str) -> FailureRate:
        """A failure-rate preset by id (``data/failure_rates.csv`` or a user's row)."""
        return reliability.failure_rate(key, self._tables["failure_rates"])

    def default_failure_rate(self, generation: str) -> FailureRate:
        """The job-level failure rate for a GPU generation (hopper's, with a note, if none)."""
        return reliability.default_failure_rate(generation, self._tables["failure_rates"])

    def ids(self, name: str) -> list[str]:
        return list(self._tables[name]["id"])

    def lookup(self, name: str, key: str) -> pd.Series:
        """The row whose id or alias is ``key`` (case-insensitive)."""
        v.choice("table", name, TABLES)
        df = self._tables[name]
        k = str(key).strip().lower()
        names = {i.lower(): n for n, i in enumerate(df["id"])}
        if "aliases" in df:
            for n, al in enumerate(df["aliases"]):
                if isinstance(al, str):
                    for a in al.split(";"):
                        names.setdefault(a.strip().lower(), n)
        if k in names:
            return df.iloc[names[k]]
        param = {"gpus": "gpu", "models": "model", "fabrics": "fabric", "prices": "price"}.get(
            name, name)
        close = difflib.get_close_matches(k, list(names), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise v.InputError(param, f"{param} {key!r} is not in the catalog{hint} "
                                  f"(known: {', '.join(df['id'])})")

    def gpu(self, key: str) -> GPUSpec:
        r = self.lookup("gpus", key)
        fp8 = r.get("fp8_dense_tflops")

        def opt(col, cast):
            x = r.get(col)
            return None if x is None or (not isinstance(x, str) and pd.isna(x)) else cast(x)

        return GPUSpec(id=r["id"], name=r["name"], generation=r["generation"],
                       system_power_kw=opt("system_power_kw", float),
                       system_gpus=opt("system_gpus", int),
                       system_power_note=opt("system_power_note", str),
                       capex_usd_per_system=opt("capex_usd_per_system", float),
                       scale_up_domain_gpus=opt("scale_up_domain_gpus", int),
                       bf16_dense_tflops=float(r["bf16_dense_tflops"]),
                       fp8_dense_tflops=None if pd.isna(fp8) else float(fp8),
                       memory_gib=float(r["memory_gib"]),
                       hbm_bandwidth_tbps=float(r["hbm_bandwidth_tbps"]),
                       scale_up=r["scale_up"],
                       scale_up_bandwidth_gbps=float(r["scale_up_bandwidth_gbps"]),
                       gpus_per_node=int(r["gpus_per_node"]), tdp_w=float(r["tdp_w"]))

    def model(self, key: str) -> ModelSpec:
        r = self.lookup("models", key)

        def opt(col, default=None):
            x = r.get(col, default)
            return default if x is None or (isinstance(x, float) and np.isnan(x)) else x

        def flag(col, default):
            x = opt(col)
            return default if x is None else str(x).strip().lower() in ("true", "1", "yes")

        def integer(col, default=None):
            x = opt(col)
            return default if x is None or str(x).strip() == "" else int(float(x))

        pub = opt("published_params_b")
        return ModelSpec(
            layers=int(r["layers"]), hidden=int(r["hidden"]), heads=int(r["heads"]),
            vocab=int(r["vocab"]), seq_len=int(r["seq_len"]),
            kv_heads=integer("kv_heads"), ffn_hidden=integer("ffn_hidden"),
            gated_ffn=flag("gated_ffn", False), tied_embeddings=flag("tied_embeddings", True),
            position_embedding=opt("position_embedding", "learned"),
            norm=opt("norm", "layernorm"), biases=opt("biases", "all"),
            dropout=flag("dropout", True), id=r["id"], name=opt("name", r["id"]),
            published_params=None if pub is None else float(pub) * 1e9,
            head_dim=integer("head_dim"),
            moe_experts=integer("moe_experts", 0), moe_top_k=integer("moe_top_k", 0),
            moe_ffn_hidden=integer("moe_ffn_hidden"),
            moe_shared_ffn_hidden=integer("moe_shared_ffn_hidden", 0),
            moe_dense_layers=integer("moe_dense_layers", 0),
            moe_layer_step=integer("moe_layer_step", 1),
            moe_expert_biases=flag("moe_expert_biases", False),
            moe_router_bias=flag("moe_router_bias", False),
            attention=opt("attention", "gqa") or "gqa",
            q_lora_rank=integer("q_lora_rank", 0), kv_lora_rank=integer("kv_lora_rank", 0),
            qk_rope_head_dim=integer("qk_rope_head_dim", 0), v_head_dim=integer("v_head_dim"),
            qk_norm=flag("qk_norm", False), attention_sinks=flag("attention_sinks", False),
            attention_window=integer("attention_window", 0),
            window_layers=integer("window_layers", 0), mtp_layers=integer("mtp_layers", 0),
            active_params_counts=opt("active_params_counts", "embedding+head")
            or "embedding+head",
            published_active_params=None if opt("published_active_params_b") is None
            else float(opt("published_active_params_b")) * 1e9)

    def fabric(self, key: str) -> FabricSpec:
        r = self.lookup("fabrics", key)

        def num(col, default):
            x = r.get(col, default)
            return default if x is None or pd.isna(x) else float(x)

        return FabricSpec(id=r["id"], name=r.get("name", r["id"]), kind=r["kind"],
                          bandwidth_gbps_per_gpu=float(r["bandwidth_gbps_per_gpu"]),
                          latency_us=float(r["latency_us"]),
                          oversubscription=num("oversubscription", 1.0),
                          efficiency=num("efficiency", 1.0),
                          congestion_per_doubling=num("congestion_per_doubling", 0.0))

    def with_rows(self, name: str, rows, replace: bool = False) -> "Catalog":
        """A new catalog with ``rows`` added to table ``name``.

        ``rows``: a DataFrame, a list of dicts, or a CSV path. Rows without ``source`` or
        ``as_of`` get "user-supplied" and today's date. An id that exists already is an
        error unless ``replace=True``.
        """
        v.choice("table", name, TABLES)
        if isinstance(rows, (str, Path)):
            new = pd.read_csv(rows)
        elif isinstance(rows, pd.DataFrame):
            new = rows.copy()
        else:
            new = pd.DataFrame(list(rows))
        if "id" not in new:
            raise v.InputError("id", f"rows for {name} need an 'id' column")
        new["id"] = new["id"].astype(str)
        if "source" not in new:
            new["source"] = "user-supplied"
        if "as_of" not in new:
            new["as_of"] = date.today().isoformat()
        new["source"] = new["source"].fillna("user-supplied")
        new["as_of"] = new["as_of"].fillna(date.today().isoformat())
        _check_table(name, new, origin="user rows")
        old = self._tables[name]
        clash = set(new["id"].str.lower()) & set(old["id"].str.lower())
        if clash and not replace:
            raise v.InputError("id", f"id {sorted(clash)[0]!r} already exists in {name}; "
                                     "pass replace=True to override it")
        old = old[~old["id"].str.lower().isin(clash)]
        tables = dict(self._tables)
        tables[name] = pd.concat([old, new], ignore_index=True)
        return Catalog(tables)


def _check_table(name: str, df: pd.DataFrame, origin: str) -> None:
    cols, positive = REQUIRED[name]
    missing = [c for c in ("id", "source", "as_of", *cols) if c not in df.columns]
    if missing:
        raise v.InputError(missing[0], f"{origin}: table {name} lacks column(s) {', '.join(missing)}")
    for c in ("id", "source", "as_of", *cols):
        if df[c].isna().any():
            row = df.index[df[c].isna()][0]
            raise v.InputError(c, f"{origin}: {name} row {row} has no {c}")
    dup = df["id"].str.lower().duplicated()
    if dup.any():
        raise v.InputError("id", f"{origin}: duplicate id {df['id'][dup].iloc[0]!r} in {name}")
    for c in positive:
        vals = pd.to_numeric(df[c], errors="coerce")
        bad = ~(vals > 0) | ~np.isfinite(vals)
        if bad.any():
            i = bad.to_numpy().nonzero()[0][0]
            raise v.InputError(c, f"{origin}: {name} {df['id'].iloc[i]!r} has {c}="
                                  f"{df[c].iloc[i]!r}; it must be a number > 0")


@functools.lru_cache(maxsize=1)
def _default() -> Catalog:
    return Catalog.from_dir(data_dir())


def default() -> Catalog:
    """The shipped catalog."""
    return _default()


def gpus() -> pd.DataFrame:
    return default().gpus()


def models() -> pd.DataFrame:
    return default().models()


def fabrics() -> pd.DataFrame:
    return default().fabrics()


def prices() -> pd.DataFrame:
    return default().prices()


def published_runs() -> pd.DataFrame:
    return default().published_runs()


def failure_rates() -> pd.DataFrame:
    return default().failure_rates()


def failure_rate(key: str) -> FailureRate:
    return default().failure_rate(key)


def default_failure_rate(generation: str) -> FailureRate:
    return default().default_failure_rate(generation)


def gpu(key: str) -> GPUSpec:
    return default().gpu(key)


def model(key: str) -> ModelSpec:
    return default().model(key)


def fabric(key: str) -> FabricSpec:
    return default().fabric(key)


def ids(name: str) -> list[str]:
    return default().ids(name)


#: prices.csv columns [USD per instance-hour] -> option name
PRICE_COLUMNS = {"on_demand": "on_demand_usd_per_hour", "reserved_1y": "reserved_1y_usd_per_hour",
                 "reserved_3y": "reserved_3y_usd_per_hour", "spot": "spot_usd_per_hour"}


def usd_per_gpu_hour(row: pd.Series) -> dict:
    """Option -> price per GPU-hour of a prices.csv row (instance price / its ``gpus``, the
    billing unit); options the row does not list are absent."""
    n = float(row["gpus"])
    out = {}
    for name, col in PRICE_COLUMNS.items():
        x = row.get(col)
        if x is not None and not pd.isna(x) and float(x) > 0:
            out[name] = float(x) / n
    return out
