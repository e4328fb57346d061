"""data/serving_measurements.csv (published serving latencies and throughputs with their load
shapes) and benchmarks/serving_check.py, the harness that predicts them."""

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bench_support import benchmark_module

from llmcost import catalog
from llmcost.serving import engines
from llmcost.serving import memory as mem

ROWS = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "serving_measurements.csv",
                   dtype={"engine_version": str})
CAT = catalog.default()
check = benchmark_module("serving_check")


def _set(x) -> bool:
    return not (x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() == "")


def test_every_row_cites_its_source_date_and_printed_text():
    for col in ("source", "as_of", "quote"):
        assert ROWS[col].map(_set).all(), col
    assert ROWS["as_of"].str.fullmatch(r"\d{4}-\d{2}(-\d{2})?").all()


def test_ids_are_unique():
    assert ROWS["id"].is_unique


def test_load_shape_fields_are_consistent():
    assert set(ROWS["load_shape"]) <= {"concurrency", "rate", "burst"}
    for r in ROWS.itertuples():
        assert _set(r.concurrency) == (r.load_shape == "concurrency"), r.id
        assert _set(r.request_rate) == (r.load_shape == "rate"), r.id
        if r.load_shape == "burst":
            assert _set(r.num_prompts), r.id
        if _set(r.num_prompts) and _set(r.concurrency):
            assert r.num_prompts >= r.concurrency, r.id


def test_names_are_the_serving_modules():
    assert set(ROWS["engine"]) <= set(engines.ENGINES)
    for col, choices in (("weights", mem.WEIGHT_CHOICES), ("expert_weights", mem.WEIGHT_CHOICES),
                         ("kv", tuple(mem.KV_FORMATS))):
        assert set(ROWS[col].dropna()) <= set(choices), col
    assert set(ROWS["speculative"]) <= {True, False}
    assert set(ROWS["attention_dp"].dropna()) <= {True, False}


def test_expressible_rows_name_catalog_entries_and_the_others_say_why():
    ok = check.expressible(ROWS)
    models, gpus = set(CAT.ids("models")), set(CAT.ids("gpus"))
    for r in ROWS[ok].itertuples():
        assert r.model in models and r.gpu in gpus, r.id
        assert _set(r.weights) and _set(r.tp), r.id
    assert ROWS.loc[~ok, "not_expressible_because"].map(_set).all()


def test_per_gpu_throughput_is_the_total_over_the_gpus():
    both = ROWS[ROWS["output_tokens_per_s"].notna() & ROWS["gpus"].notna()]
    assert len(both) > 40
    np.testing.assert_allclose(both["output_tokens_per_s_per_gpu"],
                               both["output_tokens_per_s"] / both["gpus"], rtol=1e-4)
    # TensorRT-LLM's B200 R1-0528 run prints both: "Total Output Throughput (tokens/sec):
    # 43146.2042" and "Per GPU Output Throughput (tps/gpu): 5393.2755" on 8 GPUs
    r = ROWS.set_index("id").loc["sp051"]
    assert r.gpus == 8 and r.output_tokens_per_s_per_gpu == pytest.approx(5393.2755, abs=1e-4)


def test_mean_lengths_are_the_printed_totals_over_the_prompts():
    # the cookbook's random lengths sample below the flags; its blocks print the totals
    # (DeepSeek-R1 at concurrency 1: "Total input tokens: 6101; Total generated tokens: 4210"
    # over 10 prompts: 610.1 and 421.0 tokens, not the nominal 1000 and 1000)
    r = ROWS.set_index("id").loc["sp001"]
    assert (r.isl, r.osl, r.num_prompts) == (1000, 1000, 10)
    assert (r.isl_mean, r.osl_mean) == (6101 / 10, 4210 / 10)
    with_means = ROWS[ROWS["isl_mean"].notna()]
    assert len(with_means) == 24
    for r in with_means.itertuples():
        tin = int(re.search(r"Total input tokens: (\d+)", r.quote).group(1))
        tout = int(re.search(r"Total generated tokens: (\d+)", r.quote).group(1))
        assert r.isl_mean == pytest.approx(tin / r.num_prompts, abs=0.05), r.id
        assert r.osl_mean == pytest.approx(tout / r.num_prompts, abs=0.05), r.id
        assert r.isl_mean < r.isl and r.osl_mean < r.osl


