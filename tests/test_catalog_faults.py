"""Corrupt catalogs: every fault is one line naming the file, the row and
the column; tables load lazily, so a broken table breaks only what reads it.

Each case copies data/ to tmp_path, corrupts one cell, line or file, points a fresh catalog
(or LLMCOST_DATA) at the copy and reads the table. The columns to corrupt come from the
shipped files themselves (every column whose cells are all numbers), and the whole-number
columns are listed here by hand, so a column the loader forgets to check fails a case.
"""

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmcost import InputError, catalog
from llmcost.catalog import Catalog, CatalogError
from llmcost.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"

#: data/*.csv files the package never reads at run time (tests and benchmarks use them)
#: data files read by the benchmarks (make validate), not by the catalog
NOT_CATALOG = {"calibration_runs", "storage_tiers", "whole_runs", "serving_runs", "paired_runs",
               "stack_runs", "serving_measurements"}

#: counts: a fraction such as 8.5 GPUs per node must be refused, never truncated
COUNTS = {
    "gpus": {"gpus_per_node", "system_gpus", "scale_up_domain_gpus"},
    "models": {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len",
               "head_dim", "moe_experts", "moe_top_k", "moe_ffn_hidden",
               "moe_shared_ffn_hidden", "moe_dense_layers", "moe_layer_step", "q_lora_rank",
               "kv_lora_rank", "qk_rope_head_dim", "v_head_dim", "attention_window",
               "window_layers", "mtp_layers"},
    "fabrics": set(),
    "prices": {"gpus"},
    "published_runs": {"gpus", "tp", "pp", "cp", "global_batch", "seq_len"},
    "failure_rates": set(),
    "step_model_errors": {"rows"},
    "published_batches": {"seq_len", "batch_sequences"},
    "realized_runs": {"gpus"},
}
#: whole numbers in every shipped row, yet real-valued quantities (a fraction is fine)
WHOLE_BUT_REAL = {
    "gpus": {"memory_gib", "scale_up_bandwidth_gb_per_s", "tdp_w", "capex_usd_per_system",
             "exp_per_s"},
    "fabrics": {"link_gbit_per_s", "bandwidth_gb_per_s_per_gpu", "oversubscription"},
    "published_runs": {"achieved_tflops_per_gpu"},
    "published_batches": {"tokens", "compute_flops", "batch_tokens", "batch_tokens_start"},
    "realized_runs": {"params", "tokens", "published_gpu_hours"},
}
#: true/false columns
FLAGS = {"models": {"gated_ffn", "tied_embeddings", "dropout", "moe_expert_biases",
                    "moe_router_bias", "qk_norm", "attention_sinks"},
         "realized_runs": {"moe", "fitted"}}
#: counts that may be 0 (0 experts: dense; 0 rows: no calibration); all other numbers > 0
MAY_BE_ZERO = {
    "models": {"moe_experts", "moe_top_k", "moe_shared_ffn_hidden", "moe_dense_layers",
               "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "attention_window",
               "window_layers", "mtp_layers"},
    "fabrics": {"congestion_per_doubling"},
    "prices": {"spot_usd_per_hour", "reserved_1y_usd_per_hour", "reserved_3y_usd_per_hour"},
    "step_model_errors": {"rows", "mean_abs_error", "max_abs_error", "band_abs_error"},
}
#: columns every row must fill (besides id, source, as_of)
REQUIRED = {
    "gpus": ["name", "generation", "bf16_dense_tflops", "memory_gib", "hbm_bandwidth_tb_per_s",
             "scale_up", "scale_up_bandwidth_gb_per_s", "gpus_per_node", "tdp_w"],
    "models": ["layers", "hidden", "heads", "vocab", "seq_len"],
    "fabrics": ["kind", "bandwidth_gb_per_s_per_gpu", "latency_us"],
    "prices": ["provider", "gpu", "gpus", "on_demand_usd_per_hour"],
    "published_runs": ["model"],
    "failure_rates": ["failures_per_1000_gpu_days", "counts"],
    "step_model_errors": ["generation", "precision", "rows", "max_abs_error", "method"],
    "published_batches": ["model", "params_b", "active_params_b", "tokens", "compute_flops",
                          "seq_len", "batch_tokens"],
    "realized_runs": ["stack", "moe", "params", "gpu", "gpus", "tokens", "published_gpu_hours",
                      "floor_gpu_hours", "ratio", "fitted"],
}
ROW = 2     # the data row corrupted (1-based; line 3 of the file)


