"""What a reviewer relies on in each figure: bounded axes, zero-based cost axes, categories as
categories, the headline's units and points on the plots, legends clear of colorbars, and
compared scenarios overlaid with their labels."""

import inspect
import math

import numpy as np
import plotly.io as pio
import pytest

from llmcost import plots, review
from llmcost.review.format import OPTION_LABELS, usd_text
from llmcost.review.series import MAX_PLOT_DAYS
from llmcost.scenario import Scenario

#: figure functions that take a Results (and so a compare=)
FIGURES = ("waterfall", "cost_by_option", "memory_stack", "scaling", "sizing_curve",
           "tco_curves", "decision_map", "tornado", "spot_heatmap", "spot_monte_carlo",
           "goodput_curve", "storage_tiers_table", "notice_table", "ladder_table")
TABLES = ("storage_tiers_table", "notice_table", "ladder_table")

SCENARIOS = {
    "default": Scenario(),
    "sized": Scenario(sizing="days", target_days=30),
    "small-async": Scenario(model="llama3-8b", gpus=64, checkpoint_mode="async"),
    # failures at 50 per 1000 GPU-days, a 10-minute restart and sync checkpoints to a 20 GB/s
    # tier, a 4M-token batch: the largest sizes take 10^9 days and more
    "failing-405b": Scenario(model="llama3-405b", tokens=15e12, sizing="days",
                             global_batch_tokens=4_194_304,
                             failure_rate="custom", failures_per_1000_gpu_days=50,
                             restart="custom", restart_s=600.0, checkpoint_mode="sync",
                             shared_storage_gb_per_s=20.0),
}


@pytest.fixture(scope="module")
def results():
    return {k: review.evaluate(s) for k, s in SCENARIOS.items()}


def _arr(x):
    return np.asarray([np.nan if v is None else v for v in x], dtype=float)


def _nice(step):
    mant = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mant, m) for m in (1, 2, 2.5, 5))


def test_every_figure_takes_compare_and_label():
    for name in FIGURES:
        sig = inspect.signature(getattr(plots, name))
        assert sig.parameters["compare"].default == () and sig.parameters["label"].default is None


@pytest.mark.parametrize("case", list(SCENARIOS))
@pytest.mark.slow
def test_sizing_days_axis_is_bounded(results, case):
    r = results[case]
    fig = plots.sizing_curve(r)
    lo, hi = fig.layout.yaxis.range
    assert math.isfinite(lo) and math.isfinite(hi) and 10 ** hi < 1e6
    drawn = [y for t in fig.data for y in _arr(t.y)]
    assert max(drawn) <= MAX_PLOT_DAYS
    t = review.series.sizing_series(r)
    if t is None:
        return
    days = t["days"].to_numpy()
    slow, none = int((days > 100 * 365.25).sum()), int((~np.isfinite(days)).sum())
    note = " ".join(a.text for a in fig.layout.annotations)
    if slow:
        assert f"{slow} over 100 years" in note
    if none:
        assert f"{none} with no layout that fits" in note
    # every size with finite days under a century is drawn, inside the axis
    ok = np.isfinite(days) & (days <= MAX_PLOT_DAYS)
    line = fig.data[0]
    assert len(line.x) == ok.sum()
    assert 10 ** lo <= np.nanmin(days[ok]) and np.nanmax(days[ok]) <= 10 ** hi


@pytest.mark.slow
def test_failing_405b_has_sizes_off_the_scale(results):
    # the case the issue saw: 10^9 days at the largest sizes, now counted, not drawn
    t = review.series.sizing_series(results["failing-405b"])
    assert t["days"].max() > 1e6 and (t["days"] > MAX_PLOT_DAYS).sum() > 0


@pytest.mark.parametrize("case", ["default", "sized", "small-async"])
def test_sizing_curve_passes_through_the_headline(results, case):
    # the curve is days to train, as the headline: at the review's own size it is the
    # headline's figure (it once drew the sizing's days with the 10% schedule headroom,
    # 10% above the point it was plotted beside); sized by GPUs, it still spans every size
    r = results[case]
    t = review.series.sizing_series(r)
    g, d = r.headline["gpus"], r.headline["days"]
    assert t["on_scale"].sum() >= 100
    assert t.loc[t["gpus"] == g, "days"].tolist() == [pytest.approx(d, rel=1e-9)]
    h = r.scenario.headroom
    assert t["days_with_headroom"].to_numpy() == pytest.approx(t["days"].to_numpy() * (1 + h),
                                                               nan_ok=True)
    fig = plots.sizing_curve(r)
    line = fig.data[0]
    assert line.mode == "lines" and len(line.x) == t["on_scale"].sum()
    assert fig.data[1].x == (g,) and fig.data[1].y == pytest.approx((d,))


