"""No flag accepted and ignored, every flag's range checked, every refusal naming a flag.

A flag the chosen mode does not read is refused in one line naming both flags; a flag given
out of range is refused whether or not the mode reads it; a refusal always names a flag the
user typed (or the query key of a review)."""

from __future__ import annotations

import contextlib
import io

import pytest

from llmcost.cli import main

MFU = ["mfu", "--flops-per-token", "1e12", "--seq-len", "4096", "--global-batch", "512",
       "--steps", "1", "--gpus", "8", "--gpu", "h100-sxm", "--wall-clock-s", "100"]
CKPT = ["checkpoint", "--checkpoint-s", "30", "--mtbf-h", "10"]
SPOT = ["spot", "--discount", "0.6", "--preemptions-per-day", "2.4",
        "--lost-hours-per-preemption", "1"]


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--json"])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv, mode, extra", [
    (MFU, "--flops-per-token", ["--layers", "80"]),
    (MFU, "--flops-per-token", ["--model", "llama3-8b"]),
    (MFU, "--flops-per-token", ["--kv-heads", "-8"]),
    (CKPT, "--mtbf-h", ["--gpus", "1024"]),
    (CKPT, "--mtbf-h", ["--nodes", "-3"]),
    (CKPT, "--mtbf-h", ["--failures-per-1000-gpu-days", "2"]),
    (CKPT, "--mtbf-h", ["--gpu", "b200"]),
    (SPOT, "--lost-hours-per-preemption", ["--checkpoint-s", "30"]),
    (SPOT, "--lost-hours-per-preemption", ["--checkpoint-interval-s", "3600"]),
    (SPOT, "--monte-carlo-runs", ["--run-hours", "100"]),
])
def test_a_flag_the_mode_ignores_is_refused_naming_both(argv, mode, extra):
    code, out, err = cli(*argv, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert extra[0] in err and mode in err, err


@pytest.mark.parametrize("extra", [["--kv-heads", "8"], ["--ffn-hidden", "1000"], ["--gated-ffn"]])
def test_shape_flags_beside_a_catalog_model_are_refused(extra):
    code, _, err = cli("flops", "--model", "llama3-8b", *extra)
    assert code == 2 and extra[0] in err and "--model" in err


@pytest.mark.parametrize("argv, flag", [
    ([*SPOT, "--failure-lost-hours", "-1"], "--failure-lost-hours"),
    ([*SPOT, "--run-hours", "nan", "--monte-carlo-runs", "10"], "--run-hours"),
    ([*CKPT, "--restart-s", "-5"], "--restart-s"),
    ([*MFU, "--published", "nan"], "--published"),
])
def test_a_flag_out_of_range_is_refused_even_if_unused(argv, flag):
    code, _, err = cli(*argv)
    assert code == 2 and flag in err, err


def test_a_used_flag_keeps_its_own_narrower_message():
    code, _, err = cli("plan", "--model", "llama3-8b", "--gpus", "16", "--global-batch", "64",
                       "--top=-1")
    assert code == 2 and "top must be in [1, 100], got -1" in err


@pytest.mark.parametrize("argv, flag", [
    # the spot run never finishes: the rate the user typed is named
    (["spot", "--discount", "0.6", "--preemptions-per-day", "48",
      "--lost-hours-per-preemption", "1"], "--preemptions-per-day"),
    (["checkpoint", "--checkpoint-s", "30", "--mtbf-h", "-1"], "--mtbf-h"),
])
def test_every_refusal_names_a_flag_the_user_typed(argv, flag):
    code, _, err = cli(*argv)
    assert code == 2 and flag in err, err


def test_the_flags_the_mode_reads_change_the_answer():
    # each flag accepted with --lost-hours-per-preemption moves the result
    base = cli(*SPOT)[1]
    for extra in (["--restart-h", "0.5"], ["--capacity-wait-h", "1"],
                  ["--failures-per-day", "0.5"]):
        code, out, err = cli(*SPOT, *extra)
        assert code == 0 and out != base, extra
