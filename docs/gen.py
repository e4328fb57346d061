"""Pages generated from the code and data at build time (conf.py calls :func:`write_all`).

The CLI reference comes from ``llmcost.cli.build_parser``, the data schema from ``data/*.csv``
and the validation tables from ``benchmarks/validate.py``: what the docs say is what the code
prints today, never a copy that drifts.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "generated"

# Column-name endings and the unit they carry (the project's naming rule: units in names).
# Longest ending first. The catalogs' older `gbps`/`tbps` columns mean GB/s and TB/s
# (bytes, not bits), which is why they are spelled out here.
UNIT_SUFFIXES = [
    ("_usd_per_gb_month", "USD per GB-month"),
    ("_usd_per_hour", "USD per hour (per instance)"),
    ("_usd", "USD"),
    ("_gbit_per_s", "Gbit/s"),
    ("_gb_per_s_per_gpu", "GB/s per GPU (1e9 bytes)"),
    ("_gb_per_s", "GB/s (1e9 bytes)"),
    ("_tb_per_s", "TB/s (1e12 bytes)"),
    ("_gbps_per_gpu", "GB/s per GPU (1e9 bytes; legacy spelling)"),
    ("_gbps", "GB/s (1e9 bytes; legacy spelling)"),
    ("_tbps", "TB/s (1e12 bytes; legacy spelling)"),
    ("_dense_tflops", "TFLOP/s, dense (1e12 FLOP/s)"),
    ("_tflops_per_gpu", "TFLOP/s per GPU"),
    ("_tflops", "TFLOP/s"),
    ("_flops", "FLOP"),
    ("_gib", "GiB (2**30 bytes)"),
    ("_tb", "TB (1e12 bytes)"),
    ("_kw", "kW"),
    ("_w", "W"),
    ("_us", "microseconds"),
    ("_ms", "milliseconds"),
    ("_s", "seconds"),
    ("_params_b", "billions of parameters"),
    ("_per_s_per_gpu", "per second per GPU"),
    ("_per_s", "per second"),
    ("_per_1000_gpu_days", "per 1000 GPU-days"),
    ("_gpu_hours", "GPU-hours"),
    ("_tokens", "tokens"),
    ("_abs_error", "fraction (0.1 = 10%)"),
    ("_error", "fraction"),
    ("pct_of_peak", "percent of the peak"),
    ("mfu", "fraction of the dense BF16 peak"),
    ("hfu", "fraction of the dense BF16 peak"),
    ("as_of", "date (YYYY-MM or YYYY-MM-DD)"),
    ("source", "citation (URL, paper, table)"),
]


# Columns whose name carries no unit suffix but whose unit is a convention of the project
# (the papers' symbols: sequences, tokens, parallel degrees).
NAMED_UNITS = {
    "seq_len": "tokens per sequence",
    "isl": "input tokens per request",
    "osl": "output tokens per request",
    "global_batch": "sequences per step",
    "micro_batch": "sequences per micro-batch",
    "batch_sequences": "sequences per step",
    "batch_tokens": "tokens per step",
    "batch_tokens_start": "tokens per step",
    "tokens": "tokens",
    "gpus": "count of GPUs",
    "gpus_per_node": "count of GPUs",
    "system_gpus": "count of GPUs",
    "scale_up_domain_gpus": "count of GPUs",
    "tp": "parallel degree", "pp": "parallel degree", "cp": "parallel degree",
    "ep": "parallel degree", "etp": "parallel degree", "vp": "virtual stages per rank",
    "fsdp": "sharding degree",
    "ga": "gradient-accumulation steps",
    "concurrency": "requests in flight",
    "isl_mean": "input tokens per request (mean)",
    "osl_mean": "output tokens per request (mean)",
    "num_prompts": "requests sent",
    "request_rate": "requests per second (Poisson arrivals)",
    "output_tokens_per_s": "output tokens per second (all GPUs)",
    "requests_per_s": "requests per second",
    "layers": "count", "heads": "count", "kv_heads": "count", "moe_experts": "count",
    "hidden": "dimension", "ffn_hidden": "dimension", "head_dim": "dimension",
    "vocab": "tokens in the vocabulary",
    "oversubscription": "ratio",
    "efficiency": "fraction",
    "utilization": "fraction",
}


def unit_of(column: str) -> str:
    """The unit a column's name states, or an empty string for ids, flags and text."""
    if column in NAMED_UNITS:
        return NAMED_UNITS[column]
    for suffix, unit in UNIT_SUFFIXES:
        if column == suffix.lstrip("_") or column.endswith(suffix):
            return unit
    return ""


def _escape(text: str) -> str:
    """Text as rst shows it literally (sources carry *, ` and _ of their own)."""
    for ch in "\\*`_|":
        text = text.replace(ch, "\\" + ch)
    return text


def _rst_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(x) -> str:
        return str(x).replace("\n", " ").replace("|", "/").strip() or "\\-"
    out = [".. list-table::", "   :header-rows: 1", ""]
    for r in [header] + rows:
        out.append("   * - " + cell(r[0]))
        out += ["     - " + cell(c) for c in r[1:]]
    return "\n".join(out)