def _numeric_columns(table):
    df = pd.read_csv(DATA / f"{table}.csv")
    out = []
    for c in df.columns:
        s = df[c].dropna()
        if c in FLAGS.get(table, ()) or s.empty or pd.api.types.is_bool_dtype(s):
            continue
        if pd.to_numeric(s, errors="coerce").notna().all():
            out.append(c)
    return out


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def _copy(tmp_path):
    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    return d


def _set_cell(folder, table, column, value, row=ROW):
    rows = _rows(folder / f"{table}.csv")
    rows[row][rows[0].index(column)] = value
    _write(folder / f"{table}.csv", rows)


def _cases():
    cases = []
    for t in catalog.TABLES:
        counts = COUNTS[t]
        for c in _numeric_columns(t):
            cases.append((t, c, "abc", "text in a number column"))
            cases.append((t, c, "inf", "an infinity"))
            cases.append((t, c, "-3", "a negative"))
            if c not in MAY_BE_ZERO.get(t, ()):
                cases.append((t, c, "0", "a zero"))
            if c in counts:
                cases.append((t, c, "8.5", "a fractional count"))
        for c in sorted(FLAGS.get(t, ())):
            cases.append((t, c, "maybe", "a flag neither true nor false"))
        for c in ("id", "source", "as_of", *REQUIRED[t]):
            cases.append((t, c, "", "an empty required cell"))
    return cases


CASES = _cases()


def _assert_names(err, path, column, row=ROW):
    msg = str(err)
    assert "\n" not in msg and str(path) in msg, msg
    if row is not None:
        assert f"row {row}" in msg and err.row == row, msg
    assert f"column {column}" in msg, msg
    assert isinstance(err, InputError) and err.param == column


def test_the_tables_cover_every_csv_in_data():
    stems = {p.stem for p in DATA.glob("*.csv")}
    assert stems == set(catalog.TABLES) | NOT_CATALOG
    for t in catalog.TABLES:
        numeric = set(_numeric_columns(t))
        assert COUNTS[t] <= numeric
        # every column whose shipped values are whole numbers is classified by hand
        df = pd.read_csv(DATA / f"{t}.csv")
        whole = {c for c in numeric if (df[c].dropna() % 1 == 0).all()}
        assert whole <= COUNTS[t] | WHOLE_BUT_REAL.get(t, set()), sorted(whole - COUNTS[t])


@pytest.mark.parametrize("table,column,value,what", CASES,
                         ids=[f"{t}.{c}={v or 'empty'}" for t, c, v, _ in CASES])
@pytest.mark.slow
def test_a_bad_cell_names_file_row_and_column(tmp_path, table, column, value, what):
    d = _copy(tmp_path)
    _set_cell(d, table, column, value)
    with pytest.raises(CatalogError) as e:
        Catalog.from_dir(d).table(table)
    _assert_names(e.value, d / f"{table}.csv", column)
    # the data row is also located in the file, for an editor
    assert f"line {ROW + 1}" in str(e.value)


def test_a_fractional_count_is_refused_not_truncated(tmp_path):
    d = _copy(tmp_path)
    rows = _rows(d / "gpus.csv")
    row = next(i for i, r in enumerate(rows) if r[0] == "h100-sxm")
    _set_cell(d, "gpus", "gpus_per_node", "8.5", row)
    cat = Catalog.from_dir(d)
    with pytest.raises(CatalogError) as e:
        cat.gpu("h100-sxm")
    _assert_names(e.value, d / "gpus.csv", "gpus_per_node", row)
    assert "id 'h100-sxm'" in str(e.value) and "8.5" in str(e.value)
    # a whole number written as 8.0 is a count all the same
    _set_cell(d, "gpus", "gpus_per_node", "8.0", row)
    assert Catalog.from_dir(d).gpu("h100-sxm").gpus_per_node == 8


@pytest.mark.parametrize("table", catalog.TABLES)
def test_file_faults_name_the_file(tmp_path, table):
    d = _copy(tmp_path)
    path = d / f"{table}.csv"
    text = path.read_text()
    faults = {
        "missing": lambda: path.unlink(),
        "empty": lambda: path.write_text(""),
        "not utf-8": lambda: path.write_bytes(b"id,source\n\xff\xfe,\x80\n"),
        "directory": lambda: (path.unlink(), path.mkdir()),
    }
    for how, corrupt in faults.items():
        if path.is_dir():
            path.rmdir()
        path.write_text(text)
        corrupt()
        with pytest.raises(CatalogError) as e:
            Catalog.from_dir(d).table(table)
        msg = str(e.value)
        assert "\n" not in msg and str(path) in msg, (how, msg)
        assert e.value.param == f"{table}.csv"


