"""Catalogs of GPUs, models, fabrics, prices and published runs (``data/*.csv``).

Every shipped row carries ``source`` and ``as_of``. Tables load as pandas DataFrames; single
entries are looked up by id or alias, with a "did you mean" error for a typo. A user's own
rows (a GPU not yet listed, a negotiated price) are added with :meth:`Catalog.with_rows`,
which returns a new catalog and leaves the shipped one untouched.

Tables load lazily, each on first use, and are checked cell by cell against
:data:`~llmcost.catalog_rows.COLUMNS` then: a corrupt file raises
:class:`~llmcost.catalog_rows.CatalogError`, one line naming the file, the row and the column,
and breaks only what needs that table (``llmcost flops`` reads models.csv alone).

Data location: an installed wheel carries the CSVs as ``llmcost/data``; a source checkout
reads the repository's top-level ``data/``.
"""

from __future__ import annotations

import csv
import difflib
import functools
import os
import re
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from . import _validate as v
from .catalog_rows import (  # noqa: F401
    _ALWAYS,
    _FALSE,
    _FLAG,
    _TRUE,
    COLUMNS,
    CatalogError,
    Col,
    _cell_number,
    _cell_problem,
    _check_table,
    _count,
    _file_lines,
    _nonneg,
    _pos,
    _Rows,
    _share,
    _short,
    _text,
)
from .economics import reliability
from .economics.offers import PRICE_COLUMNS, PRICE_RULE, choose_offers, usd_per_gpu_hour  # noqa: F401
from .economics.offers import providers as offer_providers
from .economics.reliability import FailureRate
from .training.arch import ModelSpec
from .training.hardware import FabricSpec, GPUSpec

TABLES = ("gpus", "models", "fabrics", "prices", "published_runs", "failure_rates",
          "step_model_errors", "published_batches", "realized_runs")


#: the figures of a fabrics.csv row that its ``measured`` and ``assumed`` columns classify
FABRIC_TERMS = ("link_gbit_per_s", "bandwidth_gb_per_s_per_gpu", "latency_us",
                "oversubscription", "efficiency", "congestion_per_doubling")


#: the timing terms whose assumed values the review bands (Catalog.fabric_bounds)
BANDED_TERMS = ("latency_us", "efficiency", "congestion_per_doubling")
#: technologies that move GPU memory by RDMA (the pool of measured terms for a fabric whose
#: own technology has none)
RDMA = ("infiniband", "roce", "efa")


def _terms(x) -> tuple:
    """A semicolon-separated list of fabric terms (a fabrics.csv ``assumed`` cell) as a tuple."""
    if x is None or (isinstance(x, float) and pd.isna(x)):
        return ()
    return tuple(t.strip() for t in str(x).split(";") if t.strip())




#: columns renamed to units in their names (GB/s and TB/s: bytes); a catalog written with
#: the old names is still read, under the new ones (its "gbps" meant GB/s, not gigabits)
LEGACY_COLUMNS = {"bandwidth_gbps_per_gpu": "bandwidth_gb_per_s_per_gpu",
                  "hbm_bandwidth_tbps": "hbm_bandwidth_tb_per_s",
                  "scale_up_bandwidth_gbps": "scale_up_bandwidth_gb_per_s"}