def test_sizing_line_is_where_the_target_is_tested(results):
    # size_cluster: the smallest N with days(N) (1 + h) <= target; on the curve of days to
    # train that is the line at target / (1 + h), and every smaller size lies above it
    r = results["sized"]
    bar = 30 / 1.10
    t = review.series.sizing_series(r)
    g = r.headline["gpus"]
    assert r.size.meets_target and r.headline["days"] <= bar
    smaller = t.loc[t["gpus"] < g, "days"].to_numpy()
    assert np.all(~np.isfinite(smaller) | (smaller > bar))
    fig = plots.sizing_curve(r)
    assert [s.y0 for s in fig.layout.shapes] == [pytest.approx(bar)]
    assert "target 30 days less 10% schedule headroom: 27.3 days" in \
        [a.text for a in fig.layout.annotations]


@pytest.mark.slow
def test_sizing_by_gpus_reuses_one_sweep_across_gpu_counts():
    # sizing by days does not read the GPU count: moving it must not rerun the sweep
    a = review.evaluate(Scenario(model="llama3-8b", gpus=64))
    b = review.evaluate(Scenario(model="llama3-8b", gpus=256))
    assert a.size is None and b.size is None
    assert review.series.sizing_sweep(a) is review.series.sizing_sweep(b)
    t = review.series.sizing_series(b)
    assert t.loc[t["gpus"] == 256, "days"].tolist() == [pytest.approx(b.headline["days"], rel=1e-9)]


@pytest.mark.parametrize("case", ["default", "small-async"])
def test_cost_axes_start_at_zero_with_rounded_aligned_ticks(results, case):
    r = results[case]
    fig = plots.cost_by_option(r)
    y1, y2 = fig.layout.yaxis, fig.layout.yaxis2
    assert y1.range[0] == 0 and y2.range[0] == 0
    assert _nice(y1.dtick) and _nice(y2.dtick)
    n1, n2 = y1.range[1] / y1.dtick, y2.range[1] / y2.dtick
    assert n1 == pytest.approx(round(n1)) and n1 == pytest.approx(n2)   # grid lines coincide
    e = r.economics
    assert y1.range[1] >= max(e.costs_usd.values())
    assert y2.range[1] >= max(e.run_days.values())
    cash = fig.data[0]
    assert [c[0] for c in cash.customdata] == [usd_text(e.costs_usd[k]) for k in e.costs_usd]
    assert y1.tickprefix == "$"
    # each bar names the price it is costed at and its offer, as `llmcost review` does (the
    # options come from different providers' offers); on-premises has no hourly price
    prices, offers = r.inputs.option_prices(), r.inputs.price_offers
    assert prices and "%{customdata[2]}" in cash.hovertemplate
    for k, c in zip(e.costs_usd, cash.customdata):
        if k in prices:
            assert c[2] == f" at ${prices[k]:,.2f}/GPU-h ({offers[k]})"
        else:
            assert k == "on_prem" and c[2] == ""


def test_waterfall_labels_small_bars_outside(results):
    r = results["default"]
    fig = plots.waterfall(r)
    w = fig.data[0]
    df = r.economics.waterfall
    assert w.textposition == "outside" and w.constraintext == "none" and w.cliponaxis is False
    assert w.y[0] == df["tflops_per_gpu"].iloc[0]
    assert list(w.text) == [f"{100 * x:.1f}%" for x in df["share_of_peak"]] + \
        [f"{100 * df['share_of_peak'].iloc[-1]:.1f}%"]
    # room above the peak bar for its label
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > df["tflops_per_gpu"].iloc[0]


def test_decision_map_is_categorical(results):
    r = results["default"]
    _, _, names, best = review.decision_grid(r)
    fig = plots.decision_map(r)
    assert not any(getattr(t, "showscale", None) for t in fig.data)
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 1
    # one flat colour per option in the scale, one legend entry per option
    colours = {c for _, c in heat[0].colorscale}
    assert len(colours) == len(names)
    entries = [t for t in fig.data if t.type == "scatter" and t.x == (None,)]
    assert [e.name.split(" (")[0] for e in entries] == [OPTION_LABELS[n] for n in names]
    assert [e.marker.color for e in entries] == [plots.OPTION_COLOURS[n] for n in names]
    s = r.scenario
    mark = [t for t in fig.data if t.type == "scatter" and t.x == (s.horizon_months,)]
    assert len(mark) == 1 and mark[0].y == (s.utilization,)