@pytest.mark.parametrize("table", catalog.TABLES)
def test_unparseable_csv_names_the_row(tmp_path, table):
    d = _copy(tmp_path)
    rows = _rows(d / f"{table}.csv")
    rows[3] = rows[3] + ["one", "too", "many"]
    _write(d / f"{table}.csv", rows)
    with pytest.raises(CatalogError) as e:
        Catalog.from_dir(d).table(table)
    msg = str(e.value)
    assert "\n" not in msg and str(d / f"{table}.csv") in msg and "row 3 (line 4)" in msg, msg


@pytest.mark.parametrize("table", catalog.TABLES)
def test_header_faults_name_the_column(tmp_path, table):
    d = _copy(tmp_path)
    path = d / f"{table}.csv"
    rows = _rows(path)
    for column in ("id", "source", "as_of", *REQUIRED[table]):
        i = rows[0].index(column)
        _write(path, [r[:i] + r[i + 1:] for r in rows])
        with pytest.raises(CatalogError) as e:
            Catalog.from_dir(d).table(table)
        _assert_names(e.value, path, column, row=None)
        assert "header" in str(e.value) and "missing" in str(e.value)
    # a column written twice would be renamed by pandas and the copy silently ignored
    _write(path, [r + [r[1]] for r in rows])
    with pytest.raises(CatalogError) as e:
        Catalog.from_dir(d).table(table)
    _assert_names(e.value, path, rows[0][1], row=None)


@pytest.mark.parametrize("table", catalog.TABLES)
def test_duplicate_ids_name_both_rows(tmp_path, table):
    d = _copy(tmp_path)
    rows = _rows(d / f"{table}.csv")
    rows[4][0] = rows[1][0].upper()     # ids ignore case, so this is the row-1 id again
    _write(d / f"{table}.csv", rows)
    with pytest.raises(CatalogError) as e:
        Catalog.from_dir(d).table(table)
    _assert_names(e.value, d / f"{table}.csv", "id", row=4)
    assert "duplicate" in str(e.value) and "row 1" in str(e.value)


@pytest.mark.parametrize("column,value,param", [
    ("kv_heads", "5", "kv_heads"),              # 5 does not divide 64 heads
    ("position_embedding", "sinusoid", "position_embedding"),
    ("moe_top_k", "2", "moe_top_k"),            # experts needed for a top-k
])
def test_a_model_row_the_architecture_refuses_names_its_row(tmp_path, column, value, param):
    d = _copy(tmp_path)
    rows = _rows(d / "models.csv")
    row = next(i for i, r in enumerate(rows) if r[0] == "llama3-70b")
    _set_cell(d, "models", column, value, row)
    cat = Catalog.from_dir(d)
    cat.table("models")             # every cell is well-formed on its own
    with pytest.raises(CatalogError) as e:
        cat.model("llama3-70b")
    _assert_names(e.value, d / "models.csv", param, row)
    assert "id 'llama3-70b'" in str(e.value)


def test_fabric_kind_is_checked(tmp_path):
    d = _copy(tmp_path)
    _set_cell(d, "fabrics", "kind", "scale-out")
    with pytest.raises(CatalogError) as e:
        Catalog.from_dir(d).fabrics()
    _assert_names(e.value, d / "fabrics.csv", "kind")


@pytest.mark.parametrize("broken", catalog.TABLES)
def test_one_broken_table_breaks_only_itself(tmp_path, broken):
    d = _copy(tmp_path)
    (d / f"{broken}.csv").unlink()
    cat = Catalog.from_dir(d)       # reads nothing yet
    for t in catalog.TABLES:
        if t == broken:
            with pytest.raises(CatalogError):
                cat.table(t)
        else:
            assert len(cat.table(t)) == len(pd.read_csv(DATA / f"{t}.csv"))
    if broken != "models":
        assert cat.model("llama3-70b").layers == 80     # Llama 3 paper, Table 3
    if broken != "gpus":
        assert cat.gpu("h100-sxm").gpus_per_node == 8


def test_a_table_is_read_once(tmp_path, monkeypatch):
    d = _copy(tmp_path)
    calls = []
    real = catalog._read_csv
    monkeypatch.setattr(catalog, "_read_csv", lambda p, n: calls.append(n) or real(p, n))
    a, b = Catalog.from_dir(d), Catalog.from_dir(d)
    for _ in range(3):
        a.gpu("h100-sxm"), b.gpu("b200"), a.model("llama3-8b")
    assert sorted(calls) == ["gpus", "models"]
    # an edited file is read again (the cache follows the file, not just its name)
    _set_cell(d, "gpus", "tdp_w", "abc")
    with pytest.raises(CatalogError):
        Catalog.from_dir(d).gpus()


