"""Rent or buy per GPU: cash cost of a run, commitments, resale, discounting, curves, breakeven.

Published inputs (REFERENCES.md section 8): AWS p5.48xlarge (8x H100) $55.04/h on demand,
3-year reserved $23.78/h, spot $30.24/h; 8x H100 server $250k; DGX H100 10.2 kW; PUE 1.58;
8.06 cents/kWh; "H100 Freakonomics" (Aug 2024): 64-port switch $36k, 48 switches and
$2,621,440 of cables for 1,024 H100, facility and operations $50k per node over life.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcost import InputError, catalog
from llmcost.economics import tco
from llmcost.training.hardware import GPUSpec

# AWS p5 per GPU-hour: instance price / 8 GPUs
OD, R3, SPOT = 55.04 / 8, 23.78 / 8, 30.24 / 8          # 6.88, 2.9725, 3.78
P5 = tco.CloudPrices(on_demand=OD, reserved_3y=R3, spot=SPOT)
RUN_H = 24 * 24                                          # a 24-day run
GPUS = 1024
OPTIONS_ALL = ("on_demand", "reserved_3y", "spot", "on_prem")


def bare(capex, opex_per_month=0.0, **kw):
    """An OnPrem whose capex per GPU is exactly ``capex`` and whose opex is flat."""
    return tco.OnPrem(capex_usd_per_gpu=capex, network_usd_per_gpu=0, storage_usd_per_gpu=0,
                      power_w_per_gpu=0, space_usd_per_gpu_month=opex_per_month, **kw)


# ------------------------------------------------------------------ defaults

def test_onprem_defaults_are_the_cited_derivations():
    d = tco.OnPrem()
    assert d.capex_usd_per_gpu == 31_250                 # $250,000 / 8
    # two-tier fat tree: 48 switches x 64 ports / 1,024 GPUs = 3 ports per GPU;
    # 3 x $36,000 / 64 = $1,687.50 of switch, + $2,621,440 / 1,024 = $2,560 of cables
    assert d.network_usd_per_gpu == pytest.approx(1_687.5 + 2_560)
    assert d.power_w_per_gpu == pytest.approx(1_275)     # 10.2 kW / 8
    # facility and operations: $50,000 per node / 8 GPUs / 48 months = $130.21 per GPU-month
    assert d.space_usd_per_gpu_month == pytest.approx(130.208, abs=0.001)
    assert d.capex_usd == pytest.approx(31_250 + 4_247.5 + 1_000)
    # all-in with the life's facility ($6,250) sits below Freakonomics' $47k-52k, which
    # prices the server at $310k instead of $250k: 36,497.5 + 6,250 = 42,747.5
    assert d.capex_usd + d.space_usd_per_gpu_month * 48 == pytest.approx(42_747.5)
    # opex at full use: 1.275 kW x 1.58 x $0.0806 x 730 h = $118.53 power + $130.21
    assert tco.onprem_opex_usd_per_gpu_month(d, 1.0) == pytest.approx(118.529 + 130.208, abs=0.01)


# ------------------------------------------------------------------ cash cost of one run

def test_three_year_reservation_for_a_24_day_run_commits_three_years():
    # ceil(576 h / 26,280 h) = 1 term of 3 years: 3 x 8,760 x 1,024 x $2.9725 = $79,992,115.2
    c = tco.run_costs_usd(RUN_H, GPUS, P5, tco.OnPrem())
    assert c["reserved_3y"] == pytest.approx(79_992_115.2)
    assert c["reserved_3y"] == pytest.approx(79.99e6, rel=1e-4)
    # the finding: billed for 24 days it looked like $1.75M, 45.7x less
    assert c["reserved_3y"] / (RUN_H * GPUS * R3) == pytest.approx(26_280 / 576)
    assert tco.reservation_commitment_usd(RUN_H, R3, GPUS, 3) == c["reserved_3y"]


def test_reservation_bills_whole_terms():
    # a 400-day run on a 1-year term: ceil(9,600 / 8,760) = 2 terms = 17,520 h x 8 x $4
    assert tco.reservation_commitment_usd(400 * 24, 4.0, 8, 1) == pytest.approx(17_520 * 8 * 4)
    # exactly one year: one term
    assert tco.reservation_commitment_usd(8_760, 4.0, 8, 1) == pytest.approx(8_760 * 8 * 4)
    assert tco.reservation_commitment_usd(0, 4.0, 8, 1) == 0


@settings(max_examples=80, deadline=None)
@given(st.floats(1, 60_000), st.integers(1, 20_000), st.floats(0.5, 20), st.sampled_from([1, 3]))
def test_reservation_never_below_its_commitment_or_the_hours_used(hours, gpus, price, term):
    prices = tco.CloudPrices(reserved_1y=price, reserved_3y=price)
    c = tco.run_costs_usd(hours, gpus, prices, tco.OnPrem())[f"reserved_{term}y"]
    assert c == pytest.approx(tco.reservation_commitment_usd(hours, price, gpus, term))
    assert c >= hours * gpus * price * (1 - 1e-12)                 # every used hour is billed
    assert c >= term * 8_760 * gpus * price * (1 - 1e-12)          # at least one whole term


def test_on_demand_and_spot_bill_the_hours_used():
    c = tco.run_costs_usd(RUN_H, GPUS, P5, tco.OnPrem())
    # 576 h x 1,024 x $6.88 = $4,057,989.12
    assert c["on_demand"] == pytest.approx(4_057_989.12)
    # spot at overhead 1: 576 x 1,024 x $3.78 = $2,229,534.72
    assert c["spot"] == pytest.approx(2_229_534.72)


def test_spot_overhead_counted_once():
    prices = tco.CloudPrices(on_demand=OD, spot=SPOT, spot_overhead=1.25)
    # overhead stretches the billed hours: 576 x 1.25 = 720 h x 1,024 x $3.78 = $2,786,918.4
    assert tco.run_costs_usd(RUN_H, GPUS, prices, tco.OnPrem())["spot"] == pytest.approx(2_786_918.4)
    # billed hours given (already stretched): the overhead is not applied again
    c = tco.run_costs_usd(RUN_H, GPUS, prices, tco.OnPrem(), spot_run_hours=720)
    assert c["spot"] == pytest.approx(2_786_918.4)


def test_buying_the_cluster_for_one_run_by_hand():
    d = tco.OnPrem()
    c = tco.run_costs_usd(RUN_H, GPUS, P5, d)["on_prem"]
    # per GPU: capex $36,497.50 + opex at full use ($118.529 power + $130.208 facility) x
    # 576 / 730 months = 36,497.50 + 248.737 x 0.78904 = 36,693.77; x 1,024 = $37.574M
    assert c == pytest.approx(1024 * (36_497.5 + 248.737 * 576 / 730), rel=1e-6)
    assert c == pytest.approx(37.574e6, rel=1e-4)


def test_resale_only_when_asked():
    d = tco.OnPrem()
    none = tco.run_costs_usd(RUN_H, GPUS, P5, d)["on_prem"]
    assert tco.run_costs_usd(RUN_H, GPUS, P5, d, resale="none")["on_prem"] == none
    sold = tco.run_costs_usd(RUN_H, GPUS, P5, d, resale="market")["on_prem"]
    # book after 0.78904 months of a 48-month straight line to 10%:
    # 36,497.5 x (1 - 0.9 x 0.78904 / 48) = 35,957.55; market = x (1 - 0.3) = 25,170.3
    assert none - sold == pytest.approx(1024 * 25_170.3, rel=1e-5)
    # resale leaves the cloud options alone
    for k in ("on_demand", "reserved_3y", "spot"):
        assert tco.run_costs_usd(RUN_H, GPUS, P5, d, resale="market")[k] == pytest.approx(
            tco.run_costs_usd(RUN_H, GPUS, P5, d)[k])


def test_discounting_lowers_every_option_and_rate_zero_changes_nothing():
    year = 8_760
    plain = tco.run_costs_usd(year, GPUS, P5, tco.OnPrem())
    zero = tco.run_costs_usd(year, GPUS, P5, tco.OnPrem(), discount_rate=0.0)
    disc = tco.run_costs_usd(year, GPUS, P5, tco.OnPrem(), discount_rate=0.10)
    assert set(plain) == set(disc) == set(OPTIONS_ALL)
    for k in plain:
        assert zero[k] == plain[k]
        assert disc[k] < plain[k]
    # on demand, 12 monthly bills of 730 h each, discounted month by month at 10%/year
    by_month = sum(730 * GPUS * OD / 1.10 ** (t / 12) for t in range(1, 13))
    assert disc["on_demand"] == pytest.approx(by_month)
    # on premises: capex at month 0 is not discounted; only the opex is
    d = tco.OnPrem()
    opex = tco.onprem_opex_usd_per_gpu_month(d, 1.0)
    assert disc["on_prem"] == pytest.approx(
        GPUS * (d.capex_usd + sum(opex / 1.10 ** (t / 12) for t in range(1, 13))))


def test_options_not_offered_are_absent():
    assert tco.run_costs_usd(100, 8, tco.CloudPrices(), bare(None)) == {}
    c = tco.run_costs_usd(100, 8, tco.CloudPrices(spot=2.0), tco.OnPrem())
    assert set(c) == {"spot", "on_prem"}
    assert "on_prem" not in tco.run_costs_usd(100, 8, P5, bare(0.0))
    assert "on_prem" not in tco.option_costs_usd(12, 0.5, P5, tco.OnPrem.for_gpu(catalog.gpu("b200")))


def test_arrays_broadcast():
    c = tco.run_costs_usd(np.array([100.0, 9_000.0]), np.array([[8], [16]]), P5, tco.OnPrem())
    assert c["on_demand"].shape == c["reserved_3y"].shape == c["on_prem"].shape == (2, 2)
    assert c["on_demand"][1, 0] == pytest.approx(100 * 16 * OD)


# ------------------------------------------------------------------ amortized share

def test_amortized_share_of_reserved_and_owned_capacity():
    d = tco.OnPrem()
    a = tco.run_costs_amortized_usd(RUN_H, GPUS, P5, d, 0.8)
    # reserved at 80% use: 576 x 1,024 x $2.9725 / 0.8 = $2,191,564.8
    assert a["reserved_3y"] == pytest.approx(2_191_564.8)
    # owned: capex over 4 years of 80% use, 36,497.5 / (35,040 x 0.8) = $1.30199 per used
    # GPU-hour, plus opex at 80% (1.275 x (0.3 + 0.7 x 0.8) x 1.58 x 0.0806 x 730 = $101.935
    # power + $130.208) / (730 x 0.8) = $0.39751: $1.69950 x 589,824 GPU-hours
    assert a["on_prem"] == pytest.approx(576 * 1024 * 1.69950, rel=1e-5)
    # one convention: the same as the 48-month per-used-hour curve at 80%
    per = tco.cost_per_useful_gpu_hour(48, 0.8, P5, d)["on_prem"]
    assert a["on_prem"] == pytest.approx(per * 576 * 1024)
    # billed per use: the same as cash
    cash = tco.run_costs_usd(RUN_H, GPUS, P5, d)
    assert a["on_demand"] == cash["on_demand"] and a["spot"] == cash["spot"]


# ------------------------------------------------------------------ curves and breakeven

def test_reserved_curve_is_a_step_of_whole_terms():
    p = tco.CloudPrices(reserved_1y=2.0, reserved_3y=1.5)
    c = tco.option_costs_usd(np.array([5.0, 12.0, 12.5]), 0.5, p, tco.OnPrem(), gpus=8)
    # 1-year: 1, 1, 2 terms of 8,760 h x 8 x $2; 3-year: one term of 26,280 h x 8 x $1.5
    assert c["reserved_1y"] == pytest.approx([140_160, 140_160, 280_320])
    assert c["reserved_3y"] == pytest.approx([315_360] * 3)


def test_cost_per_useful_gpu_hour_follows_the_curves():
    p = tco.CloudPrices(on_demand=5.0, reserved_1y=3.5, spot=2.0, spot_overhead=1.2)
    c = tco.cost_per_useful_gpu_hour(np.array([6.0, 12.0, 18.0]), 0.5, p, tco.OnPrem())
    assert c["on_demand"] == pytest.approx([5.0] * 3)                 # pay only for used hours
    assert c["spot"] == pytest.approx([2.4] * 3)                      # 2.0 x 1.2
    # reserved: whole years over used hours: 6 months -> 8,760 x 3.5 / (4,380 x 0.5) = 14;
    # 12 -> 3.5 / 0.5 = 7; 18 -> 2 years / 1.5 years / 0.5 = 9.333
    assert c["reserved_1y"] == pytest.approx([14.0, 7.0, 9.3333], rel=1e-4)


def test_seed_breakeven_unchanged_and_units_cancel():
    # per node: $250k / ($50 x 730 x 0.9) = 7.61 months; per GPU ($6.25, $31,250) the same
    assert tco.breakeven_months(50, 250_000, 0.9) == pytest.approx(7.6104, abs=1e-4)
    assert tco.breakeven_months(50 / 8, 250_000 / 8, 0.9) == pytest.approx(7.6104, abs=1e-4)


@pytest.mark.parametrize("rate", [0.0, 0.10])
def test_breakeven_is_where_the_curves_cross(rate):
    d = tco.OnPrem()
    u = 0.7
    prices = tco.CloudPrices(on_demand=OD)
    m = tco.breakeven_months(OD, d.capex_usd, u, tco.onprem_opex_usd_per_gpu_month(d, u), rate)
    assert 1 < m < 48
    c = tco.option_costs_usd(np.array([m - 0.01, m + 0.01]), u, prices, d, discount_rate=rate)
    assert c["on_demand"][0] < c["on_prem"][0]          # before: renting is cheaper
    assert c["on_demand"][1] > c["on_prem"][1]          # after: buying is cheaper
    per = tco.cost_per_useful_gpu_hour(m, u, prices, d, discount_rate=rate)
    assert per["on_prem"] == pytest.approx(per["on_demand"], rel=1e-9)


def test_discounting_delays_breakeven_by_hand():
    # r = 10%: q = 1.1^(-1/12); A(m) = K / margin = 250,000 / 32,850 = 7.6104;
    # m = ln(1 - A (1 - q) / q) / ln q = 7.882 months (> 7.61: later savings are worth less)
    q = 1.1 ** (-1 / 12)
    expect = math.log(1 - 7.6104 * (1 - q) / q) / math.log(q)
    assert tco.breakeven_months(50, 250_000, 0.9, 0, 0.10) == pytest.approx(expect, rel=1e-4)
    assert tco.breakeven_months(50, 250_000, 0.9, 0, 0.10) == pytest.approx(7.882, abs=0.001)
    # discounted, a small margin never repays: perpetuity q / (1 - q) = 125.9 months of margin
    assert np.isinf(tco.breakeven_months(50, 250_000, 0.9, 32_850 - 1_900, 0.10))
    assert np.isfinite(tco.breakeven_months(50, 250_000, 0.9, 32_850 - 1_900, 0.0))


@settings(max_examples=120, deadline=None)
@given(st.floats(0.5, 15), st.floats(5_000, 80_000), st.floats(0.05, 1.0), st.floats(0, 600),
       st.sampled_from([0.0, 0.05, 0.15]))
def test_renting_wins_below_breakeven_and_buying_above(price, capex, u, opex, rate):
    prices, prem = tco.CloudPrices(on_demand=price), bare(capex, opex)
    m = tco.breakeven_months(price, capex, u, opex, rate)
    if not np.isfinite(m):
        c = tco.option_costs_usd(600.0, u, prices, prem, discount_rate=rate)
        assert c["on_demand"] < c["on_prem"]
        return
    below = tco.option_costs_usd(0.98 * m, u, prices, prem, discount_rate=rate)
    above = tco.option_costs_usd(1.02 * m, u, prices, prem, discount_rate=rate)
    assert below["on_demand"] < below["on_prem"]
    assert above["on_demand"] > above["on_prem"]
    names, best, _ = tco.decision_map([u], [0.98 * m, 1.02 * m], prices, prem, discount_rate=rate)
    assert [names[i] for i in best[0]] == ["on_demand", "on_prem"]


# ------------------------------------------------------------------ catalog

def test_catalog_power_and_capex_per_gpu():
    h100 = catalog.gpu("h100-sxm")
    assert h100.power_w_per_gpu == pytest.approx(1_275)       # DGX H100 10.2 kW / 8
    assert h100.capex_usd_per_gpu == pytest.approx(31_250)    # $250k / 8
    assert catalog.gpu("a100-40gb").capex_usd_per_gpu == pytest.approx(24_875)  # $199k / 8
    assert catalog.gpu("a100-80gb").power_w_per_gpu == pytest.approx(812.5)     # 6.5 kW / 8
    assert catalog.gpu("b200").power_w_per_gpu == pytest.approx(1_787.5)        # 14.3 kW / 8
    assert catalog.gpu("gb200").power_w_per_gpu == pytest.approx(1_666.7, abs=0.1)  # 120/72
    for g in ("b200", "gb200", "h200", "mi300x", "l40s"):
        assert catalog.gpu(g).capex_usd_per_gpu is None       # no cited price: none invented
    # no datasheet: estimated from TDP x 10.2 / 5.6, and labelled so
    mi = catalog.gpu("mi300x")
    assert mi.power_w_per_gpu == pytest.approx(750 * 10.2 / 5.6, rel=1e-3)
    assert mi.system_power_note.startswith("estimate")
    for gid in catalog.ids("gpus"):
        g = catalog.gpu(gid)
        assert g.power_w_per_gpu is not None and g.power_w_per_gpu > g.tdp_w
        assert g.system_power_note


def test_gpuspec_without_system_fields_still_builds():
    g = GPUSpec(id="x", name="x", generation="x", bf16_dense_tflops=1, fp8_dense_tflops=None,
                memory_gib=1, hbm_bandwidth_tb_per_s=1, scale_up="x", scale_up_bandwidth_gb_per_s=1,
                gpus_per_node=8, tdp_w=500)
    assert g.power_w_per_gpu is None and g.capex_usd_per_gpu is None
    prem = tco.OnPrem.for_gpu(g)
    assert not prem.offered and prem.power_w_per_gpu == tco.OnPrem().power_w_per_gpu


def test_onprem_for_gpu_takes_catalog_capex_and_power():
    p = tco.OnPrem.for_gpu(catalog.gpu("a100-40gb"))
    assert p.capex_usd_per_gpu == pytest.approx(24_875) and p.power_w_per_gpu == pytest.approx(812.5)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("call,param", [
    (lambda: tco.run_costs_usd(100, 8, P5, tco.OnPrem(), resale="sell"), "resale"),
    (lambda: tco.run_costs_usd(-1, 8, P5, tco.OnPrem()), "run_hours"),
    (lambda: tco.run_costs_usd(100, 0, P5, tco.OnPrem()), "gpus_billed"),
    (lambda: tco.option_costs_usd(12, 0.5, P5, tco.OnPrem(), discount_rate=-0.1), "discount_rate"),
    (lambda: tco.OnPrem(resale_haircut=1.5), "resale_haircut"),
    (lambda: tco.OnPrem(capex_usd_per_gpu=-1), "capex_usd_per_gpu"),
    (lambda: tco.CloudPrices(on_demand=0), "on_demand"),
    (lambda: tco.CloudPrices(spot=1.0, spot_overhead=0.9), "spot_overhead"),
    (lambda: tco.reservation_commitment_usd(100, 2.0, 8, 0), "term_years"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.param == param