def test_enough_expressible_points_from_enough_sources():
    ok = ROWS[check.expressible(ROWS)]
    keys = ok["source"].map(check.source_key)
    assert len(ok) >= 40 and keys.nunique() >= 4
    # the ShareGPT runs (sgl-project/sglang) print no lengths: expressible, not predicted
    assert check.predictable(ROWS).sum() >= 30


def test_source_key_is_the_repository():
    assert check.source_key("github.com/NVIDIA/TensorRT-LLM/blob/abc/docs/x.md §y") == \
        "NVIDIA/TensorRT-LLM"
    assert check.source_key("a paper") == "a paper"


def test_lengths_prefer_the_real_means():
    r = ROWS.set_index("id").loc["sp001"]
    assert check.lengths(r) == (610, 421)
    r = ROWS.set_index("id").loc["sp052"]
    assert check.lengths(r) == (1024, 2048)


def test_load_arguments_per_shape():
    rows = ROWS.set_index("id", drop=False)
    # the cookbook's random dataset: nominal 1,000 tokens, 499.662 on average (its totals);
    # uniform in [a, 1000] with mean m gives a = 2 m - 1000 and a spread (1000 - m) / m
    sp003 = rows.loc["sp003"]
    kw = check.load_kwargs(sp003)
    m_in, m_out = float(sp003["isl_mean"]), float(sp003["osl_mean"])
    assert kw["concurrency"] == 100 and kw["requests"] == 500
    # (at most 0.99: a length is never 0)
    assert kw["length_spread"] == pytest.approx((min((1000 - m_in) / m_in, 0.99),
                                                 min((1000 - m_out) / m_out, 0.99)))
    assert check.load_kwargs(rows.loc["sp041"])["concurrency"] is None
    rate = check.load_kwargs(rows.loc["sp025"])
    assert rate["request_rate"] == 4.0 and rate["requests"] == 1200
    assert rate["concurrency"] is None


def test_harness_on_three_rows_gives_finite_figures():
    rows = ROWS.set_index("id", drop=False).loc[["sp001", "sp021", "sp035"]]
    t = check.errors_table(rows, CAT)
    assert list(t["id"]) == ["sp001", "sp021", "sp035"] and (t["status"] == "predicted").all()
    for k in check.METRICS:
        assert np.isfinite(t[f"{k}_predicted"]).all() and (t[f"{k}_predicted"] > 0).all()
    # the error is predicted / published - 1, as written
    r = t.iloc[0]
    assert r["ttft_ms_error"] == pytest.approx(r["ttft_ms_predicted"] / 153.00 - 1)
    s = check.summary(t)
    assert s["points"].tolist() == [3] and s["ttft_ms_n"].tolist() == [2]


def test_leave_one_source_out_fits_without_the_held_out_source():
    rows = ROWS.set_index("id", drop=False).loc[["sp001", "sp002", "sp033", "sp052"]]
    seen = []

    def fit_fn(train, cat):
        seen.append(set(train["source"].map(check.source_key)))
        return {"sglang": {"step_overhead_s": 0.0}}

    base = check.errors_table(rows, CAT).set_index("id")
    t = check.leave_one_source_out(rows, CAT, fit_fn).set_index("id")
    assert sorted(t.index) == sorted(rows["id"])
    for src, held in zip(sorted(t["held_out"].unique()), seen):
        assert src not in held
    # the override reaches the sglang points only
    assert (t.loc[["sp001", "sp002"], "tpot_ms_predicted"] <
            base.loc[["sp001", "sp002"], "tpot_ms_predicted"]).all()
    for i in ("sp033", "sp052"):
        assert t.loc[i, "output_tokens_per_s_per_gpu_predicted"] == \
            base.loc[i, "output_tokens_per_s_per_gpu_predicted"]