def test_user_rows_name_their_row_and_column(tmp_path):
    row = dict(id="my-gpu", name="In-house", generation="hopper", bf16_dense_tflops=500,
               memory_gib=96, hbm_bandwidth_tb_per_s=4, scale_up="nvlink4",
               scale_up_bandwidth_gb_per_s=900, gpus_per_node=8, tdp_w=600)
    base = catalog.default()
    for column, value in (("gpus_per_node", 8.5), ("tdp_w", "abc"), ("system_gpus", -1)):
        with pytest.raises(CatalogError) as e:
            base.with_rows("gpus", [dict(row, id="ok"), {**row, column: value}])
        _assert_names(e.value, "user rows", column)
        assert "id 'my-gpu'" in str(e.value)
    # from a CSV file: its path and line
    path = tmp_path / "mine.csv"
    pd.DataFrame([dict(row, id="ok"), dict(row, moe=1, gpus_per_node="eight")]).to_csv(
        path, index=False)
    with pytest.raises(CatalogError) as e:
        base.with_rows("gpus", path)
    _assert_names(e.value, path, "gpus_per_node")
    assert "line 3" in str(e.value)
    # a number given as text is a number like the rest
    assert base.with_rows("gpus", [dict(row, gpus_per_node="8")]).gpu("my-gpu").gpus_per_node == 8


def test_a_user_row_keeps_the_file_rows_located(tmp_path):
    d = _copy(tmp_path)
    rows = _rows(d / "models.csv")
    row = next(i for i, r in enumerate(rows) if r[0] == "llama3-70b")
    _set_cell(d, "models", "kv_heads", "5", row)
    cat = Catalog.from_dir(d).with_rows("models", [dict(id="tiny", layers=2, hidden=64,
                                                        heads=4, vocab=100, seq_len=32)])
    assert cat.model("tiny").layers == 2
    with pytest.raises(CatalogError) as e:
        cat.model("llama3-70b")
    _assert_names(e.value, d / "models.csv", "kv_heads", row)


def test_not_catalog_files_are_not_read(tmp_path):
    d = _copy(tmp_path)
    for stem in NOT_CATALOG:
        (d / f"{stem}.csv").write_text("garbage,\x00\n")
    cat = Catalog.from_dir(d)
    assert all(len(cat.table(t)) > 0 for t in catalog.TABLES)


# ------------------------------------------------------------------- the command line

def _cli(capsys, monkeypatch, folder, *argv):
    monkeypatch.setenv("LLMCOST_DATA", str(folder))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_flops_needs_no_gpu_table(tmp_path, capsys, monkeypatch):
    d = _copy(tmp_path)
    _set_cell(d, "gpus", "gpus_per_node", "abc")
    (d / "prices.csv").unlink()
    code, out, err = _cli(capsys, monkeypatch, d, "flops", "--model", "llama3-70b", "--json")
    assert code == 0 and err == ""
    assert pd.read_json(__import__("io").StringIO(out), typ="series")["model"] == "llama3-70b"


@pytest.mark.parametrize("argv,table,column", [
    (("memory", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "1",
      "--pp", "1"), "gpus", "gpus_per_node"),
    (("list", "gpus"), "gpus", "gpus_per_node"),
    (("flops", "--model", "llama3-70b"), "models", "moe_experts"),
    (("list", "fabrics"), "fabrics", "latency_us"),
    (("list", "prices"), "prices", "gpus"),
    (("list", "published_runs"), "published_runs", "tp"),
    (("list", "failure_rates"), "failure_rates", "failures_per_1000_gpu_days"),
    (("list", "step_model_errors"), "step_model_errors", "rows"),
])
def test_cli_prints_one_line_and_exits_2(tmp_path, capsys, monkeypatch, argv, table, column):
    d = _copy(tmp_path)
    _set_cell(d, table, column, "x")
    code, out, err = _cli(capsys, monkeypatch, d, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("llmcost: error: catalog "), err
    assert str(d / f"{table}.csv") in err and f"row {ROW}" in err and f"column {column}" in err


@pytest.mark.slow
def test_cli_missing_file_without_traceback(tmp_path):
    d = _copy(tmp_path)
    (d / "gpus.csv").unlink()
    env = {"LLMCOST_DATA": str(d), "PATH": "/usr/bin:/bin"}
    cli = [sys.executable, "-c", "import sys; from llmcost.cli import main; sys.exit(main())"]
    run = subprocess.run([*cli, "list", "gpus"], env=env,
                         capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1 and str(d / "gpus.csv") in run.stderr
    ok = subprocess.run([*cli, "flops", "--model", "llama3-8b"],
                        env=env, capture_output=True, text=True, timeout=120,
                        cwd=Path(__file__).resolve().parents[1])
    assert ok.returncode == 0 and ok.stderr == ""
