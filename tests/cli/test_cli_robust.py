"""Property: no command-line input prints a traceback.

Every subcommand of ``llmcost.cli.build_parser()`` and every flag it takes is discovered
from the argparse parser itself (a new flag is covered without editing this file), and fed
a hostile mix of values: zero, negatives, 1e308 and beyond, 400-digit integers, NaN and
infinities, empty and non-numeric text, very long strings, catalog ids and misspellings of
them, query strings with real Scenario keys and hostile values, missing and malformed
scenario files. Part of the draws are fully valid, so the exit-0 path is checked too.

The contract (``llmcost.cli`` module docstring): exit 0 with the answer on stdout (one JSON
line with ``--json``, without NaN or Infinity), or exit 2 with exactly one
``llmcost: error: ...`` line on stderr. Nothing else: no exception escaping, no other exit
code, no warnings printed, no hang, no megabytes of output.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import warnings
from collections import Counter
from pathlib import Path

import pytest
from budget import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from llmcost import catalog
from llmcost.cli import build_parser, main
from llmcost.scenario import FIELDS, RENAMED, VOILA_PARAMS

PARSER = build_parser()
SUBPARSERS: dict[str, argparse.ArgumentParser] = PARSER._subparsers._group_actions[0].choices
COMMANDS = sorted(SUBPARSERS)

CAT = catalog.default()
IDS = {t: list(CAT.ids(t)) for t in catalog.TABLES}
ALL_IDS = sorted({i for ids in IDS.values() for i in ids})
#: the largest dense FP8 / BF16 peak ratio of the catalog's GPUs
FP8_OVER_BF16 = max(g.peak_tflops("fp8") / g.peak_tflops() for g in map(CAT.gpu, IDS["gpus"])
                    if g.fp8_dense_tflops)

#: a valid call's output is a few kB (plan --top 100 is ~100 kB); megabytes mean a flag
#: without a cap
MAX_OUTPUT_CHARS = 1_000_000
# (no wall-clock bound: speed is measured in `make bench`; the output bound above and the
# range checks on --top, --monte-carlo-runs and the counts keep every call's work bounded)

# ------------------------------------------------------------------------- values

BIG_INT = "1" + "0" * 400          # above float's 1.8e308: float() gives inf, numpy overflows
HOSTILE_NUMBERS = [
    "0", "-0", "0.0", "-1", "-7", "-0.5", "1e308", "1.7976931348623157e308", "1e309",
    "-1e309", BIG_INT, "-" + BIG_INT, "9" * 5000, "1e-300", "5e-324", "nan", "NaN", "-nan",
    "inf", "-inf", "Infinity", "", " ", "abc", "1,000", "0x10", "1_000", "3.0", "2.5",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e20", "1e12",
    "4", "128", "1e6", "x" * 5000, "12abc", "--json", "1e300", "1e-300", "2.2250738585072014e-308",
    str(2 ** 53), str(2 ** 50), str(2 ** 53 + 1),
]

sane_int = st.one_of(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256, 1024]),
                     st.integers(1, 100)).map(str)
sane_float = st.one_of(st.floats(0.001, 1.0), st.floats(1.0, 1e4),
                       st.sampled_from([0.1, 0.5, 0.9, 1.0, 8.0, 60.0, 1e9, 1e12])).map(repr)
any_number = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(-(10 ** 30), 10 ** 30).map(str),
    st.integers(-(2 ** 70), 2 ** 70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def _misspell(s: str) -> st.SearchStrategy[str]:
    return st.sampled_from([s[:-1], s + "x", s.upper(), f" {s} ", s.replace("-", "_"),
                            s.replace("-", ""), s * 40])


catalog_id = st.sampled_from(ALL_IDS)
misspelt_id = catalog_id.flatmap(_misspell)
hostile_text = st.one_of(
    st.sampled_from(["", " ", "none", "None", "../../etc/passwd", "x" * 5000, "é", "🙂",
                     "--model", "-1", "nan", "a=b&c=d", "%00", "\\", "'", '"']),
    st.text(max_size=30).filter(lambda s: "\x00" not in s),   # argv cannot carry NUL
)
any_text = st.one_of(catalog_id, misspelt_id, hostile_text, st.sampled_from(HOSTILE_NUMBERS))

# ------------------------------------------------------------------------- review inputs

QUERY_KEYS = sorted(FIELDS) + sorted(RENAMED) + sorted(VOILA_PARAMS) + [
    "spot_usd_per_node_hour", "unknown", "gpus ", "GPUS", "", "x" * 200]
query_value = st.one_of(any_number, any_text, sane_float, sane_int)
query_pairs = st.lists(st.tuples(st.sampled_from(QUERY_KEYS), query_value), max_size=6)


@st.composite
def query_string(draw):
    pairs = draw(query_pairs)
    if pairs and draw(st.booleans()):
        pairs.append(draw(st.sampled_from(pairs)))           # a duplicated key
    sep = draw(st.sampled_from(["&", "&", ";", "&&"]))
    q = sep.join(f"{k}={x}" if draw(st.integers(0, 9)) else k for k, x in pairs)
    return draw(st.sampled_from(["", "?"])) + q


valid_query = st.fixed_dictionaries({
    "model": st.sampled_from(["llama3-8b", "llama3-70b", "mistral-7b", "llama2-13b"]),
    "gpu": st.sampled_from(IDS["gpus"]),
    "gpus": st.sampled_from(["8", "64", "512", "1024", "4096"]),
    "tokens": st.sampled_from(["1e9", "1e11", "2e12"]),
}).map(lambda d: "&".join(f"{k}={x}" for k, x in d.items()))


# ------------------------------------------------------------------------- flags

def _kind(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "switch"
    if isinstance(action, argparse._AppendAction):
        return "append"
    if action.choices is not None:
        return "choice"
    if action.type in (int, float):
        return "number"
    return "text"


def _flags(command: str) -> list[argparse.Action]:
    return [a for a in SUBPARSERS[command]._actions
            if not isinstance(a, argparse._HelpAction)]


def _values(action: argparse.Action, files: list[str]) -> st.SearchStrategy[str]:
    """Strings for one flag: sane for its type or name, and hostile."""
    kind = _kind(action)
    if action.dest == "query":
        return st.one_of(query_string(), valid_query)
    if action.dest == "scenario":
        return st.one_of(st.sampled_from(files), any_text)
    if kind == "choice":
        return st.one_of(st.sampled_from([str(c) for c in action.choices]),
                         st.sampled_from([str(c) for c in action.choices]).flatmap(_misspell),
                         any_text)
    if kind == "number":
        sane = sane_int if action.type is int else sane_float
        return st.one_of(sane, any_number, any_text)
    table = {"model": "models", "gpu": "gpus", "fabric": "fabrics", "price": "prices",
             "failure_rate": "failure_rates"}.get(action.dest)
    ids = st.sampled_from(IDS[table]) if table else catalog_id
    return st.one_of(ids, ids.flatmap(_misspell), any_text)


@st.composite
def flag_args(draw, action: argparse.Action, files: list[str]) -> list[str]:
    if not action.option_strings:                       # a positional
        return [draw(_values(action, files))]
    opt = draw(st.sampled_from(action.option_strings))
    if _kind(action) == "switch":
        return [opt]
    # "--flag=value": argparse would read "-inf" or "--json" after a space as an option
    return [f"{opt}={x}" for x in draw(st.lists(_values(action, files), min_size=1,
                                                max_size=3 if _kind(action) == "append" else 1))]


# ------------------------------------------------------------------------- valid calls

#: real cluster outputs (tests/data/cluster/SOURCES.csv) for `llmcost check`
CLUSTER = Path(__file__).resolve().parents[1] / "data" / "cluster"
small_model = st.sampled_from(["llama3-8b", "llama2-7b", "mistral-7b", "qwen2.5-7b",
                               "megatron-gpt-1.7b", "llama2-13b"])
VALID = {
    "flops": st.tuples(st.just("--model"), st.sampled_from(IDS["models"]),
                       st.just("--tokens"), sane_float),
    "mfu": st.tuples(st.just("--model"), small_model, st.just("--gpu"),
                     st.sampled_from(IDS["gpus"]), st.just("--global-batch"), sane_int,
                     st.just("--steps"), sane_int, st.just("--gpus"), sane_int,
                     st.just("--wall-clock-s"), st.sampled_from(["1e5", "1e6", "36000"])),
    "memory": st.tuples(st.just("--model"), small_model, st.just("--gpus"),
                        st.sampled_from(["8", "16", "64"]), st.just("--tp"),
                        st.sampled_from(["1", "2", "4"]), st.just("--pp"),
                        st.sampled_from(["1", "2"]), st.just("--gpu"),
                        st.sampled_from(IDS["gpus"])),
    "predict": st.tuples(st.just("--model"), small_model, st.just("--gpu"),
                         st.sampled_from(["a100-80gb", "h100-sxm", "b200"]), st.just("--gpus"),
                         st.sampled_from(["8", "16", "64"]), st.just("--tp"),
                         st.sampled_from(["1", "2", "4"]), st.just("--pp"),
                         st.sampled_from(["1", "2"]), st.just("--global-batch"),
                         st.sampled_from(["64", "128", "512"])),
    "plan": st.tuples(st.just("--model"), small_model, st.just("--gpu"),
                      st.sampled_from(["a100-80gb", "h100-sxm"]), st.just("--gpus"),
                      st.sampled_from(["8", "16", "32"]), st.just("--global-batch"),
                      st.sampled_from(["32", "64", "128"])),
    "breakeven": st.tuples(st.just("--cloud-usd-per-node-hour"), sane_float,
                           st.just("--onprem-capex-usd-per-node"), sane_float,
                           st.just("--utilization"), st.floats(0.05, 1.0).map(repr)),
    "spot": st.tuples(st.just("--discount"), st.floats(0.0, 0.9).map(repr),
                      st.just("--preemptions-per-day"), st.floats(0.0, 10.0).map(repr),
                      st.just("--lost-hours-per-preemption"), st.floats(0.0, 5.0).map(repr),
                      st.just("--monte-carlo-runs"), st.sampled_from(["0", "10", "200"])),
    "checkpoint": st.tuples(st.just("--checkpoint-s"), st.floats(1.0, 600.0).map(repr),
                            st.just("--gpus"), sane_int),
    "size": st.tuples(st.just("--model"), small_model, st.just("--days"),
                      st.sampled_from(["7", "30", "90"]), st.just("--tokens"),
                      st.sampled_from(["1e10", "1e11", "1e12"])),
    "ladder": st.tuples(st.just("--model"), small_model),
    "review": st.tuples(st.just("--query"), valid_query),
    "storage": st.tuples(st.just("--query"), valid_query),
    "compare": st.tuples(st.just("--query"), valid_query, st.just("--gpus"),
                         st.sampled_from(["h100-sxm", "mi300x", "a100-40gb,b200"])),
    "serve": st.tuples(st.just("--query"), st.fixed_dictionaries({
        "model": st.sampled_from(["llama3-8b", "mistral-7b", "qwen3-30b-a3b", "llama3-70b"]),
        "gpu": st.sampled_from(["a100-80gb", "h100-sxm", "h200", "b200", "mi300x"]),
        "tp": st.sampled_from(["1", "2", "4", "8"]),
        "weights": st.sampled_from(["bf16", "fp8", "int4", "fp4"]),
        "isl": st.sampled_from(["128", "1000", "8192"]),
        "osl": st.sampled_from(["1", "128", "2000"]),
        "engine": st.sampled_from(["vllm", "sglang", "trtllm"]),
    }).map(lambda d: "&".join(f"{k}={x}" for k, x in d.items()))),
    "list": st.tuples(st.sampled_from(catalog.TABLES)),
    "check": st.one_of(
        st.tuples(st.just("--nccl-tests"), st.sampled_from(sorted(str(p) for p in CLUSTER.glob("nccl_*"))),
                  st.just("--gpu"), st.sampled_from(["a100-80gb", "h100-sxm", "b200"])),
        st.tuples(st.just("--train-log"), st.just(str(CLUSTER / "torchtitan_llama3_8b_h100.log")),
                  st.just("--query"),
                  st.sampled_from(["model=llama3-8b&gpu=h100-sxm&gpus=8&seq_len=8192",
                                   "model=llama3-8b&gpu=a100-80gb&gpus=16&stack=fsdp"])),
        st.tuples(st.just("--dcgm"), st.sampled_from(sorted(
            str(p) for p in [*CLUSTER.glob("*.prom"), *CLUSTER.glob("dcgmi_*")])))),
}

#: a valid call per subcommand, with the flags that are in it
BASE = {
    "check": ["--nccl-tests", str(CLUSTER / "nccl_all_reduce_a3mega_h100_16.txt"), "--gpu", "h100-sxm"],
    "breakeven": ["--cloud-usd-per-node-hour", "60", "--onprem-capex-usd-per-node", "400000",
                  "--utilization", "0.8"],
    "checkpoint": ["--checkpoint-s", "60", "--gpus", "1024"],
    "flops": ["--model", "llama3-8b", "--tokens", "1e12"],
    "ladder": ["--model", "llama3-8b"],
    "list": ["gpus"],
    "memory": ["--model", "llama3-8b", "--gpus", "16", "--tp", "2", "--pp", "1"],
    "mfu": ["--model", "llama3-8b", "--gpu", "h100-sxm", "--global-batch", "1024",
            "--steps", "100", "--gpus", "64", "--wall-clock-s", "36000"],
    "plan": ["--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "16",
             "--global-batch", "64"],
    "predict": ["--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "16", "--tp", "2",
                "--pp", "1", "--global-batch", "64"],
    "review": ["--query", "model=llama3-8b&gpu=h100-sxm&gpus=64&tokens=1e11"],
    "serve": ["--query", "model=llama3-8b&gpu=h100-sxm&tp=1&isl=1000&osl=1000"],
    "size": ["--model", "llama3-8b", "--days", "30", "--tokens", "1e12"],
    "spot": ["--discount", "0.6", "--preemptions-per-day", "2",
             "--lost-hours-per-preemption", "0.5"],
    "storage": ["--query", "model=llama3-8b&gpu=h100-sxm&gpus=64&tokens=1e11"],
    # two GPUs, so that grouping by GPU or provider reorders the rows
    "compare": ["--query", "model=llama3-8b&gpu=h100-sxm&gpus=64&tokens=1e11", "--gpus",
                "mi300x,h100-sxm"],
}

#: examples per subcommand at full budget (make test-grid; make test draws budget.examples of
#: them); plan and size evaluate thousands of layouts per call (30-70 ms against ~5 ms);
#: compare runs a review per offer of each GPU asked for (~0.4 s a call)
EXAMPLES = {"plan": 200, "size": 150, "review": 300, "storage": 200, "compare": 12}
DEFAULT_EXAMPLES = 400
#: hostile flags added to a call
MAX_EXTRA = 4


@st.composite
def argv_for(draw, command: str, files: list[str]) -> list[str]:
    argv = [command]
    positional = [a for a in _flags(command) if not a.option_strings]
    if draw(st.integers(0, 9)) < 7:
        argv += draw(VALID[command])
        positional = []                 # the valid call gives them
    # positionals go first so an option value cannot be taken for one
    for action in positional:
        if draw(st.integers(0, 9)):
            argv += draw(flag_args(action, files))
    optional = [a for a in _flags(command) if a.option_strings and a.dest != "json"]
    for action in draw(st.lists(st.sampled_from(optional), max_size=MAX_EXTRA)) if optional else []:
        argv += draw(flag_args(action, files))
    if not draw(st.integers(0, 19)):    # a stray word or an unknown flag
        argv.append(draw(st.sampled_from(["--no-such-flag", "--no-such-flag=1", "extra", "-x"])))
    if draw(st.integers(0, 9)) < 7:
        argv.append("--json")
    return argv


def _no_constants(name):
    raise ValueError(f"{name} in JSON output")


def cli_json(argv: list[str]) -> dict:
    """``llmcost ARGV --json`` run in-process: its one JSON object (exit 0 asserted)."""
    code, out, err = run_cli([*argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as e:           # argparse exiting on its own (help, usage)
            pytest.fail(f"SystemExit({e.code}) escaped main()")
    assert not caught, f"warnings emitted: {[str(w.message) for w in caught]}"
    return code, out.getvalue(), err.getvalue()


def check_call(argv: list[str]) -> int:
    code, out, err = run_cli(argv)
    assert code in (0, 2), f"exit code {code!r}; stderr {err[:300]!r}"
    assert "Traceback" not in out + err
    assert len(out) + len(err) < MAX_OUTPUT_CHARS, f"{len(out) + len(err):,} characters printed"
    if code == 2:
        assert out == "", f"stdout on error: {out[:200]!r}"
        assert err.startswith("llmcost: error:"), err[:300]
        assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err[:300]!r}"
        assert names_what_was_typed(argv, err), f"names no flag typed: {err[:300]!r} for {argv}"
    else:
        assert err == "", f"stderr on success: {err[:300]!r}"
        assert out.endswith("\n") and out.strip()
        if "--json" in argv:
            assert out.count("\n") == 1, "JSON output is not one line"
            result = json.loads(out, parse_constant=_no_constants)
            assert isinstance(result, dict)
            _check_physical(result)
    return code


def names_what_was_typed(argv: list[str], err: str) -> bool:
    """Whether a refusal names something the user typed: a flag (as typed or by its dest), a
    query or scenario-file key, a word; or, when something is missing, the flag to give."""
    typed = set()
    for x in argv:
        if x.startswith("--"):
            flag = x.split("=", 1)[0]
            typed |= {flag, flag[2:].replace("-", "_")}
        elif x.strip():
            typed.add(x[:40])
    if not typed - {argv[0], "--json", "json"} or [x.strip() for x in argv[1:2]] == [""]:
        return "--" in err or "argument" in err
    for i, x in enumerate(argv):
        query = argv[i + 1] if x == "--query" and i + 1 < len(argv) else \
            x[len("--query="):] if x.startswith("--query=") else None
        if query is not None:
            keys = {k.split("=", 1)[0][:60] for k in query.lstrip("?").split("&") if k}
            # an old key is read, and refused, under its new name
            typed |= keys | {RENAMED[k][0] for k in keys if k in RENAMED}
    if "--scenario" in " ".join(argv):
        typed |= set(FIELDS) | {"scenario"}
    typed -= {argv[0], "--json", "json"}
    # argparse names the argument itself ("argument table: invalid choice: ...")
    return "required" in err or "argument " in err or any(t in err for t in typed)


def _check_physical(obj, key=None):
    """An answer no input may produce: a negative duration, an MFU or HFU above 1 of the
    peak of the precision used (the measured-run `effective_utilization` may exceed 1: that
    is a finding, not an answer)."""
    if isinstance(obj, dict):
        for k, x in obj.items():
            _check_physical(x, k)
    elif isinstance(obj, list):
        for x in obj:
            _check_physical(x, key)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and key:
        if key.endswith("_s") or key in ("days", "hours"):
            assert obj >= 0, f"{key} = {obj}"
        if key in ("mfu_precision", "hfu_precision"):
            assert 0 <= obj <= 1, f"{key} = {obj}"
        if key in ("mfu", "hfu"):
            # against the dense BF16 peak: an FP8/MXFP8 run may pass 1, up to the ratio of
            # the peaks (2.0-2.03 on the FP8 GPUs of data/gpus.csv)
            assert 0 <= obj <= FP8_OVER_BF16, f"{key} = {obj}"


LLAMA = ["--model", "llama3-8b"]
PREDICT = ["predict", *LLAMA, "--gpus", "16", "--tp", "2", "--pp", "1", "--global-batch", "64"]
PLAN = ["plan", *LLAMA, "--gpus", "16", "--global-batch", "64"]
MFU = ["mfu", "--flops-per-token", "1e12", "--seq-len", "4096", "--global-batch", "512",
       "--steps", "1", "--gpus", "8", "--gpu", "h100-sxm", "--wall-clock-s", "100"]
SPOT = ["spot", "--discount", "0.6", "--lost-hours-per-preemption", "1"]

#: inputs that once printed a traceback, warnings, megabytes, or a wrong answer: (argv,
#: exit code, text expected on stderr, or on stdout for exit 0)
REGRESSIONS = [
    # a 401-digit integer overflowed float conversion without naming the parameter
    (["flops", "--layers", BIG_INT, "--hidden", "4096", "--heads", "32", "--vocab", "1000",
      "--seq-len", "2048"], 2, "layers must be a finite number, got a 401-digit number"),
    (["memory", *LLAMA, "--gpus", BIG_INT, "--tp", "2", "--pp", "1"], 2,
     "gpus must be a finite number, got a 401-digit number"),
    # above 2**63 the int64 cast wrapped (numpy "invalid value encountered in cast")
    (["plan", *LLAMA, "--gpus=9223372036854775808", "--global-batch", "32"], 2,
     "gpus must be in [1, 9.0072e+15]"),
    # b x seq_len wrapped to a negative int64 ("rows must be in (0, inf)")
    (["predict", *LLAMA, "--gpus", "8", "--tp", "1", "--pp", "1", "--global-batch", str(2 ** 53),
      "--micro-batch", str(2 ** 50)], 2, "global_batch x seq_len must be at most 2**53"),
    # a catalog model is sized by the review chain, which bounds the tokens
    (["size", *LLAMA, "--days", "30", "--tokens", "1e308"], 2, "tokens must be in [1e+06, 1e+15]"),
    (["spot", *SPOT[1:], "--preemptions-per-day", "2", "--monte-carlo-runs", "100000000000"],
     2, "runs must be in [1, 1e+07]"),
    (["spot", *SPOT[1:], "--preemptions-per-day", "0.001", "--monte-carlo-runs", "100",
      "--run-hours", "1e300"], 2, "expected interruptions per run"),
    # overlap shares above 1 gave negative exposed times and MFU > 1
    ([*PREDICT, "--dp-overlap=4"], 2, "dp_overlap must be in [0, 1], got 4"),
    ([*PREDICT, "--dp-overlap=nan"], 2, "dp_overlap must be a finite number, got nan"),
    ([*PLAN, "--dp-overlap=-1"], 2, "dp_overlap must be in [0, 1], got -1"),
    # every layout (1.5 s, 7 MB of JSON)
    ([*PLAN, "--top=-1"], 2, "top must be in [1, 100], got -1"),
    ([*MFU, "--published=128"], 2, "published must be in (0, 1], got 128"),
    # an empty plan said "no layout fits in memory"; nothing was evaluated
    (["plan", *LLAMA, "--gpus", "60", "--global-batch", "64"], 0,
     "no layout in the space splits a global batch of 64 sequences over 60 GPUs"),
    # numpy overflow warnings printed before the answer or the error line
    (["breakeven", "--cloud-usd-per-node-hour=5e-324", "--onprem-capex-usd-per-node", "0.5",
      "--utilization", "0.87"], 2, "overflow encountered"),
    (["size", "--model", "llama2-13b", "--days", "90", "--tokens", "1e12", "--goodput=5e-324"],
     2, "overflow encountered"),
    # a vanishing preemption rate: no breakeven limit, as with none
    ([*SPOT, "--preemptions-per-day", "2.2250738585072014e-308"], 0,
     '"breakeven_lost_hours_per_preemption": null'),
]


@pytest.mark.parametrize("argv, code, text", REGRESSIONS,
                         ids=[" ".join(a[:1] + [x[:24] for x in a[-2:]]) for a, _, _ in REGRESSIONS])
@pytest.mark.slow
def test_regressions(argv, code, text):
    argv = [*argv, "--json"]
    assert check_call(argv) == code
    _, out, err = run_cli(argv)
    assert text in (err if code else out)


@pytest.fixture(scope="module")
def scenario_files(tmp_path_factory) -> list[str]:
    """Scenario paths: missing, a folder, and files from valid to malformed."""
    from llmcost.scenario import Scenario

    d = tmp_path_factory.mktemp("scenarios")
    contents = {
        "valid.json": Scenario().to_json(),
        "small.json": json.dumps({"model": "llama3-8b", "gpus": 64}),
        "empty.json": "", "object.json": "{}", "list.json": "[]", "text.json": "not json",
        "nan.json": '{"gpus": NaN}', "huge.json": '{"tokens": 1e999, "gpus": ' + BIG_INT + "}",
        "types.json": '{"gpus": [1, 2], "model": {"a": 1}, "pue": true, "gpu": null}',
        "unknown.json": '{"nonsense": 1, "gpus": "many"}',
        "nested.json": "[" * 100_000 + "]" * 100_000,
        "latin1.json": b'{"model": "\xe9"}',
    }
    paths = []
    for name, text in contents.items():
        p = d / name
        (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
        paths.append(str(p))
    return paths + [str(d), str(d / "missing.json"), "/nonexistent/dir/s.json", ""]


def test_every_subcommand_has_a_valid_call():
    # a new subcommand needs an entry in VALID so its exit-0 path is exercised
    assert sorted(VALID) == COMMANDS


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_no_input_prints_a_traceback(command, scenario_files):
    codes = Counter()

    @settings(max_examples=examples(EXAMPLES.get(command, DEFAULT_EXAMPLES)), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(argv=argv_for(command, scenario_files))
    @example(argv=[command, *BASE[command], "--json"])     # the answered path, whatever the draws
    def check(argv):
        codes[check_call(argv)] += 1

    check()
    # both paths were exercised: a property that only ever saw errors proves little
    assert codes[0] > 0 and codes[2] > 0, codes