def test_qwen3_32b_row_gives_its_model_card_count():
    # Qwen/Qwen3-32B model card: 32.8B parameters, 31.2B non-embedding (untied head)
    m = CAT.model("qwen3-32b")
    assert m.params / 1e9 == pytest.approx(32.8, rel=0.005)
    body = m.params - m.embedding_params - m.output_params
    assert body / 1e9 == pytest.approx(31.2, rel=0.005)


# the whole table: a fit over every row, as `make validate` runs it (make test-grid)
@pytest.mark.grid
def test_whole_table_runs_and_reports_every_group():
    t = check.errors_table(check.load(), CAT)
    done = t[t["status"] == "predicted"]
    assert len(done) == check.predictable(ROWS).sum()
    for k in check.METRICS:
        assert np.isfinite(done[f"{k}_predicted"]).all()
    for by in check.GROUPS:
        assert check.summary(t, by)["points"].sum() == len(t)
    assert "Mean |error| per load_shape" in check.report()


def test_ttft_floor_is_the_shortest_first_sum_over_uniform_order_statistics():
    from llmcost.serving.latency import mean_ttft_floor_s
    f, L, P = 2e11, 4000.0, 1e15
    # one prompt of mean length L/2, alone: its prefill at peak
    assert math.isclose(float(mean_ttft_floor_s(f, L, 1, 1, P)), f * L / 2 / P)
    # two at once: E[s_(1)] = L/3, E[s_(2)] = 2L/3; shortest first ends at s1 and s1 + s2
    assert math.isclose(float(mean_ttft_floor_s(f, L, 2, 2, P)),
                        (L / 3 + (L / 3 + 2 * L / 3)) / 2 * f / P)
    # the expectation over draws: 64 uniform lengths, shortest first, by simulation
    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(0, L, size=(4000, 64)), axis=1)
    mean_sum = float(np.cumsum(s, axis=1).sum(axis=1).mean()) * f / P
    assert math.isclose(float(mean_ttft_floor_s(f, L, 64, 64, P)) * 64, mean_sum, rel_tol=0.01)
    # the flag allows for the draw: the 0.1% quantile of those sums, as a share of the mean
    sums = np.cumsum(s, axis=1).sum(axis=1)
    assert check.FLOOR_QUANTILE == 0.001
    assert check.floor_draw_share(64) == pytest.approx(
        np.quantile(sums, 0.001) / sums.mean(), abs=0.03)
    assert 0.6 < check.floor_draw_share(64) < 0.72 < check.floor_draw_share(100)


def test_cookbook_70b_a100_mean_ttft_at_64_is_below_what_the_hardware_allows():
    # sp024: 320 prompts up to 8,000 tokens, 64 at once, on 8 x A100 (312 TFLOP/s BF16 each)
    row = ROWS.set_index("id").loc["sp024"].to_dict() | {"id": "sp024"}
    m = CAT.model("llama3-70b")
    f = 2 * (70_553_706_496 - 2 * 1_050_673_152)       # matmul weights, untied embedding
    assert m.active_params == 70_553_706_496 and m.embedding_params == 1_050_673_152
    floor_ms = f * 8000 * 64 * 66 / (6 * 8 * 312e12 * 320) * 1e3
    assert math.isclose(check.ttft_floor_ms(row, CAT), floor_ms, rel_tol=1e-9)
    assert 960 < floor_ms < 970 and row["ttft_ms"] == pytest.approx(633.32)
    # 633 ms is 0.656 of the floor's expectation: under its 0.1% quantile for 64 prompts
    assert row["ttft_ms"] / floor_ms < check.floor_draw_share(64)
    assert check.below_floor(row, CAT)
    table = check.errors_table(ROWS[ROWS["id"].isin(["sp023", "sp024"])], CAT)
    t = table.set_index("id")
    assert math.isnan(t.loc["sp024", "ttft_ms_error"]) and bool(t.loc["sp024", "below_floor"])
    assert not bool(t.loc["sp023", "below_floor"]) and np.isfinite(t.loc["sp023", "ttft_ms_error"])
