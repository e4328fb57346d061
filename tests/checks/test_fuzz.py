"""Property: the readers answer any text with a result or one InputError line; never a
traceback (the uploads and ``llmcost check`` hand them whatever a user has)."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcost._validate import InputError
from llmcost.checks import dcgm, nccl_tests, train_log

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"
REAL_LINES = [x for p in sorted(DATA.iterdir()) if p.name != "SOURCES.csv"
              for x in p.read_text().splitlines()]

TOKENS = ["8", "-1", "0", "1e400", "nan", "inf", "N/A", "float", "sum", "none", "#", "[0]",
          "0:", "{", "}", "[", "]", '"results"', '"benchmark"', ":", ",", "step:", "tps:",
          "iteration", "elapsed time per iteration (ms):", "|", "train_step_timing in s:",
          "global_step:", "Finished saving the checkpoint in", "seconds", "9" * 5000, "\x00", "\t",
          "é", "\u2028", "# Entity", "GPU-I", "Id", "# Rank  0 Group  0 Pid 1 on h device 0 [0x1] GPU",
          "Collective test starting: all_reduce_perf", "-" * 300, "DCGM_FI_PROF_SM_ACTIVE",
          '{gpu="0"}', '{gpu="0",x="\\"}', "9223372036854775794", "140737488355330"]


def _mutate(line: str, how: int, tok: str) -> str:
    words = line.split(" ")
    i = how % max(len(words), 1)
    if how % 4 == 0:
        words[i] = tok
    elif how % 4 == 1:
        words.insert(i, tok)
    elif how % 4 == 2:
        words = words[:i]
    else:
        return line[::-1]
    return " ".join(words)


hostile_line = st.one_of(
    st.builds(_mutate, st.sampled_from(REAL_LINES), st.integers(0, 400), st.sampled_from(TOKENS)),
    st.sampled_from(REAL_LINES),
    st.text(max_size=200),
)
hostile_text = st.one_of(st.lists(hostile_line, max_size=40).map("\n".join),
                         st.binary(max_size=300))


def _answers(read, text, param):
    try:
        read(text)
    except InputError as e:
        msg = str(e)
        assert e.param == param and msg and "\n" not in msg and len(msg) < 1000, msg
        assert "Traceback" not in msg


# Parametrized, not built by a factory: Hypothesis keys its example database on a test's
# source plus its parameters, so tests made from one inner function would share one key and
# replay each other's examples.
FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow
@pytest.mark.parametrize("read, param", [(nccl_tests.read, "nccl_tests"),
                                         (train_log.read, "train_log"), (dcgm.read, "dcgm")],
                         ids=["nccl_tests", "train_log", "dcgm"])
@settings(max_examples=1500, **FUZZ)
@given(text=hostile_text)
def test_reader_never_raises_anything_else(read, param, text):
    _answers(read, text, param)


@pytest.mark.slow
@settings(max_examples=300, **FUZZ)
@given(st.lists(st.sampled_from(TOKENS + ["1", "2.5", "8"]), max_size=60).map(
    lambda t: "{" + " ".join(t) + "}"))
def test_nccl_json_reader_never_raises_anything_else(text):
    _answers(nccl_tests.read_json, text, "nccl_tests")