@pytest.mark.parametrize("case", ["default", "small-async"])
def test_goodput_in_minutes_marks_the_chosen_interval(results, case):
    r = results[case]
    fig = plots.goodput_curve(r)
    assert "(min)" in fig.layout.xaxis.title.text
    chosen = [t for t in fig.data if (t.name or "").startswith("chosen")]
    assert len(chosen) == 1
    assert chosen[0].x[0] == r.reliability.interval_s / 60
    assert chosen[0].y[0] == r.reliability.goodput
    # the headline's minutes in the marker's label and in a boxed annotation
    minutes = f"{r.reliability.interval_s / 60:,.1f} min"
    assert minutes in chosen[0].name
    assert any(minutes in a.text and a.bgcolor for a in fig.layout.annotations)
    # every curve in minutes, its seconds alongside
    curve = [t for t in fig.data if (t.legendgroup or "").startswith("mode-")][0]
    np.testing.assert_allclose(_arr(curve.x) * 60, _arr(curve.customdata), rtol=1e-12)


def test_spot_legend_is_apart_from_its_colorbar(results):
    fig = plots.spot_heatmap(results["default"])
    bars = [t for t in fig.data if t.type == "contour" and t.showscale is not False]
    assert len(bars) == 1 and bars[0].colorbar.x >= 1.0      # right of the plot
    leg = fig.layout.legend
    assert leg.orientation == "h" and leg.y < 0 and leg.yanchor == "top"   # under it
    label = [a for a in fig.layout.annotations if a.text.startswith("this scenario")]
    assert len(label) == 1 and label[0].bgcolor and label[0].borderwidth


@pytest.mark.parametrize("case", list(SCENARIOS))
@pytest.mark.slow
def test_every_figure_is_finite_titled_and_clear_of_colorbars(results, case):
    r = results[case]
    for name in FIGURES:
        fig = getattr(plots, name)(r)
        title = fig.layout.title.text
        assert all(len(line) <= plots.TITLE_CHARS for line in title.split("<br>")), (name, title)
        lines = title.count("<br>") + 1
        assert fig.layout.margin.t >= 30 + 24 * lines - 24 or name in TABLES
        for ax in ("xaxis", "yaxis", "yaxis2"):
            rng = fig.layout[ax].range if ax in fig.layout else None
            if rng is not None:
                assert all(math.isfinite(v) for v in rng), (name, ax, rng)
        if any(getattr(t, "showscale", None) for t in fig.data):
            assert fig.layout.legend.orientation == "h" and fig.layout.legend.y < 0, name
        fig.to_json()
        # the lean template has the defaults of every trace type drawn, plotly_white's own
        full = pio.templates["plotly_white"]
        for t in fig.data:
            assert t.type in plots.TRACE_TYPES, (name, t.type)
            assert fig.layout.template.data[t.type] == full.data[t.type], (name, t.type)
        assert fig.layout.template.layout.plot_bgcolor == full.layout.plot_bgcolor
        assert fig.layout.template.layout.xaxis == full.layout.xaxis


@pytest.mark.parametrize("name", FIGURES)
@pytest.mark.slow
def test_compare_empty_is_the_single_figure(results, name):
    r = results["default"]
    fn = getattr(plots, name)
    assert fn(r, compare=()).to_json() == fn(r).to_json() == fn(r, compare=(), label="X").to_json()


OVERLAID = ("waterfall", "cost_by_option", "memory_stack", "scaling", "sizing_curve",
            "tco_curves", "spot_monte_carlo", "goodput_curve")


@pytest.mark.parametrize("name", OVERLAID)
def test_compare_overlays_both_scenarios(results, name):
    cur, other = results["sized"], results["small-async"]
    fig = getattr(plots, name)(cur, compare=[("A", other)])
    names = [t.name or "" for t in fig.data]
    if name == "waterfall":
        assert names == ["current", "A"]
    elif name == "memory_stack":
        groups = {g for t in fig.data if t.type == "bar" for g in t.x[0]}
        assert groups == {"current", "A"}
        assert any(n.startswith("A: capacity") for n in names)
    else:
        assert any(n.startswith("current: ") for n in names), names
        assert any(n.startswith("A: ") for n in names), names