def data_schema() -> str:
    """One section per data/*.csv: its columns, their units, filled rows and an example."""
    lines = ["Data files", "==========", "",
             "Every catalog is a CSV in ``data/``; every row names its ``source`` and the date it "
             "was read (``as_of``). This page is generated from the files when the docs are built.",
             "Units follow from the column names (GB = 1e9 bytes, GiB = 2**30 bytes); a column with "
             "no unit is an id, a flag or text. Add your own rows with "
             "``catalog.default().with_rows(\"gpus\", [...])``.", ""]
    for path in sorted((ROOT / "data").glob("*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        title = f"``data/{path.name}``"
        lines += [title, "-" * len(title), ""]
        dates = sorted(d for d in df.get("as_of", pd.Series(dtype=str)) if d)
        sources = {s for s in df.get("source", pd.Series(dtype=str)) if s}
        lines.append(f"{len(df)} rows, {len(sources)} distinct sources"
                     + (f", read {dates[0]} to {dates[-1]}." if dates else "."))
        lines.append("")
        rows = []
        for col in df.columns:
            filled = df[col][df[col] != ""]
            example = filled.iloc[0] if len(filled) else ""
            if len(example) > 60:
                example = example[:57] + "..."
            rows.append([f"``{col}``", unit_of(col), f"{len(filled)}", _escape(example)])
        lines += [_rst_table(["column", "unit", "rows filled", "first value"], rows), ""]
        if sources:
            lines += ["Sources (the most used first):", ""]
            counts = df["source"][df["source"] != ""].value_counts()
            for s, n in counts.head(8).items():
                lines.append("- " + _escape(s) + f" ({n} rows)")
            if len(counts) > 8:
                lines.append(f"- ... and {len(counts) - 8} more")
            lines.append("")
    return "\n".join(lines)


def cli_reference() -> str:
    """Every subcommand's ``--help``, from ``llmcost.cli.build_parser``."""
    from llmcost.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    lines = ["Command line reference", "======================", "",
             "``llmcost <subcommand> [options]``; ``--json`` on every subcommand prints exactly one "
             "JSON object. Bad input prints one line ``llmcost: error: ...`` naming the parameter "
             "and exits with status 2. Generated from ``llmcost.cli.build_parser`` at build time.",
             "", ".. code-block:: text", ""]
    lines += ["   " + x for x in _help(parser).splitlines()]
    lines.append("")
    examples = guide_examples()
    for name, sp in sub.items():
        title = f"``llmcost {name}``"
        lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
        lines += ["   " + x for x in _help(sp).splitlines()]
        lines.append("")
        if name in examples:
            # the keys a script can rely on, read from a real run of the guide's example
            keys = ", ".join(f"``{k}``" for k in json_keys(examples[name]))
            lines += [f"With ``--json``, ``llmcost {shlex.join(examples[name])}`` answers one "
                      f"object with the keys {keys}.", ""]
    return "\n".join(lines)


def page_commands(path: Path) -> list[list[str]]:
    """The ``llmcost ...`` lines of a page's bash blocks, continuation lines joined, as argv
    (without ``llmcost``); a ``#`` comment ends a command. The README's tests run the same."""
    cmds, in_bash, buf = [], False, ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_bash = line.strip() == "```bash"
            continue
        if not in_bash:
            continue
        if line.endswith("\\"):
            buf += line.rstrip("\\").rstrip() + " "
            continue
        buf += line
        if buf.strip().startswith("llmcost "):
            cmds.append(shlex.split(buf.split("#")[0])[1:])
        buf = ""
    return cmds


def guide_examples(path: Path = Path(__file__).resolve().parent / "cli_guide.md") -> dict:
    """The first ``llmcost`` command of each subcommand in the guide's bash blocks, as argv."""
    found: dict = {}
    for argv in page_commands(path):
        found.setdefault(argv[0], argv)
    return found


def json_keys(argv: list[str]) -> list[str]:
    """The top-level keys of ``llmcost <argv> --json`` (run in-process)."""
    import json

    from llmcost.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv) + ["--json"])
    if code not in (0, None):
        raise RuntimeError(f"llmcost {' '.join(argv)} --json exited {code}")
    return list(json.loads(out.getvalue()))


def _help(parser) -> str:
    import os
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"   # argparse wraps to the terminal; fix it for the page
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _validate_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import validate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return validate


def validation_tables() -> str:
    """The tables ``make validate`` prints (without FIT), run at build time."""
    v = _validate_module()
    res = v.evaluate(v.load_rows())
    table = v.readme_table(res)
    full = io.StringIO()
    with contextlib.redirect_stdout(full):
        v.validate()
        v.forecast_report(v.whole_runs())
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    lines = ["Validation tables", "-----------------", "",
             "Errors of predicted against measured tokens/s per GPU, per source family, GPU and "
             "precision (``benchmarks/validate.py --readme``, computed when these pages were built):",
             "", _rst_table(header, [[c.strip() for c in r] for r in rows]), "",
             "The full output of ``make validate`` (every calibration row, the summary per source "
             "table and GPU generation, the MFU convention, the whole published runs and the forecast "
             "against them, each run left out of its own group):", "",
             ".. code-block:: text", ""]
    lines += ["   " + x for x in full.getvalue().splitlines()]
    return "\n".join(lines) + "\n"


def write_all(out: Path = OUT) -> None:
    out.mkdir(exist_ok=True)
    for name, text in (("data.rst", data_schema()), ("cli.rst", cli_reference()),
                       ("validation.rst", validation_tables())):
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
