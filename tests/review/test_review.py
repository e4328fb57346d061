"""The review chain as a whole: the findings of a first review, each checked through the public entry
points (evaluate, `llmcost review`, the apps), with the arithmetic in the comments."""

import json
import math

import pytest

from llmcost import catalog, review
from llmcost.cli import main
from llmcost.economics import reliability as rel
from llmcost.economics import spot, tco
from llmcost.review import ReviewChain, evaluate, stages
from llmcost.scenario import Scenario

HOURS_PER_YEAR = 8760


def run_json(capsys, *argv):
    code = main(list(argv) + ["--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and out.count("\n") == 1
    return json.loads(out)


# ------------------------------------------------------------------ the chain

@pytest.mark.slow
def test_gpus_mode_runs_no_sizing_stage():
    calls = []

    def size(inp):
        calls.append(inp.scenario.sizing)
        return stages.size(inp)

    chain = ReviewChain(size=size)
    chain.run(Scenario(gpus=256))
    chain.run(Scenario(sizing="days", target_days=60))
    assert calls == ["gpus", "days"]
    assert chain.run(Scenario(gpus=256)).size is None


def test_a_stage_is_replaceable():
    # a reliability stage that assumes no failures at all: goodput 1 -> fewer days
    def perfect(inp, pl):
        r = stages.reliability(inp, pl)
        from dataclasses import replace
        return replace(r, goodput=1.0, checkpoint_share=0.0, rework_share=0.0, restart_share=0.0)

    base = evaluate(Scenario())
    ideal = ReviewChain(reliability=perfect).run(Scenario())
    assert ideal.economics.days == pytest.approx(base.economics.days * base.reliability.goodput)


def test_results_are_cached_by_the_frozen_scenario():
    s = Scenario(gpus=512)
    assert evaluate(s) is evaluate(Scenario(gpus=512))
    assert evaluate(s) is not evaluate(Scenario(gpus=256))


def test_user_rows_reach_the_chain():
    cat = catalog.default().with_rows("gpus", [dict(
        id="my-h100", name="H100 at a discount", vendor="nvidia", generation="hopper",
        form_factor="sxm", bf16_dense_tflops=989.4, fp8_dense_tflops=1978.9,
        memory_gib=80, hbm_bandwidth_tb_per_s=3.35, scale_up="nvlink4",
        scale_up_bandwidth_gb_per_s=900, gpus_per_node=8, tdp_w=700)])
    s, warnings = Scenario.from_query("gpu=my-h100&gpus=512", cat)
    assert s.gpu == "my-h100" and warnings == []
    r = evaluate(s, cat)
    ref = evaluate(Scenario(gpus=512))
    # same silicon, same days; no cited price for a user GPU: no cost, and a warning says so
    assert r.economics.days == pytest.approx(ref.economics.days)
    assert r.economics.costs_usd == {} or "on_demand" not in r.economics.costs_usd
    assert any("my-h100" in w for w in r.warnings)


# ------------------------------------------------------------------ findings, before -> after

@pytest.mark.slow
def test_size_case_answers_without_traceback(capsys):
    # before: KeyError 'fits' (economics/sizing.py)
    r = run_json(capsys, "size", "--model", "llama3-405b", "--tokens", "2e12", "--days", "10",
                 "--gpu", "a100-80gb", "--fabric", "roce-400")
    assert r["meets_target"] is False and r["notes"]


def test_review_query_of_the_issue(capsys):
    r = run_json(capsys, "review", "--query",
                 "model=llama3-405b&gpus=16384&gpu=h100-sxm&tokens=15000000000000")
    for key in ("scenario", "days", "gpus", "mfu", "effective_utilization", "fits", "layout",
                "costs_usd", "costs_amortized_usd", "breakeven_months", "spot_net_savings",
                "job_mtbf_h", "checkpoint_interval_s", "goodput", "warnings"):
        assert key in r
    assert r["gpus"] == 16384 and r["fits"] is True
    # Llama 3 on H100: 419 unexpected interruptions in 54 days on 16,384 GPUs = one per
    # 54 x 24 / 419 = 3.09 h; the H100 default reproduces it
    assert r["job_mtbf_h"] == pytest.approx(54 * 24 / 419, rel=0.01)
    # the same numbers as the library, by construction
    s = Scenario(model="llama3-405b", gpus=16384, tokens=15e12)
    assert r["days"] == pytest.approx(evaluate(s).economics.days)


@pytest.mark.slow
def test_review_app_answers_llama3_405b_with_its_real_tokens():
    from llmcost.apps.review_app import ReviewApp
    p = ReviewApp(query="model=llama3-405b&tokens=15000000000000&gpus=16384")
    assert p.last_error is None and p.status.value == ""
    p.set(sizing="days", target_days=10.0)
    assert p.last_error is None and "Could not evaluate" not in p.status.value


def test_reservation_is_billed_for_its_term():
    # before: a 3-year reservation used for a 24-day run was billed for 24 days
    r = evaluate(Scenario(price_source="custom"))
    e = r.economics
    assert e.run_hours < HOURS_PER_YEAR
    # 3 years x 8760 h x billed GPUs x $2.9725 per GPU-hour (AWS p5 3-year, $23.78 / 8)
    commit = 3 * HOURS_PER_YEAR * e.billed_gpus * 23.78 / 8
    assert e.costs_usd["reserved_3y"] == pytest.approx(commit, rel=1e-9)
    assert e.costs_usd["reserved_3y"] > e.costs_usd["on_demand"]
    assert "3-year" in e.commitments["reserved_3y"]
    # amortized at 90% utilization: the run's hours / 0.9
    assert e.costs_amortized_usd["reserved_3y"] == pytest.approx(
        e.run_hours * e.billed_gpus * 23.78 / 8 / 0.9, rel=1e-9)


def test_buying_does_not_win_a_one_month_horizon_by_default():
    # before: resale at book value by default made "buy" win at one month while breakeven
    # said 8.5 months
    r = evaluate(Scenario(horizon_months=1))
    per = r.economics.usd_per_used_gpu_hour
    assert per["on_prem"] > per["on_demand"]
    be = r.economics.breakeven_months
    assert be is not None and be > 1
    # at the breakeven horizon the two cost the same per used GPU-hour (one convention)
    at = evaluate(Scenario(horizon_months=be)).economics.usd_per_used_gpu_hour
    assert at["on_prem"] == pytest.approx(at["on_demand"], rel=1e-6)


def test_breakeven_headline_equals_the_plot_annotation():
    from llmcost import plots
    r = evaluate(Scenario())
    fig = plots.tco_curves(r)
    x = [s.x0 for s in fig.layout.shapes]
    assert x == [r.economics.breakeven_months]


def test_prices_capex_and_power_follow_the_gpu():
    h100 = evaluate(Scenario(gpu="h100-sxm")).inputs
    a100 = evaluate(Scenario(gpu="a100-40gb", fabric="ib-hdr")).inputs
    # the rule's offers: RunPod's $21.52 per 8 H100, AWS p4d's $21.96 per 8 A100 40GB
    assert h100.prices.on_demand == pytest.approx(21.52 / 8)
    assert a100.prices.on_demand == pytest.approx(21.96 / 8)
    assert h100.onprem.power_w_per_gpu == pytest.approx(10_200 / 8)  # DGX H100 10.2 kW
    gb300 = evaluate(Scenario(gpu="gb300", fabric="ib-xdr"))
    # no cited GB300 price: none, with a warning, never H100's
    assert gb300.inputs.prices is None
    assert any("gb300" in w and "price" in w for w in gb300.warnings)
    assert "on_demand" not in gb300.economics.costs_usd


def test_gb200_is_billed_and_fails_per_gpu():
    # before: per-8-GPU-node prices on 4-GPU GB200 nodes billed it twice and doubled its
    # failure rate; now a GB200 and a B200 cluster of the same size at the same custom price
    # per GPU-hour cost the same per GPU-hour and fail at the same rate
    q = dict(price_source="custom", on_demand_usd_per_gpu_hour=5.0, gpus=1024,
             fabric="ib-xdr", model="llama3-8b")
    gb = evaluate(Scenario(gpu="gb200", **q))
    b = evaluate(Scenario(gpu="b200", **q))
    for r in (gb, b):
        e = r.economics
        assert e.costs_usd["on_demand"] == pytest.approx(e.run_hours * 1024 * 5.0)
    assert gb.reliability.job_mtbf_h == pytest.approx(b.reliability.job_mtbf_h)


def test_one_spot_figure():
    # before: spot price and spot discount stored twice (headline 52.9%, cost bar 14.5%)
    r = evaluate(Scenario(price_source="custom", spot_discount=0.6))
    e = r.economics
    assert e.costs_usd["spot"] == pytest.approx(e.costs_usd["on_demand"] * (1 - e.spot.net_savings))
    # an old link with a spot price per node is read as the discount
    s, notes = Scenario.from_query("on_demand_usd_per_node_hour=50&spot_usd_per_node_hour=20")
    assert s.spot_discount == pytest.approx(0.6) and s.on_demand_usd_per_gpu_hour == 6.25
    assert any("old name" in n for n in notes)


def test_implied_lost_hours_inverts_the_review_spot_model():
    r = evaluate(Scenario())
    sp, rl = r.economics.spot, r.reliability
    back = spot.spot_net_savings(spot.SpotMarket(sp.discount, sp.preemptions_per_day, 0.0),
                                 sp.implied_lost_hours,
                                 spot.RunFailures(rl.restart_h, rl.failures_per_day,
                                                  rl.lost_hours_per_interruption))
    assert float(back.net_savings) == pytest.approx(r.scenario.observed_net_savings, abs=1e-9)


def test_spot_loses_what_the_checkpoint_interval_says():
    r = evaluate(Scenario())
    rl, sp = r.reliability, r.economics.spot
    # the spot run checkpoints at Daly's optimum for failures plus preemptions: MTBF
    # 24 / (failures per day + 2.4) h; a preemption loses half of (interval + checkpoint)
    M = 24 * 3600 / (rl.failures_per_day + 2.4)
    tau = float(rel.daly_interval_s(rl.checkpoint_stall_s, M))
    assert sp.checkpoint_interval_s == pytest.approx(tau) and tau < rl.interval_s
    assert sp.lost_hours_source == "from-checkpoints"
    assert sp.lost_hours_per_preemption == pytest.approx((tau + rl.checkpoint_stall_s) / 2 / 3600)
    # a fixed, longer interval loses more per preemption and saves less
    longer = evaluate(Scenario(checkpoint_interval_s=4 * tau)).economics.spot
    assert longer.lost_hours_per_preemption > sp.lost_hours_per_preemption
    assert longer.net_savings < sp.net_savings
    # a small job checkpointed for its rare failures alone would lose more than a day per
    # preemption at 2.4 a day; at the combined rate spot still finishes
    small = evaluate(Scenario(model="llama3-405b", gpus=8, tokens=15e12)).economics.spot
    assert small.offered and small.lost_hours_per_preemption < 24 / 2.4


def test_failure_defaults_reproduce_job_level_measurements():
    # A100 (Kokolis et al. 2025, RSC-1): job MTTF 7.9 h at 1,024 GPUs
    a = evaluate(Scenario(gpu="a100-80gb", fabric="ib-hdr", gpus=1024))
    assert a.reliability.job_mtbf_h == pytest.approx(7.9, rel=0.15)
    # before: 6.5 per 1000 node-days for every GPU gave 28.8 h at 1,024 GPUs
    assert a.reliability.job_mtbf_h < 28.8 / 2


@pytest.mark.slow
def test_sizing_note_agrees_with_the_headline():
    # before: "the fastest (16128 GPUs) takes 231.8 days" next to a headline of 108.8 days
    r = evaluate(Scenario(model="llama3-405b", tokens=15e12, sizing="days", target_days=10))
    assert r.size.meets_target is False
    assert r.flags["meets_target"].level == "infeasible"
    # the size sizing picked is the one planned, and the sizing table's days there are the
    # review's days with the schedule headroom (same layout space, same goodput)
    table = r.size.sizing.table
    row = table[table["gpus"] == r.plan.gpus]
    assert len(row) == 1
    assert float(row["days"].iloc[0]) == pytest.approx(
        r.economics.days * (1 + r.scenario.headroom), rel=1e-9)
    # and the note names the headline's days, as the headline formats them
    shown = review.format_headline("days", r.headline["days"])
    assert any(f"takes {shown} days" in n for n in r.warnings), r.warnings


def test_implausible_headlines_are_flagged():
    # a 162-year run: flagged, not shown as a normal headline
    r = evaluate(Scenario(model="llama3-405b", gpus=8, tokens=15e12))
    assert r.flags["days"].level in ("infeasible", "implausible")
    # a model that does not fit: infeasible, shown in colour by the apps
    assert not r.headline["fits"] and r.flags["fits"].level == "infeasible"


def test_to_json_is_finite_and_matches_the_headline():
    r = evaluate(Scenario())
    j = r.to_json()
    json.dumps(j, allow_nan=False)
    assert j["days"] == r.headline["days"] and j["mfu"] == r.headline["mfu"]
    assert j["costs_usd"]["on_demand"] == r.headline["cost_on_demand_usd"]


def test_tco_headline_equals_the_curves():
    # before: $1.06 per used GPU-hour in the headline, $1.49 on the curves of the same page
    s = Scenario(horizon_months=24, utilization=0.7)
    r = evaluate(s)
    df = review.tco_series(r)
    end = df.iloc[-1]
    used_gpu_hours = 730 * 24 * 0.7 * r.economics.billed_gpus
    for k, per_h in r.economics.usd_per_used_gpu_hour.items():
        assert end["months"] == 24
        assert end[k] / used_gpu_hours == pytest.approx(per_h, rel=1e-9), k


def test_precision_reaches_every_stage(capsys):
    bf16 = evaluate(Scenario(gpus=64))
    fp8 = evaluate(Scenario(gpus=64, precision="fp8"))
    # FP8 GEMMs on H100: faster, by far less than the 2x of the peaks (the rest stays BF16)
    assert 1.0 < bf16.economics.days / fp8.economics.days < 1.76
    assert "FP8" in fp8.plan.layout.description
    # MFU against the BF16 peak in both: the FP8 run's is higher, no sparse-peak finding
    assert fp8.predict.mfu > bf16.predict.mfu
    assert not any("sparsity" in w for w in fp8.warnings)
    # MXFP8 needs Blackwell: refused, naming the setting
    assert main(["review", "--query", "precision=mxfp8", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "precision" in err and "mxfp8" in err


@pytest.mark.slow
def test_a_given_cluster_is_held_to_the_power_limit():
    """Sizing by days keeps within max_power_mw; a given GPU count is checked against it: 16,384
    H100 in DGX systems (10.2 kW per 8 GPUs) at PUE 1.58 draw 16,384 x 1.275 x 1.58 = 33.0 MW,
    above a 20 MW site, and the GPU count is flagged; 1,024 draw 2.06 MW, within it."""
    q = "model=llama3-405b&gpu=h100-sxm&tokens=1.56e13&max_power_mw=20"
    big = evaluate(Scenario.from_query(q + "&gpus=16384")[0])
    mw = 16384 * 10.2 / 8 * 1.58 / 1000
    note = next(w for w in big.warnings if w.startswith("power:"))
    assert f"draw {mw:.3g} MW" in note and "above the 20 MW limit" in note
    assert big.flags["gpus"].level == "infeasible"
    small = evaluate(Scenario.from_query(q + "&gpus=1024")[0])
    assert any(w.startswith("power: 1,024 GPUs draw 2.06 MW") and "within" in w
               for w in small.warnings)
    assert "gpus" not in small.flags