def _read_csv(path: str, name: str) -> tuple[pd.DataFrame, list]:
    """The raw table and its header as written; CatalogError for a file that is missing,
    unreadable or not CSV."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f), None)
            if header is None:
                raise CatalogError(path, "the file is empty (no header row)")
            f.seek(0)
            df = pd.read_csv(f, dtype={"id": str, "aliases": str}, keep_default_na=True)
    except FileNotFoundError:
        raise CatalogError(path, f"file not found (the {name} table; LLMCOST_DATA picks the "
                                 "catalog folder)") from None
    except (pd.errors.ParserError, csv.Error) as e:
        raise _parse_error(path, str(e)) from None
    except pd.errors.EmptyDataError:
        raise CatalogError(path, "the file is empty (no header row)") from None
    except UnicodeDecodeError as e:
        raise CatalogError(path, f"not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise CatalogError(path, f"cannot be read ({e.strerror or type(e).__name__})") from None
    old = {k: x for k, x in LEGACY_COLUMNS.items() if k in df.columns and x not in df.columns}
    return df.rename(columns=old), [old.get(c, c) for c in header]


def _parse_error(path: str, text: str) -> CatalogError:
    """pandas' tokenizer message restated with the data row and file line."""
    msg = " ".join(text.split())
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", msg)
    if m:
        line = int(m.group(2))
        return CatalogError(path, f"not valid CSV: {m.group(3)} cells where the header has "
                                  f"{m.group(1)} (an unquoted comma?)",
                            row=line - 1, where=f"row {line - 1} (line {line})")
    m = re.search(r"EOF inside string starting at row (\d+)", msg)
    if m:   # pandas counts file lines from 0 here
        line = int(m.group(1)) + 1
        return CatalogError(path, "not valid CSV: a quoted cell is never closed",
                            row=line - 1, where=f"row {line - 1} (line {line})")
    msg = re.sub(r"^Error tokenizing data\. C error: ", "", msg)
    return CatalogError(path, f"not valid CSV: {msg[:200]}")


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, name: str, stamp) -> pd.DataFrame:
    df, header = _read_csv(path, name)
    return _check_table(name, df, _Rows(path, True), header)


