"""One interruption model for spot preemptions and failures; failure rates per GPU that
reproduce the published job-level measurements."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmcost import InputError, catalog, cli
from llmcost.economics import reliability as rel
from llmcost.economics import spot

CAT = catalog.default()


# ------------------------------------------------------------------ spot: closed form

def test_seed_closed_form_unchanged_without_failures():
    # 1 - 0.4 / (1 - 2.4 x 1.5 / 24) = 1 - 0.4 / 0.85 = 0.52941
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 1.5, spot.RunFailures(failures_per_day=0.0))
    assert r.net_savings == pytest.approx(0.529412, abs=1e-6)


def test_spot_run_fails_too():
    # Failures alone (no preemptions) hit both runs alike: spot cost (1 - d)/f_o against
    # on-demand 1/f_o, so spot saves exactly its discount. The pre-issue-8 model charged the
    # failures to on-demand only and gave 1 - 0.4 x (1 - 0.5 x 1.5 / 24) = 0.6125 here.
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 0.0), 1.5, spot.RunFailures(failures_per_day=0.5))
    assert r.net_savings == pytest.approx(0.6, abs=1e-12)
    assert r.duration_stretch == pytest.approx(1.0)


def test_preemptions_and_failures_by_hand():
    # d 0.6, r 2.4/day, w 1.5 h, r_f 0.5/day losing the same 1.5 h, R = W = 0:
    # f_s = 1 - (2.4 x 1.5 + 0.5 x 1.5) / 24 = 1 - 4.35 / 24 = 0.81875
    # f_o = 1 - 0.5 x 1.5 / 24 = 0.96875
    # S = 1 - 0.4 x 0.96875 / 0.81875 = 0.526718
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 1.5, spot.RunFailures(failures_per_day=0.5))
    assert r.net_savings == pytest.approx(0.526718, abs=1e-6)
    assert r.duration_stretch == pytest.approx(0.96875 / 0.81875)
    assert r.on_demand_cost_share == pytest.approx(1 / 0.96875)
    # restart 0.5 h after every interruption, and a wait of 1 h per preemption with all
    # nodes released (beta 0):
    # f_s = 1 - (2.4 x (1.5 + 0.5 + 1) + 0.5 x (1.5 + 0.5)) / 24 = 1 - 8.2 / 24 = 0.658333
    # f_o = 1 - 0.5 x 2 / 24 = 0.958333;  b_s = 1 - 2.4 x 1 / 24 = 0.9
    # S = 1 - 0.4 x 0.9 x 0.958333 / 0.658333 = 0.475949
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4, 1.0, 0.0), 1.5,
                               spot.RunFailures(0.5, failures_per_day=0.5))
    assert r.net_savings == pytest.approx(0.475949, abs=1e-6)


def test_old_keyword_still_accepted_with_a_warning():
    with pytest.warns(DeprecationWarning):
        old = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 1.5, on_demand_failures_per_day=0.5)
    assert old.net_savings == pytest.approx(0.526718, abs=1e-6)


# ------------------------------------------------------------------ spot: exact inverse

def test_seed_22_percent_implies_4_87_hours():
    # 1 - 0.4 / (1 - 0.1 w) = 0.22  ->  w = 10 (1 - 0.4 / 0.78) = 4.8718 h
    assert spot.implied_lost_hours(spot.SpotMarket(0.6, 2.4), 0.22) == pytest.approx(4.8718, abs=1e-4)
    assert spot.breakeven_lost_hours(spot.SpotMarket(0.6, 2.4)) == pytest.approx(6.0)   # 10 x 0.6


_args = st.tuples(
    st.floats(0, 0.95),            # discount
    st.floats(0.01, 20),           # preemptions per day
    st.floats(0, 1),               # share of the remaining day budget spent on w
    st.floats(0, 5),               # restart h
    st.floats(0, 10),              # capacity wait h
    st.floats(0, 1),               # billed share during wait
    st.floats(0, 5),               # failures per day
    st.one_of(st.none(), st.floats(0, 10)))   # failure lost hours (None: as w)


@settings(max_examples=400, deadline=None)
@given(_args)
@pytest.mark.slow
def test_implied_lost_hours_is_the_exact_inverse(args):
    d, r, share, R, W, beta, rf, wf = args
    # keep both runs finishable: spend at most 95% of a day's budget
    base = r * (R + W) + rf * (R + (wf or 0.0))
    assume(base < 0.9 * 24)
    per_w = r + (rf if wf is None else 0.0)
    w = share * 0.95 * (24 - base) / per_w
    market = spot.SpotMarket(d, r, capacity_wait_h=W, billed_share_during_wait=beta)
    failures = spot.RunFailures(restart_h=R, failures_per_day=rf, failure_lost_hours=wf)
    S = float(spot.spot_net_savings(market, w, failures).net_savings)
    back = spot.implied_lost_hours(market, S, failures)
    assert float(spot.spot_net_savings(market, back, failures).net_savings) == pytest.approx(
        S, rel=1e-9, abs=1e-9)
    assert back == pytest.approx(w, rel=1e-6, abs=1e-6)


def test_inverse_vectorized_and_breakeven_uses_the_same_terms():
    market = spot.SpotMarket(0.6, 2.4, capacity_wait_h=0.5, billed_share_during_wait=0.3)
    failures = spot.RunFailures(restart_h=0.25, failures_per_day=0.4)
    S = np.array([0.1, 0.2, 0.3])
    w = spot.implied_lost_hours(market, S, failures)
    assert w.shape == (3,) and np.all(np.diff(w) < 0)   # more saving, less work lost
    np.testing.assert_allclose(spot.spot_net_savings(market, w, failures).net_savings, S,
                               atol=1e-12)
    w0 = spot.breakeven_lost_hours(market, failures)
    assert spot.spot_net_savings(market, w0, failures).net_savings == pytest.approx(0, abs=1e-12)


def test_inverse_refuses_a_saving_no_lost_hours_give():
    # with a 1 h restart at 2.4/day, even w = 0 leaves 1 - 0.4 / 0.9 = 0.556: 0.58 is out
    with pytest.raises(InputError) as e:
        spot.implied_lost_hours(spot.SpotMarket(0.6, 2.4), 0.58, spot.RunFailures(restart_h=1.0))
    assert e.value.param == "observed_net_savings" and "0.5556" in str(e.value)


# ------------------------------------------------------------------ spot: Monte Carlo

@pytest.mark.parametrize("market,kwargs", [
    ((0.6, 2.4), dict(lost_hours_per_preemption=1.5, restart_h=0.25, failures_per_day=0.5)),
    ((0.6, 2.4, 1.0, 0.2), dict(lost_hours_per_preemption=1.0, failures_per_day=0.3,
                                failure_lost_hours=2.0)),
    ((0.6, 2.4), dict(checkpoint_interval_h=3.0, restart_h=0.25, failures_per_day=0.5))])
def test_monte_carlo_with_failures_matches_closed_form(market, kwargs):
    # Wald: the mean stretched duration is exactly the closed form's, so 100k runs agree
    # within sampling error (per-run cost sd ~2%, /sqrt(1e5) ~ 0.01%): 0.5% is generous
    # but catches a failure term left out (~3% here).
    kw = dict(kwargs)
    fixed, interval = kw.pop("lost_hours_per_preemption", None), kw.pop("checkpoint_interval_h", None)
    failures = spot.RunFailures(**kw)
    mc = spot.spot_monte_carlo(spot.SpotMarket(*market), 24 * 18, fixed, interval, failures,
                               runs=100_000, seed=3)
    w = fixed if fixed is not None else interval / 2
    closed = spot.spot_net_savings(spot.SpotMarket(*market), w, failures)
    assert mc.cost_share.mean() == pytest.approx(float(closed.spot_cost_share), rel=0.005)
    assert mc.failures.sum() > 0
    # spot wall time per ideal hour is 1 / f_s = (f_o / f_s) x (1 / f_o)
    inv_fs = float(closed.duration_stretch) * float(closed.on_demand_cost_share)
    assert mc.duration_share.mean() == pytest.approx(inv_fs, rel=0.005)


def test_monte_carlo_runs_capped():
    with pytest.raises(InputError) as e:
        spot.spot_monte_carlo(spot.SpotMarket(0.6, 2.4), 100, lost_hours_per_preemption=1, runs=10_000_001)
    assert e.value.param == "runs"


# ------------------------------------------------------------------ lost work per interruption

def test_lost_hours_from_checkpoint_interval():
    # segments of 1800 s compute + 30 s checkpoint: half a segment, 915 s = 0.25417 h
    assert rel.lost_hours_per_interruption(1800, 30) == pytest.approx(915 / 3600)


def test_spot_and_goodput_charge_an_interruption_alike():
    # Preemptions at r = 0.24/day -> M = 100 h = 360,000 s; tau 1800 s, delta 600 s, R 600 s.
    # Spot: w = (1800 + 600)/2 s = 1200 s, lost share y = r (w + R)/24 = 1800 / 360000 = 0.005.
    # Goodput: F = M e^(R/M) (e^(a/M) - 1)/a with a = tau + delta, so
    # ln F = (R + a/2)/M + (a/M)^2/24 + ... = y + 3.7e-6 and the failure share
    # 1 - 1/F = y - y^2/2 + ...: relative difference -y/2 = -0.25%.
    M, tau, d, R = 360_000.0, 1800.0, 600.0, 600.0
    r = 24 * 3600 / M
    w = rel.lost_hours_per_interruption(tau, d)
    y = r * (w + R / 3600) / 24
    assert y == pytest.approx(0.005)
    b = rel.goodput_breakdown(tau, d, M, R)
    rel_diff = (b.rework_share + b.restart_share) / y - 1
    assert rel_diff == pytest.approx(-y / 2, abs=y / 10)
    # a rework of tau/2 + delta (1500 s) or tau/2 (900 s) would miss by +-1/6: a large delta
    # makes the test tell them apart
    assert abs(r * ((tau / 2 + d) / 3600 + R / 3600) / 24 / y - 1) == pytest.approx(1 / 6)
    # and the useful share the spot model gives matches goodput's share lost to failures
    assert spot.useful_share(r, w + R / 3600) == pytest.approx(
        1 - b.rework_share - b.restart_share, abs=y ** 2)


@settings(max_examples=200, deadline=None)
@given(st.floats(1, 1e6), st.floats(0, 1e4), st.floats(10, 1e8), st.floats(0, 1e4))
def test_goodput_breakdown_adds_up(tau, d, M, R):
    b = rel.goodput_breakdown(tau, d, M, R)
    total = b.goodput + b.checkpoint_share + b.rework_share + b.restart_share
    assert total == pytest.approx(1.0, abs=1e-9)
    assert min(b.checkpoint_share, b.rework_share, b.restart_share) >= 0


# ------------------------------------------------------------------ failure rates

def test_hopper_default_reproduces_llama3_interruptions():
    # Llama 3: 419 unexpected interruptions in 54 days on 16,384 H100, "one per ~3.1 h";
    # 54 x 24 / 419 = 3.093 h.
    fr = CAT.default_failure_rate("hopper")
    assert fr.id == "llama3-h100-jobs" and fr.note == ""
    mtbf = rel.mtbf_h(rel.job_failures_per_day(16384, fr.failures_per_1000_gpu_days))
    assert mtbf == pytest.approx(3.1, rel=0.01)
    assert mtbf == pytest.approx(54 * 24 / 419, rel=1e-3)


def test_ampere_default_reproduces_kokolis_large_jobs_and_states_the_small_job_error():
    # Kokolis et al.: job MTTF 7.9 h at 1,024 A100 (printed to 0.1 h: +-0.6%), 47.7 days at 8.
    fr = CAT.default_failure_rate("ampere")
    assert fr.id == "kokolis-a100-jobs" and "all causes" in fr.counts
    at_1024 = rel.mtbf_h(rel.job_failures_per_day(1024, fr.failures_per_1000_gpu_days))
    assert at_1024 == pytest.approx(7.9, rel=0.006)
    # the same per-GPU rate at 8 GPUs: 1000 / (8 x 2.967) = 42.1 days, 11.7% short of 47.7
    # (job MTTF falls faster than 1/N; the rate is fitted to the large jobs reviews size)
    at_8_days = rel.mtbf_h(rel.job_failures_per_day(8, fr.failures_per_1000_gpu_days)) / 24
    assert at_8_days / 47.7 - 1 == pytest.approx(-0.117, abs=0.005)
    # the preset fitted to the small jobs hits 47.7 days instead
    small = CAT.failure_rate("kokolis-a100-small-jobs")
    assert rel.mtbf_h(rel.job_failures_per_day(8, small.failures_per_1000_gpu_days)) / 24 == \
        pytest.approx(47.7, rel=1e-3)


def test_node_hardware_presets_from_kokolis_node_rates():
    # 6.50 and 2.34 node failures per 1000 node-days, 8 A100 per node
    assert CAT.failure_rate("kokolis-rsc1-node-hw").failures_per_1000_gpu_days == \
        pytest.approx(float(rel.gpu_rate_from_node_rate(6.50, 8)))
    assert CAT.failure_rate("kokolis-rsc2-node-hw").failures_per_1000_gpu_days == \
        pytest.approx(float(rel.gpu_rate_from_node_rate(2.34, 8)))
    hw = CAT.failure_rate("kokolis-rsc1-node-hw")
    assert "hardware" in hw.counts
    # 128 nodes: 1 / (128 x 6.5 / 1000) days = 28.85 h, 3.6x the job-level 7.9 h
    mtbf = rel.mtbf_h(rel.job_failures_per_day(1024, hw.failures_per_1000_gpu_days))
    assert mtbf == pytest.approx(28.85, abs=0.01)
    assert mtbf / 7.9 == pytest.approx(3.65, abs=0.01)


@pytest.mark.parametrize("gen", ["blackwell", "cdna3", "ada", "unknown", None])
def test_generations_without_a_measurement_fall_back_to_hopper_with_a_note(gen):
    fr = CAT.default_failure_rate(gen)
    assert fr.id == "llama3-h100-jobs"
    assert "no published job-level failure rate" in fr.note


def test_every_catalog_gpu_generation_gets_a_rate():
    for gen in set(CAT.gpus()["generation"]):
        assert CAT.default_failure_rate(gen).failures_per_1000_gpu_days > 0


def test_failure_rate_rows_say_what_they_count():
    t = catalog.failure_rates()
    assert {"llama3-h100-jobs", "kokolis-a100-jobs", "kokolis-rsc1-node-hw",
            "kokolis-rsc2-node-hw"} <= set(t["id"])
    assert t["counts"].str.len().gt(0).all()
    assert t["notes"].str.startswith("derived").all()   # every shipped rate is derived
    claims = t["default_for"].dropna()
    assert not claims.duplicated().any()


def test_user_row_overrides_a_default_and_unknown_preset_named():
    cat = CAT.with_rows("failure_rates", [dict(
        id="my-h100", generation="hopper", failures_per_1000_gpu_days=1.0,
        counts="job interruptions, all causes", default_for="hopper")])
    assert cat.default_failure_rate("hopper").id == "my-h100"
    assert CAT.default_failure_rate("hopper").id == "llama3-h100-jobs"   # shipped untouched
    with pytest.raises(InputError) as e:
        CAT.failure_rate("llama3")
    assert e.value.param == "failure_rate"


def test_failure_rate_per_gpu_not_per_node():
    # a 72-GPU job fails as often on 18 four-GPU trays as on 9 eight-GPU nodes
    rate = CAT.default_failure_rate("hopper").failures_per_1000_gpu_days
    assert rel.job_failures_per_day(72, rate) == pytest.approx(72 * 0.4736 / 1000)


# ------------------------------------------------------------------ published runs vs peaks

def test_published_tflops_over_catalog_peak_equals_printed_percent():
    # Each row printing both TFLOP/s per GPU and % of peak: TFLOP/s / the GPU's dense BF16
    # peak in gpus.csv must round to the printed percentage. Resolution: Narayanan Table 1
    # prints TFLOP/s to 1 and % to 1%; Llama 3 Table 4 prints TFLOP/s to 10 (430, 400, 380)
    # and MFU to 1%. A wrong peak (e.g. the sparse 1979 for H100) or a mistyped row fails.
    runs = catalog.published_runs()
    both = runs.dropna(subset=["achieved_tflops_per_gpu", "pct_of_peak"])
    assert len(both) >= 13
    for _, row in both.iterrows():
        peak = CAT.gpu(row["gpu"]).bf16_dense_tflops
        t = float(row["achieved_tflops_per_gpu"])
        half_t = 5.0 if "2407.21783" in row["source"] else 0.5
        lo, hi = (t - half_t) / peak, (t + half_t) / peak
        pct = float(row["pct_of_peak"])
        assert lo - 0.005 <= pct <= hi + 0.005, (row["id"], t / peak, pct)


# ------------------------------------------------------------------ command line

def _run(capsys, *args):
    assert cli.main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_checkpoint_per_gpu_and_old_node_flags(capsys):
    r = _run(capsys, "checkpoint", "--checkpoint-s", "45", "--gpus", "16384")
    assert r["mtbf_h"] == pytest.approx(3.093, abs=0.001)          # hopper default
    assert r["failure_rate"]["id"] == "llama3-h100-jobs"
    r = _run(capsys, "checkpoint", "--checkpoint-s", "45", "--nodes", "128",
             "--node-failures-per-1000-node-days", "6.5")
    assert r["mtbf_h"] == pytest.approx(28.85, abs=0.01)           # 1 / (128 x 6.5/1000) d
    r = _run(capsys, "checkpoint", "--checkpoint-s", "45", "--gpus", "1024", "--gpu", "a100-80gb")
    assert r["mtbf_h"] == pytest.approx(7.9, rel=0.006)
    r = _run(capsys, "checkpoint", "--checkpoint-s", "45", "--gpus", "1024", "--gpu", "b200")
    assert any("blackwell" in w for w in r["warnings"])


def test_cli_spot_lost_work_from_checkpoint_interval(capsys):
    r = _run(capsys, "spot", "--discount", "0.6", "--preemptions-per-day", "2.4",
             "--checkpoint-interval-s", "1800", "--checkpoint-s", "30")
    # w = 915 s = 0.25417 h: 1 - 0.4 / (1 - 0.1 x 0.25417) = 0.58957
    assert r["lost_hours_per_preemption"] == pytest.approx(915 / 3600)
    assert r["net_savings"] == pytest.approx(0.58957, abs=1e-5)
    r = _run(capsys, "spot", "--discount", "0.6", "--preemptions-per-day", "2.4",
             "--lost-hours-per-preemption", "1.5", "--failures-per-day", "0.5")
    assert r["net_savings"] == pytest.approx(0.526718, abs=1e-6)


def test_cli_spot_refuses_too_many_runs(capsys):
    assert cli.main(["spot", "--discount", "0.6", "--preemptions-per-day", "2.4",
                     "--lost-hours-per-preemption", "1", "--monte-carlo-runs", "20000000"]) == 2
    assert "runs" in capsys.readouterr().err


def test_days_to_train_is_tokens_over_useful_throughput():
    # 1e12 tokens at 1e6 tokens/s is 1e6 s of training; half the wall time useful doubles it
    assert rel.days_to_train(1e12, 1e6, 0.5) == pytest.approx(2e6 / 86400, rel=1e-15)
    got = rel.days_to_train(np.array([1e12, 2e12]), 1e6, np.array([1.0, 0.8]))
    np.testing.assert_allclose(got, [1e6 / 86400, 2e6 / 0.8 / 86400], rtol=1e-15)
    for bad in (dict(tokens_per_s=0.0), dict(useful_share=0.0), dict(useful_share=1.2)):
        with pytest.raises(InputError) as e:
            rel.days_to_train(**{"tokens": 1e12, "tokens_per_s": 1e6, **bad})
        assert e.value.param == next(iter(bad))