def test_compare_marks_points_on_maps(results):
    cur = results["default"]
    other = review.evaluate(Scenario(utilization=0.5, horizon_months=24, preemptions_per_day=1.0))
    dm = plots.decision_map(cur, compare=[("A", other)], label="B")
    pts = {t.name.split(":")[0]: (t.x[0], t.y[0]) for t in dm.data
           if t.type == "scatter" and t.x != (None,)}
    assert pts == {"B": (36, 0.9), "A": (24, 0.5)}
    sh = plots.spot_heatmap(cur, compare=[("A", other)])
    marks = {t.name.split(":")[0]: (t.x[0], t.y[0]) for t in sh.data if t.type == "scatter"
             and t.x != (None,)}
    sp = other.economics.spot
    assert marks["A"] == (sp.lost_hours_per_preemption, 1.0) and "current" in marks
    # the tornado keeps its bars and marks the other scenario's base breakeven
    tor = plots.tornado(cur, compare=[("A", other)])
    assert any(s.x0 == other.economics.breakeven_months for s in tor.layout.shapes)


@pytest.mark.parametrize("name", TABLES)
def test_tables_stay_single(results, name):
    r, other = results["default"], results["small-async"]
    fn = getattr(plots, name)
    assert fn(r, compare=[("A", other)]).to_json() == fn(r).to_json()


def test_cost_compare_groups_bars_by_scenario(results):
    cur, other = results["default"], results["small-async"]
    fig = plots.cost_by_option(cur, compare=[("A", other)], label="B")
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    np.testing.assert_allclose(_arr(bars["B: cash cost"].y),
                               [cur.economics.costs_usd.get(k, np.nan) for k in OPTION_LABELS
                                if k in cur.economics.costs_usd or k in other.economics.costs_usd])
    assert bars["B: cash cost"].offsetgroup != bars["A: cash cost"].offsetgroup
    # one zero-based axis for both: it holds the larger of the two
    top = max(max(cur.economics.costs_usd.values()), max(other.economics.costs_usd.values()))
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] >= top


def test_a_scenario_sizing_refuses_keeps_its_point(monkeypatch):
    # the curve is extra to a review by GPUs: if sizing by days refuses the scenario, the
    # plot keeps the review's point and the app its other figures
    from llmcost._validate import InputError
    from llmcost.review.chain import ReviewChain

    def refuse(inp):
        if inp.scenario.sizing == "days":
            raise InputError("target_days", "refused for the test")
        return None

    chain = ReviewChain(size=refuse)
    monkeypatch.setattr("llmcost.review.chain.DEFAULT_CHAIN", chain)
    monkeypatch.setattr("llmcost.review.chain._CACHE", type(review.chain._CACHE)())
    r = review.evaluate(Scenario(model="llama3-8b", gpus=96))
    assert review.series.sizing_series(r) is None
    fig = plots.sizing_curve(r)
    assert [t.mode for t in fig.data] == ["markers"] and fig.data[0].x == (96,)


@pytest.mark.parametrize("s", [
    # experts folded into DP (ep 8 on 64 GPUs), recomputed modules and ZeRO-3: the recipe a
    # hand-copied layout dropped (MFU 46.8% on the curve against 48.1% in the headline)
    Scenario(model="mixtral-8x7b", gpus=64, sizing="gpus"),
    Scenario(model="gpt-oss-120b", gpu="b300", gpus=2048, sizing="gpus"),
    # 208 GPUs: not a power of two of the first node count, a point of its own
    Scenario(model="llama2-7b", gpu="a100-40gb", gpus=208, sizing="gpus"),
], ids=["mixtral-ep", "gpt-oss-ep", "llama2-208"])
def test_scaling_curve_passes_through_the_headline(s):
    r = review.evaluate(s)
    t = review.scaling_series(r)
    own = t[t.fabric == r.inputs.scale_out.id]
    at = own[own.gpus == r.plan.layout.gpus]
    assert len(at) == 1
    assert float(at.step_time_s.iloc[0]) == pytest.approx(r.predict.step_time_s, rel=1e-12)
    assert float(at.mfu.iloc[0]) == pytest.approx(r.headline["mfu"], rel=1e-12)
    # every fabric compared draws its whole curve, from the same first node count
    assert set(t.fabric) >= {"ib-ndr", "roce-400"}
    assert t.groupby("fabric").nodes.min().nunique() == 1 and own.efficiency.iloc[0] == 1.0
    fig = plots.scaling(r)
    assert r.plan.layout.gpus // r.inputs.gpu.gpus_per_node in fig.data[0].x