def _load(path: str, name: str) -> pd.DataFrame:
    """A checked table, cached per file version (an edited file is read again)."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None    # _read_csv names the fault; failures are never cached
    return _load_cached(path, name, stamp)


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


class Catalog:
    """Immutable set of tables; ``with_rows`` returns an extended copy.

    ``tables`` maps a table name to a DataFrame or to a CSV path, read and checked on first
    use (so a broken file breaks only what needs that table).
    """

    def __init__(self, tables: Mapping[str, pd.DataFrame | str | Path]):
        self._tables: dict[str, pd.DataFrame] = {}
        self._paths: dict[str, str] = {}
        self._where: dict[str, list] = {}
        for name, t in tables.items():
            if isinstance(t, pd.DataFrame):
                self._tables[name] = t
            else:
                self._paths[name] = str(t)

    @classmethod
    def default(cls) -> "Catalog":
        return default()

    @classmethod
    def from_dir(cls, folder) -> "Catalog":
        folder = Path(folder)
        return cls({name: folder / f"{name}.csv" for name in TABLES})

    def _table(self, name: str) -> pd.DataFrame:
        """The table itself (callers must not modify it), read on first use."""
        df = self._tables.get(name)
        if df is None:
            v.choice("table", name, TABLES)
            if name not in self._paths:
                raise CatalogError(f"table {name}", "not loaded in this catalog")
            df = self._tables[name] = _load(self._paths[name], name)
        return df

    def _place(self, name: str, i: int) -> tuple[str, int, str]:
        """(origin, its 1-based row, "row n (line l, id ...)") of row ``i`` of ``name``."""
        df = self._table(name)
        rows, j = self._rows_of(name)[i]
        return rows.origin, j + 1, rows.place(j, df["id"].iloc[i])

    def _rows_of(self, name: str) -> list:
        """(_Rows, position in it) for each row of table ``name``."""
        if name in self._where:
            return self._where[name]
        n = len(self._table(name))
        base = (_Rows(self._paths[name], True) if name in self._paths
                else _Rows(f"table {name}", False))
        return [(base, i) for i in range(n)]

    def loaded(self, name: str) -> bool:
        """Whether this catalog holds table ``name`` (a file to read, or a frame)."""
        return name in self._tables or name in self._paths

    def table(self, name: str) -> pd.DataFrame:
        """A copy of one table."""
        v.choice("table", name, TABLES)
        return self._table(name).copy()

    def __getattr__(self, name: str) -> Callable[[], pd.DataFrame]:
        """``cat.gpus()``, ``cat.prices()``, ...: :meth:`table` of each name in :data:`TABLES`."""
        if name in TABLES:
            return functools.partial(self.table, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        """The attributes with the table accessors, for completion in a notebook."""
        return sorted(set(super().__dir__()) | set(TABLES))

    def price_offer(self, gpu_id: str, offer: str | None = None) -> pd.Series | None:
        """The prices.csv row priced for ``gpu_id``: ``offer`` (an id) if given, else the
        offer :data:`PRICE_RULE` picks for on-demand (:func:`choose_offers`); None when the
        GPU has no offer."""
        if offer:
            return self.lookup("prices", offer)
        return self.choose_offers(gpu_id).get("on_demand")

    def choose_offers(self, gpu_id: str, provider: str | None = None) -> dict:
        """option -> the prices.csv row :data:`PRICE_RULE` picks (:func:`choose_offers`),
        among ``provider``'s offers when one is given."""
        return choose_offers(self._table("prices"), gpu_id, provider)

    def providers(self, gpu_id: str | None = None) -> list:
        """Providers with an offer of ``gpu_id`` (any GPU when None), in catalog order."""
        return offer_providers(self._table("prices"), gpu_id)

    def failure_rate(self, key: str) -> FailureRate:
        """A failure-rate preset by id (``data/failure_rates.csv`` or a user's row)."""
        return reliability.failure_rate(key, self._table("failure_rates"))

    def default_failure_rate(self, generation: str) -> FailureRate:
        """The job-level failure rate for a GPU generation (hopper's, with a note, if none)."""
        return reliability.default_failure_rate(generation, self._table("failure_rates"))

    def ids(self, name: str) -> list[str]:
        v.choice("table", name, TABLES)
        return list(self._table(name)["id"])

    def _find(self, name: str, key: str) -> int:
        """Position of the row whose id or alias is ``key`` (case-insensitive)."""
        v.choice("table", name, TABLES)
        df = self._table(name)
        k = str(key).strip().lower()
        names = {i.lower(): n for n, i in enumerate(df["id"])}
        if "aliases" in df:
            for n, al in enumerate(df["aliases"]):
                if isinstance(al, str):
                    for a in al.split(";"):
                        names.setdefault(a.strip().lower(), n)
        if k in names:
            return names[k]
        param = {"gpus": "gpu", "models": "model", "fabrics": "fabric", "prices": "price"}.get(
            name, name)
        close = difflib.get_close_matches(k, list(names), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise v.InputError(param, f"{param} {key!r} is not in the catalog{hint} "
                                  f"(known: {', '.join(df['id'])})")

    def lookup(self, name: str, key: str) -> pd.Series:
        """The row whose id or alias is ``key`` (case-insensitive)."""
        return self._table(name).iloc[self._find(name, key)].copy()

    def _spec(self, name: str, i: int, make):
        """``make()``, its refusal of a row's values re-raised naming the file and row."""
        try:
            return make()
        except CatalogError:
            raise
        except v.InputError as e:
            origin, row, place = self._place(name, i)
            raise CatalogError(origin, str(e), column=e.param, row=row, where=place) from None

    def gpu(self, key: str) -> GPUSpec:
        i = self._find("gpus", key)
        r = self._table("gpus").iloc[i]

        def opt(col, cast):
            x = r.get(col)
            return None if x is None or (not isinstance(x, str) and pd.isna(x)) else cast(x)

        return self._spec("gpus", i, lambda: GPUSpec(
            id=r["id"], name=r["name"], generation=r["generation"],
            system_power_kw=opt("system_power_kw", float),
            system_gpus=opt("system_gpus", int),
            system_power_note=opt("system_power_note", str),
            capex_usd_per_system=opt("capex_usd_per_system", float),
            scale_up_domain_gpus=opt("scale_up_domain_gpus", int),
            exp_per_s=opt("exp_per_s", float),
            scale_out=opt("scale_out", str),
            bf16_dense_tflops=float(r["bf16_dense_tflops"]),
            fp8_dense_tflops=opt("fp8_dense_tflops", float),
            memory_gib=float(r["memory_gib"]),
            hbm_bandwidth_tb_per_s=float(r["hbm_bandwidth_tb_per_s"]),
            scale_up=r["scale_up"],
            scale_up_bandwidth_gb_per_s=float(r["scale_up_bandwidth_gb_per_s"]),
            gpus_per_node=int(r["gpus_per_node"]), tdp_w=float(r["tdp_w"])))

    def model(self, key: str) -> ModelSpec:
        i = self._find("models", key)
        r = self._table("models").iloc[i]

        def opt(col, default=None):
            x = r.get(col, default)
            return default if x is None or (not isinstance(x, str) and pd.isna(x)) else x

        def flag(col, default):
            x = opt(col)
            return default if x is None else str(x).strip().lower() in _TRUE

        def integer(col, default=None):
            # check_table has refused fractions, so int() cannot truncate here
            x = opt(col)
            return default if x is None else int(float(x))

        def make():
            pub, act = opt("published_params_b"), opt("published_active_params_b")
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
                attention=opt("attention", "gqa"),
                q_lora_rank=integer("q_lora_rank", 0), kv_lora_rank=integer("kv_lora_rank", 0),
                qk_rope_head_dim=integer("qk_rope_head_dim", 0),
                v_head_dim=integer("v_head_dim"),
                qk_norm=flag("qk_norm", False), attention_sinks=flag("attention_sinks", False),
                attention_window=integer("attention_window", 0),
                window_layers=integer("window_layers", 0), mtp_layers=integer("mtp_layers", 0),
                active_params_counts=opt("active_params_counts", "embedding+head"),
                published_active_params=None if act is None else float(act) * 1e9)

        return self._spec("models", i, make)

    def fabric(self, key: str) -> FabricSpec:
        i = self._find("fabrics", key)
        r = self._table("fabrics").iloc[i]

        def num(col, default):
            x = r.get(col, default)
            return default if x is None or pd.isna(x) else float(x)

        return self._spec("fabrics", i, lambda: FabricSpec(
            id=r["id"], name=r.get("name", r["id"]), kind=r["kind"],
            bandwidth_gb_per_s_per_gpu=float(r["bandwidth_gb_per_s_per_gpu"]),
            latency_us=float(r["latency_us"]),
            oversubscription=num("oversubscription", 1.0),
            efficiency=num("efficiency", 1.0),
            congestion_per_doubling=num("congestion_per_doubling", 0.0),
            technology=None if pd.isna(r.get("technology")) else str(r["technology"]),
            assumed=_terms(r.get("assumed"))))

    def fabric_bounds(self, fab: FabricSpec) -> tuple[FabricSpec, FabricSpec] | None:
        """The fabric at the favourable and the unfavourable end of its assumed terms, or None
        when none of its timing terms is an assumption.

        Each assumed term among :data:`BANDED_TERMS` spans the values measured for it on
        scale-out rows of the same technology (rows whose ``measured`` names it), else on the
        RDMA fabrics' rows (InfiniBand, RoCE, EFA), with the row's own value inside; a
        congestion term starts at 0, a non-blocking fabric's ideal. A term no row measures
        keeps its value.
        """
        terms = [t for t in fab.assumed if t in BANDED_TERMS]
        if not terms:
            return None
        df = self._table("fabrics")
        df = df[df["kind"] == "scale_out"]
        measured = df["measured"].map(_terms) if "measured" in df else None
        tech = df["technology"].astype(str)
        lo, hi = {}, {}
        for t in terms:
            own = float(getattr(fab, t))
            values = []
            if measured is not None:
                has = measured.map(lambda m, t=t: t in m)
                for pool in (has & (tech == str(fab.technology)), has & tech.isin(RDMA)):
                    values = [float(x) for x in df.loc[pool, t] if not pd.isna(x)]
                    if values:
                        break
            values.append(own)
            if t == "congestion_per_doubling":
                values.append(0.0)
            better_low = t != "efficiency"      # lower is faster, but for efficiency
            lo[t] = min(values) if better_low else max(values)
            hi[t] = max(values) if better_low else min(values)
        return replace(fab, **lo), replace(fab, **hi)

    def custom_fabric(self, gb_per_s_per_gpu: float, technology: str = "ib") -> FabricSpec:
        """A scale-out fabric given by its numbers: ``gb_per_s_per_gpu`` [GB/s, 1e9 bytes/s,
        per GPU per direction] on a ``technology`` ("ib", "roce" or "efa"), its latency,
        efficiency, congestion and oversubscription those of the technology's reference row
        (:data:`FABRIC_TECHNOLOGIES`). Its id is "custom"."""
        tech = v.choice("fabric_technology", technology, tuple(FABRIC_TECHNOLOGIES))
        bw = float(v.positive("fabric_gb_per_s_per_gpu", gb_per_s_per_gpu))
        family, ref_id = FABRIC_TECHNOLOGIES[tech]
        ref = self.fabric(ref_id)
        return replace(ref, id="custom", bandwidth_gb_per_s_per_gpu=bw, technology=family,
                       name=f"custom {tech} fabric, {bw:g} GB/s per GPU (other constants of "
                            f"{ref.id})")

    def with_rows(self, name: str, rows, replace: bool = False) -> "Catalog":
        """A new catalog with ``rows`` added to table ``name``.

        ``rows``: a DataFrame, a list of dicts, or a CSV path. Rows without ``source`` or
        ``as_of`` get "user-supplied" and today's date. An id that exists already is an
        error unless ``replace=True``. The rows are checked like a catalog file
        (:class:`~llmcost.catalog_rows.CatalogError` naming the row and column).
        """
        v.choice("table", name, TABLES)
        header = None
        if isinstance(rows, (str, Path)):
            origin = str(rows)
            new, header = _read_csv(origin, name)
        else:
            origin = "user rows"
            new = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
            new = new.reset_index(drop=True)
        today = date.today().isoformat()
        for col, default in (("source", "user-supplied"), ("as_of", today)):
            if col not in new:
                new[col] = default
                header = None if header is None else [*header, col]
            new[col] = new[col].fillna(default)
        mine = _Rows(origin, header is not None)
        new = _check_table(name, new, mine, header)
        old = self._table(name)
        clash = set(new["id"].str.lower()) & set(old["id"].str.lower())
        if clash and not replace:
            raise v.InputError("id", f"id {sorted(clash)[0]!r} already exists in {name}; "
                                     "pass replace=True to override it")
        keep = ~old["id"].str.lower().isin(clash).to_numpy()
        where = self._rows_of(name)
        out = Catalog({})
        out._tables, out._paths, out._where = dict(self._tables), dict(self._paths), dict(
            self._where)
        out._tables[name] = pd.concat([old[keep], new], ignore_index=True)
        out._where[name] = [w for w, k in zip(where, keep) if k] + [
            (mine, i) for i in range(len(new))]
        return out


