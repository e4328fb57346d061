"""The realized ratio (llmcost.economics.realized): comparison groups, their fall-back, their
statistics; data/realized_runs.csv against data/whole_runs.csv and the review's own floors."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.economics import realized as rz

ROOT = Path(__file__).resolve().parents[2]


def runs(rows):
    """A realized-runs table from (id, stack, moe, params, ratio[, fitted])."""
    out = []
    for r in rows:
        i, stack, moe, params, ratio, *rest = r
        out.append({"id": i, "stack": stack, "moe": moe, "params": params, "ratio": ratio,
                    "fitted": rest[0] if rest else True, "source": f"paper of {i}"})
    return pd.DataFrame(out)


def test_size_classes_split_at_20b_and_100b():
    assert rz.size_class(7e9) == "<20B"
    assert rz.size_class(19.99e9) == "<20B" and rz.size_class(20e9) == "20-100B"
    assert rz.size_class(99.9e9) == "20-100B" and rz.size_class(100e9) == ">100B"
    with pytest.raises(InputError) as e:
        rz.size_class(0)
    assert e.value.param == "params"


def test_prediction_band_is_log_normal_about_the_median():
    # z = inverse normal CDF at 0.90 = 1.2815516 (standard tables); n = 3 runs:
    # half-width = 1.2815516 * 0.3 * sqrt(1 + 1/3) = 0.443943
    lo, hi = rz.prediction_band(1.2, 0.3, 3)
    assert lo == pytest.approx(1.2 * np.exp(-0.443943), rel=1e-5)
    assert hi == pytest.approx(1.2 * np.exp(0.443943), rel=1e-5)
    # more runs, a better-known median: narrower, never below the spread itself
    lo8, hi8 = rz.prediction_band(1.2, 0.3, 8)
    assert hi8 / lo8 < hi / lo
    assert hi8 / lo8 > np.exp(2 * 1.2815516 * 0.3)
    assert rz.prediction_band(1.2, 0.0, 3) == (1.2, 1.2)
    for param, bad in (("value", (0, 0.3, 3)), ("log_sd", (1.0, -0.1, 3)),
                       ("runs", (1.0, 0.3, 0))):
        with pytest.raises(InputError) as e:
            rz.prediction_band(*bad)
        assert e.value.param == param


def test_pooled_spread_compares_each_run_with_the_others_median():
    # four runs of one group, ratios 1, 2, 4, 8: each against the median of the other three
    # 1 vs 4, 2 vs 4, 4 vs 2, 8 vs 2 -> ln-residuals (-2, -1, 1, 2) x ln 2
    t = runs([(c, "megatron", False, 7e9, r) for c, r in zip("abcd", (1.0, 2.0, 4.0, 8.0))])
    assert rz.pooled_log_sd(t, stack_named=True) == pytest.approx(np.log(2) * np.sqrt(2.5))
    # leaving d out: 1 vs median(2, 4) = 3, 2 vs 2.5, 4 vs 1.5 (each from two runs: a group
    # of two falls back to everything, which is the same two runs here)
    expect = np.sqrt(np.mean(np.square(np.log([1 / 3, 2 / 2.5, 4 / 1.5]))))
    assert rz.pooled_log_sd(t, stack_named=True, exclude=["d"]) == pytest.approx(expect)
    assert rz.pooled_log_sd(t.iloc[:1], stack_named=True) == 0.0


TABLE = runs([
    ("a", "megatron", False, 7e9, 1.0), ("b", "megatron", False, 8e9, 1.2),
    ("c", "megatron", False, 13e9, 1.4), ("d", "fsdp", False, 7e9, 2.0),
    ("e", "megatron", False, 70e9, 1.1), ("f", "megatron", True, 400e9, 0.9),
    ("g", "fsdp", False, 3e9, 9.0, False),        # listed, never used
])


def test_own_group_when_it_has_three_runs():
    rr = rz.realized_ratio(TABLE, stack="megatron", moe=False, params=7e9)
    assert rr.group == ("megatron", "dense", "<20B") and rr.runs == 3
    assert rr.value == 1.2 and rr.fallback == ""
    assert rr.run_ids == ("a", "b", "c")
    # the band: the pooled spread of the table (stack named), about this group's median
    sd = rz.pooled_log_sd(TABLE, stack_named=True)
    assert rr.log_sd == sd > 0
    assert rr.band == pytest.approx(rz.prediction_band(1.2, sd, 3))
    assert rr.label == "megatron, dense, <20B (3 published runs)"


def test_no_stack_named_pools_every_stack():
    rr = rz.realized_ratio(TABLE, stack=None, moe=False, params=7e9)
    # a, b, c (megatron) and d (fsdp); g is not fitted
    assert rr.group == (None, "dense", "<20B") and rr.run_ids == ("a", "b", "c", "d")
    assert rr.value == pytest.approx(1.3)
    assert rr.band == pytest.approx(rz.prediction_band(1.3, rz.pooled_log_sd(
        TABLE, stack_named=False), 4))


def test_fall_back_drops_size_then_stack_then_kind():
    # fsdp dense <20B has one run (d): drop the size -> fsdp dense (1 run) -> any dense (5)
    rr = rz.realized_ratio(TABLE, stack="fsdp", moe=False, params=7e9)
    assert rr.group == (None, "dense", None) and rr.runs == 5
    assert "fewer than 3 published runs in fsdp, dense, <20B" == rr.fallback
    # megatron dense 20-100B has one run (e): megatron dense has 4
    rr = rz.realized_ratio(TABLE, stack="megatron", moe=False, params=70e9)
    assert rr.group == ("megatron", "dense", None) and rr.runs == 4
    # MoE: one run of any stack: everything used (6 runs)
    rr = rz.realized_ratio(TABLE, stack=None, moe=True, params=400e9)
    assert rr.group == (None, None, None) and rr.runs == 6
    assert rr.group_label == "any stack, dense and MoE"


def test_leave_one_out_excludes_the_run():
    rr = rz.realized_ratio(TABLE, stack="megatron", moe=False, params=7e9, exclude=["a"])
    # two runs left in the own group: falls back to megatron dense (b, c, e)
    assert rr.group == ("megatron", "dense", None) and rr.run_ids == ("b", "c", "e")
    assert rr.value == 1.2


def test_no_run_at_all_is_the_floor_with_no_band():
    rr = rz.realized_ratio(TABLE.iloc[:0], stack=None, moe=False, params=7e9)
    assert rr is rz.NO_RUNS and (rr.value, rr.band, rr.runs) == (1.0, (1.0, 1.0), 0)


# ------------------------------------------------------------------ the shipped table

SHIPPED = catalog.default().realized_runs()
WHOLE = pd.read_csv(ROOT / "data" / "whole_runs.csv")


def test_every_whole_run_is_in_the_realized_table_with_its_hours():
    w = WHOLE.set_index("id")
    assert set(SHIPPED["id"]) <= set(w.index)
    for _, r in SHIPPED.iterrows():
        assert r["published_gpu_hours"] == w.loc[r["id"], "published_gpu_hours"]
        assert r["ratio"] == pytest.approx(r["published_gpu_hours"] / r["floor_gpu_hours"],
                                           rel=1e-3)
        assert r["source"] == w.loc[r["id"], "source"]


def test_runs_covering_more_than_one_pre_training_run_are_never_used():
    # the Llama 3.1 model card counts "the total GPU time required for training each model"
    fitted = SHIPPED.set_index("id")["fitted"]
    for run_id in ("llama3.1-8b", "llama3.1-70b"):
        assert not rz._truthy(fitted[run_id])
    used = rz.fitted_runs(SHIPPED)
    assert not set(used["id"]) & {"llama3.1-8b", "llama3.1-70b"}
    # approximate hours are listed, never used
    approx = WHOLE.loc[WHOLE["hours_status"] == "approximate", "id"]
    assert not set(used["id"]) & set(approx)


@pytest.mark.slow
def test_the_table_holds_the_floors_the_review_computes_today():
    # data/realized_runs.csv is written by `make validate WRITE=1` from the review's floors:
    # a change to the step model that moves a floor must rewrite it (the forecast would
    # otherwise multiply a new floor by ratios of the old one)
    from bench_support import whole_runs_table
    res = whole_runs_table()[0].set_index("id")
    for _, r in SHIPPED.iterrows():
        assert res.loc[r["id"], "floor_gpu_hours"] == pytest.approx(r["floor_gpu_hours"],
                                                                     rel=1e-3), r["id"]
