"""Economics against the seeds' claims, each with its derivation; properties; bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcost import InputError, catalog
from llmcost.economics import reliability as rel
from llmcost.economics import sizing, spot, tco
from llmcost.economics.waterfall import RunLosses, run_waterfall
from llmcost.training.hardware import Hardware

CAT = catalog.default()


# ------------------------------------------------------------------ rent vs buy

def test_seed_breakeven_7_to_8_months():
    # $250k / ($50 x 730 h x 0.9) = 250000 / 32850 = 7.61 months: inside the seed's 7-8.
    m = tco.breakeven_months(50, 250_000, 0.9)
    assert m == pytest.approx(250_000 / (50 * 8760 / 12 * 0.9))
    assert 7 <= m <= 8
    # at the seed's low price, $40: 250000 / 26280 = 9.51 months, outside 7-8.
    assert not 7 <= tco.breakeven_months(40, 250_000, 0.9) <= 8
    # opex delays it: 250000 / (32850 - 2000) = 8.10
    assert tco.breakeven_months(50, 250_000, 0.9, 2000) == pytest.approx(250_000 / 30_850)
    assert np.isinf(tco.breakeven_months(50, 250_000, 0.05, 2000))   # never


def test_seed_decision_rule_buy_at_80_percent_for_12_months():
    # per GPU: $45 / 8 per GPU-hour, $250,000 / 8 of capex, no opex (the seed's comparison)
    prices = tco.CloudPrices(on_demand=45.0 / 8)
    prem = tco.OnPrem(capex_usd_per_gpu=250_000 / 8, network_usd_per_gpu=0, storage_usd_per_gpu=0,
                      power_w_per_gpu=0, space_usd_per_gpu_month=0)
    names, best, _ = tco.decision_map([0.5, 0.8, 0.9], [6, 12, 24], prices, prem)
    buy = names.index("on_prem")
    # 0.8 x 730 x 12 x 45 = $315k > $250k: buy; at 6 months ($158k) or 50% for 12 ($197k): rent
    assert best[1, 1] == buy and best[2, 1] == buy and best[1, 2] == buy
    assert best[0, 1] != buy and best[1, 0] != buy


def test_onprem_costs_by_hand():
    # the node of 8 GPUs below, per GPU: server $300k / 8, network $20k / 8, 10 kW / 8,
    # staff $1,000 / 8 a month
    prem = tco.OnPrem(capex_usd_per_gpu=37_500, network_usd_per_gpu=2_500, storage_usd_per_gpu=0,
                      power_w_per_gpu=1_250, idle_power_share=0.5, pue=1.5, usd_per_kwh=0.10,
                      space_usd_per_gpu_month=0, staff_usd_per_gpu_month=125,
                      maintenance_per_year=0.12)
    # power: 1.25 kW x (0.5 + 0.5 x 0.8) x 1.5 x $0.10 x 730 h = $123.19; maintenance 1% x 40k
    opex = tco.onprem_opex_usd_per_gpu_month(prem, 0.8)
    assert opex == pytest.approx(1.25 * 0.9 * 1.5 * 0.10 * 730 + 125 + 0.01 * 40_000)
    assert opex * 8 == pytest.approx(5_185.5)            # the node's $985.5 + $1,000 + $3,200
    assert tco.onprem_cost_usd(12, prem, 0.8) == pytest.approx(40_000 + 12 * opex)
    # discounting at 10%/year lowers the 12-month opex sum
    assert tco.onprem_cost_usd(12, prem, 0.8, discount_rate=0.1) < tco.onprem_cost_usd(12, prem, 0.8)
    # straight-line to 10% residual over 4 years: after 24 months half the 90% is gone
    assert tco.book_value_usd(24, prem) == pytest.approx(40_000 * (1 - 0.9 * 0.5))


def test_cost_per_useful_gpu_hour():
    # per GPU-hour: on demand $40 / 8 = $5, 1-year reserved $28 / 8 = $3.5
    prices = tco.CloudPrices(on_demand=5.0, reserved_1y=3.5)
    c = tco.cost_per_useful_gpu_hour(12, 0.5, prices, tco.OnPrem())
    assert c["on_demand"] == pytest.approx(40 / 8)           # pay only for used hours
    assert c["reserved_1y"] == pytest.approx(28 / 8 / 0.5)   # pay every hour of the term


@settings(max_examples=60, deadline=None)
@given(st.floats(1, 200), st.floats(1, 200), st.floats(1e4, 1e6), st.floats(0.01, 1.0),
       st.floats(0, 1e4))
@pytest.mark.slow
def test_breakeven_never_rises_with_cloud_price(p1, p2, capex, u, opex):
    lo, hi = sorted((p1, p2))
    assert tco.breakeven_months(hi, capex, u, opex) <= tco.breakeven_months(lo, capex, u, opex)


# ------------------------------------------------------------------ spot

def test_seed_spot_closed_form_52_9_percent():
    # 1 - 0.4 / (1 - 2.4 x 1.5 / 24) = 1 - 0.4 / 0.85 = 0.5294
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 1.5)
    assert r.net_savings == pytest.approx(1 - 0.4 / 0.85)
    assert r.net_savings == pytest.approx(0.529, abs=0.0005)
    assert r.duration_stretch == pytest.approx(1 / 0.85)


def test_seed_22_percent_implies_4_9_hours():
    # 1 - 0.4 / (1 - 0.1 L) = 0.22  ->  L = 10 (1 - 0.4 / 0.78) = 4.872 h
    L = spot.implied_lost_hours(spot.SpotMarket(0.6, 2.4), 0.22)
    assert L == pytest.approx(10 * (1 - 0.4 / 0.78))
    assert L == pytest.approx(4.9, abs=0.05)
    assert spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), L).net_savings == pytest.approx(0.22)
    # spot stops paying at 10 x 0.6 = 6 h per preemption
    assert spot.breakeven_lost_hours(spot.SpotMarket(0.6, 2.4)) == pytest.approx(6.0)


def test_capacity_wait_with_released_nodes_is_unbilled():
    # failures on both runs: tests/test_spot_reliability.py
    # wait with released nodes is unbilled: cost (1 - d)(1 - r W / 24)/(1 - r (w + W)/24)
    r = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4, capacity_wait_h=1.0, billed_share_during_wait=0.0), 1.0)
    assert r.net_savings == pytest.approx(1 - 0.4 * (1 - 0.1) / (1 - 0.2))


@pytest.mark.parametrize("kwargs", [dict(lost_hours_per_preemption=1.5),
                                    dict(checkpoint_interval_h=3.0, restart_h=0.25)])
def test_monte_carlo_mean_matches_closed_form(kwargs):
    failures = spot.RunFailures(restart_h=kwargs.get("restart_h", 0.0))
    mc = spot.spot_monte_carlo(spot.SpotMarket(0.6, 2.4), 24 * 18,
                               kwargs.get("lost_hours_per_preemption"),
                               kwargs.get("checkpoint_interval_h"), failures, runs=100_000, seed=1)
    lost = kwargs.get("lost_hours_per_preemption", kwargs.get("checkpoint_interval_h", 0) / 2)
    closed = spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), lost, failures)
    assert mc.cost_share.mean() == pytest.approx(float(closed.spot_cost_share), rel=0.02)
    assert mc.duration_share.mean() == pytest.approx(float(closed.duration_stretch), rel=0.02)
    p10, p50, p90 = np.percentile(mc.cost_share, [10, 50, 90])
    assert p10 < p50 < p90


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 0.95), st.floats(0, 5), st.floats(0, 4), st.floats(0, 2), st.floats(0, 2),
       st.floats(0, 1))
def test_net_savings_never_exceed_discount(d, r, w, R, W, beta):
    if r * (w + R + W) >= 24:
        return
    assert spot.spot_net_savings(spot.SpotMarket(d, r, W, beta), w, spot.RunFailures(R)).net_savings <= d + 1e-12


# ------------------------------------------------------------------ checkpoints and failures

def test_seed_500_sync_checkpoints_cost_5_to_8_hours():
    # 500 x 30 s = 4.2 h, 500 x 60 s = 8.3 h: the seed's "5-8 h" in round numbers
    hours = 500 * np.array([30, 60]) / 3600
    np.testing.assert_allclose(hours, [4.17, 8.33], atol=0.01)
    # and 500 checkpoints over 18 days means one every 52 min, while Young with the seed's
    # MTBF of 4.7 days and a 45 s stall asks for one every 101 min
    assert 18 * 24 * 60 / 500 == pytest.approx(51.84)
    assert rel.young_interval_s(45, 4.7 * 86400) / 60 == pytest.approx(100.8, abs=0.1)


def test_young_by_hand():
    # delta 60 s, M 24 h: sqrt(2 x 60 x 86400) = 3219.9 s
    assert rel.young_interval_s(60, 86400) == pytest.approx(3219.94, abs=0.01)


def test_daly_by_hand():
    d, M = 60.0, 86400.0
    x = d / (2 * M)
    assert rel.daly_interval_s(d, M) == pytest.approx(np.sqrt(2 * d * M) * (1 + np.sqrt(x) / 3 + x / 9) - d)
    assert rel.daly_interval_s(3 * M, M) == M    # delta >= 2M: checkpoint every M


def test_goodput_first_order_and_optimum():
    d, M = 60.0, 86400.0
    tau = rel.daly_interval_s(d, M)
    g = rel.goodput(tau, d, M, 300)
    # Daly's expected wall time per unit of work, written out: M e^(R/M) (e^((tau+d)/M) - 1) / tau
    assert g == pytest.approx(tau / (M * np.exp(300 / M) * np.expm1((tau + d) / M)), rel=1e-12)
    # and to first order 1 - d/tau - (tau/2 + d + R)/M (second-order terms ~1e-3 here)
    assert g == pytest.approx(1 - d / tau - (tau / 2 + d + 300) / M, abs=2e-3)
    taus = np.linspace(0.3, 3, 200) * tau
    assert abs(taus[np.argmax(rel.goodput(taus, d, M))] / tau - 1) < 0.03   # Daly is the optimum


@settings(max_examples=200, deadline=None)
@given(st.floats(1, 1e7), st.floats(0, 1e5), st.floats(1, 1e8), st.floats(0, 1e5))
def test_goodput_in_unit_interval(tau, d, M, R):
    g = rel.goodput(tau, d, M, R)
    assert 0 < g <= 1


# failure rates against Kokolis's and Llama 3's job-level measurements:
# tests/test_spot_reliability.py


def test_checkpoint_size_and_stall():
    s = rel.checkpoint_size_bytes(70e9)
    assert s == 14 * 70e9   # bf16 weights + fp32 master + Adam m, v
    # 980 GB at 20 GB/s of shared storage: 49 s, inside the seed's 30-60 s
    assert rel.checkpoint_stall_s(s, "sync", nodes=8,
                                  storage=rel.CheckpointStorage(shared_storage_gb_per_s=20)) == pytest.approx(49.0)
    # async to local NVMe on 32 nodes at 5 GB/s each: 980 / 160 = 6.1 s (the seed's 3-5 s
    # needs the write spread over ~50-65 nodes, not "node 0" alone)
    assert rel.checkpoint_stall_s(s, "async", nodes=32,
                                  storage=rel.CheckpointStorage(local_write_gb_per_s=5)) == pytest.approx(6.125)
    assert rel.storage_bandwidth_for_stall_gb_per_s(s, 10) == pytest.approx(98.0)


# ------------------------------------------------------------------ sizing and the ladder

H100, NVL4, NDR = CAT.gpu("h100-sxm"), CAT.fabric("nvlink4"), CAT.fabric("ib-ndr")


def test_ib_vs_roce_18_vs_43_days_does_not_follow():
    # same job, same GPUs: days scale with 1/efficiency. 18 d x 0.98 / 0.71 = 24.8 d, not 43;
    # 43 days would need RoCE at 0.98 x 18 / 43 = 41% efficiency.
    assert sizing.days_from_efficiency(18, 0.98, 0.71) == pytest.approx(24.85, abs=0.01)
    assert sizing.efficiency_from_days(18, 0.98, 43) == pytest.approx(0.410, abs=0.001)
    assert 43 / 18 == pytest.approx(2.39, abs=0.01)   # the ratio the claim implies
    assert 0.98 / 0.71 == pytest.approx(1.38, abs=0.01)   # the ratio the efficiencies give


@pytest.mark.slow
def test_size_cluster_meets_target_above_memory_floor():
    m = CAT.model("llama2-70b")
    S = sizing.size_cluster(m, Hardware(H100, NVL4, NDR), sizing.Target(30, 2e12),
                            usd_per_gpu_hour={"on_demand": 6.88})
    assert S.meets_target and S.days <= 30 and S.gpus >= S.memory_floor_gpus
    assert S.gpus % 8 == 0 and S.nodes * 8 == S.gpus
    # days by hand from the reported MFU: 6N-ish FLOPs / (GPUs x peak x MFU), plus 10% headroom
    assert S.days == pytest.approx(S.total_flops / (S.gpus * 989.4e12 * S.mfu) / 86400 * 1.1, rel=1e-6)
    assert S.cost_usd["on_demand"] == pytest.approx(S.gpus * S.days * 24 * 6.88)
    # the memory floor: on one node nothing fits, on two it does (ZeRO-3 over 16 GPUs)
    assert S.memory_floor_gpus == 16


# random pairs of targets: make test-grid; make test checks the same invariant on a ladder of
# eight targets (tests/economics/test_sizing_ladder.py)
@pytest.mark.grid
@settings(max_examples=8, deadline=None)
@given(st.floats(5, 200), st.floats(5, 200))
def test_more_days_never_need_more_gpus(d1, d2):
    lo, hi = sorted((d1, d2))
    m = CAT.model("llama3-8b")
    hw, site = Hardware(H100, NVL4, NDR), sizing.Facility(max_nodes=256)
    a = sizing.size_cluster(m, hw, sizing.Target(lo, 1e12), site)
    b = sizing.size_cluster(m, hw, sizing.Target(hi, 1e12), site)
    if a.meets_target:
        assert b.gpus <= a.gpus


# the fine-tune ladder and seed 003's claims: tests/test_sizing_ladder.py


# ------------------------------------------------------------------ waterfall

def test_waterfall_multiplies_down_to_effective():
    losses = RunLosses(data_stall_share=0.05, checkpoint_share=0.01, failure_share=0.02,
                       preemption_share=0.0)
    w = run_waterfall(989.4, 0.6, 0.8, losses, flops_per_token=6 * 70e9, usd_per_gpu_hour=6.88)
    final = 989.4 * 0.6 * 0.8 * 0.95 * (1 - 0.03)
    assert w["tflops_per_gpu"].iloc[-1] == pytest.approx(final)
    assert w["tflops_per_gpu"].is_monotonic_decreasing or (np.diff(w["tflops_per_gpu"]) <= 0).all()
    tokens_h = final * 1e12 * 3600 / (6 * 70e9)
    assert w["usd_per_million_tokens"].iloc[-1] == pytest.approx(6.88 / tokens_h * 1e6)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("call,param", [
    (lambda: tco.breakeven_months(-5, 250_000, 0.9), "usd_per_gpu_hour"),
    (lambda: tco.breakeven_months(50, 250_000, 1.2), "utilization"),
    (lambda: tco.breakeven_months(50, 250_000, 0), "utilization"),
    (lambda: spot.spot_net_savings(spot.SpotMarket(1.0, 2.4), 1.5), "discount"),
    (lambda: spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 12), "preemptions_per_day"),
    (lambda: spot.implied_lost_hours(spot.SpotMarket(0.6, 2.4), 0.7), "observed_net_savings"),
    (lambda: rel.young_interval_s(45, 0), "mtbf_s"),
    (lambda: rel.goodput(100, 10, float("nan")), "mtbf_s"),
    (lambda: sizing.size_cluster(CAT.model("llama3-8b"), Hardware(H100, NVL4, NDR),
                                 sizing.Target(0, 1e12)), "target_days"),
    (lambda: tco.OnPrem(pue=0.5), "pue"),
])
def test_bad_input_raises_naming_the_parameter(call, param):
    with pytest.raises(ValueError) as e:
        call()
    assert isinstance(e.value, InputError) and e.value.param == param