@functools.lru_cache(maxsize=8)
def _default(env: str | None) -> Catalog:
    return Catalog.from_dir(data_dir())


def default() -> Catalog:
    """The shipped catalog (or ``LLMCOST_DATA``'s, one cached catalog per folder)."""
    return _default(os.environ.get("LLMCOST_DATA"))


def __getattr__(name: str) -> Callable[[], pd.DataFrame]:
    """``catalog.gpus()``, ``catalog.prices()``, ...: the default catalog's table of each name
    in :data:`TABLES`."""
    if name in TABLES:
        return lambda: default().table(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(TABLES))


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


#: a fabric given by its numbers (``custom_fabric``, the Scenario's ``fabric=custom``):
#: technology -> (its spelling in data/fabrics.csv, the row whose latency, efficiency,
#: congestion and oversubscription it takes). ib-ndr and roce-400 are the rows the review
#: compares by default; aws-efa-p5 is the EFA generation most published cloud runs used.
FABRIC_TECHNOLOGIES = {"ib": ("infiniband", "ib-ndr"), "roce": ("roce", "roce-400"),
                       "efa": ("efa", "aws-efa-p5")}


def custom_fabric(gb_per_s_per_gpu: float, technology: str = "ib") -> FabricSpec:
    return default().custom_fabric(gb_per_s_per_gpu, technology)


def ids(name: str) -> list[str]:
    return default().ids(name)
