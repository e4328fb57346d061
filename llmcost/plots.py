"""Results -> plotly Figures. No widgets here, no formulas: every number comes from review."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .review import (OPTION_LABELS, Results, breakeven_tornado, decision_grid, finetune_ladder,
                     goodput_series, layout_memory, scaling_series, spot_distribution, spot_grid,
                     tco_series)

TEMPLATE = "plotly_white"


def _fig(title: str, **layout) -> go.Figure:
    fig = go.Figure()
    layout.setdefault("height", 360)
    fig.update_layout(title=title, template=TEMPLATE, margin=dict(l=60, r=20, t=50, b=50),
                      **layout)
    return fig


def _empty(title: str, why: str) -> go.Figure:
    fig = _fig(title)
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def waterfall(results: Results) -> go.Figure:
    e = results.economics
    df = e.waterfall if e is not None else None
    if df is None:
        return _empty("From peak to effective FLOP/s per GPU", "no layout: nothing to predict")
    fig = _fig(f"From peak to effective FLOP/s per GPU: {df['share_of_peak'].iloc[-1]:.1%} effective",
               yaxis_title="TFLOP/s per GPU")
    measures = ["absolute"] + ["relative"] * (len(df) - 1)
    y = [df["tflops_per_gpu"].iloc[0]] + list(-df["lost_tflops"].iloc[1:])
    fig.add_trace(go.Waterfall(x=list(df["step"]), y=y, measure=measures,
                               text=[f"{x:.0%}" for x in df["share_of_peak"]],
                               textposition="outside", name="TFLOP/s"))
    fig.add_trace(go.Bar(x=["effective"], y=[df["tflops_per_gpu"].iloc[-1]],
                         name="effective", marker_color="#2a9d8f"))
    fig.update_layout(showlegend=False)
    return fig


def cost_by_option(results: Results) -> go.Figure:
    e = results.economics
    costs = e.costs_usd if e is not None else {}
    if not costs:
        return _empty("Cost of this run by pricing option",
                      "no price for this GPU: set prices to custom" if e is not None
                      else "no layout: nothing to cost")
    keys = list(costs)
    cheapest = results.cheapest_option
    title = (f"Cash cost of this run: cheapest {OPTION_LABELS[cheapest]} "
             f"${costs[cheapest]:,.0f}")
    fig = _fig(title, yaxis_title="USD (cash, commitments included)",
               yaxis2=dict(title="days", overlaying="y", side="right", showgrid=False,
                           rangemode="tozero", tickmode="auto"))
    fig.add_trace(go.Bar(x=[OPTION_LABELS[k] for k in keys], y=[costs[k] for k in keys],
                         name="cash cost (USD)", hovertext=[e.commitments.get(k, "") for k in keys]))
    if e.costs_amortized_usd:
        fig.add_trace(go.Bar(x=[OPTION_LABELS[k] for k in keys],
                             y=[e.costs_amortized_usd.get(k) for k in keys],
                             name="amortized share (USD)", opacity=0.5))
    fig.add_trace(go.Scatter(x=[OPTION_LABELS[k] for k in keys], y=[e.run_days[k] for k in keys],
                             name="days", yaxis="y2", mode="markers", marker=dict(size=12)))
    fig.update_layout(barmode="group")
    return fig


def memory_stack(results: Results) -> go.Figure:
    df = layout_memory(results)
    fig = _fig("Memory per GPU of the top layouts (GB)", barmode="stack", yaxis_title="GB",
               height=400)
    if not df.empty:
        # weights split into the dense part and the routed experts (MoE), so the stack is
        # every component of the total once
        df = df.assign(dense_weights_gb=df["weights_gb"] - df.get("expert_weights_gb", 0.0))
    for comp, label in (("dense_weights_gb", "weights"), ("expert_weights_gb", "expert weights"),
                        ("fp8_weights_gb", "FP8 weight copies"),
                        ("zero3_working_gb", "ZeRO-3 working set"), ("grads_gb", "grads"),
                        ("optimizer_gb", "optimizer"), ("activations_gb", "activations"),
                        ("overhead_gb", "overhead")):
        if comp in df and (comp in ("dense_weights_gb", "grads_gb", "optimizer_gb",
                                    "activations_gb", "overhead_gb") or df[comp].any()):
            fig.add_trace(go.Bar(x=[f"#{i + 1}" for i in range(len(df))], y=df[comp],
                                 name=label, hovertext=df["layout"]))
    if df.empty:
        return fig
    cap = results.headline["capacity_gb"]
    fig.add_hline(y=cap, line_dash="dash", annotation_text=f"capacity {cap:.0f} GB")
    return fig


def scaling(results: Results) -> go.Figure:
    df = scaling_series(results)
    fig = _fig("Predicted scaling efficiency vs nodes (batch per replica fixed)",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    for f, part in df.groupby("fabric", sort=False):
        fig.add_trace(go.Scatter(x=part["nodes"], y=part["efficiency"], mode="lines+markers", name=f))
    return fig


def sizing_curve(results: Results) -> go.Figure:
    h = results.headline
    days = h["days"]
    title = (f"Days vs GPUs: {days:,.1f} days on {h['gpus']:,} GPUs" if days is not None
             else f"Days vs GPUs: no prediction on {h['gpus']:,} GPUs")
    fig = _fig(title, xaxis_title="GPUs", yaxis_title="days", xaxis_type="log",
               yaxis_type="log")
    if results.size is not None:
        t = results.size.sizing.table
        t = t[np.isfinite(t["days"])]
        fig.add_trace(go.Scatter(x=t["gpus"], y=t["days"], mode="lines",
                                 name="predicted days (best layout at each size)"))
        fig.add_hline(y=results.scenario.target_days, line_dash="dot", annotation_text="target")
    if days is not None:
        fig.add_trace(go.Scatter(x=[h["gpus"]], y=[days], mode="markers", marker=dict(size=12),
                                 name="this plan"))
    return fig


def _view(results: Results) -> str:
    s = results.scenario
    view = "cash, hardware resold at market value" if s.resale == "market" else \
        "cash, hardware not resold"
    if s.discount_rate > 0:
        view += f", all cash flows discounted at {s.discount_rate:.0%}/year"
    return view


def tco_curves(results: Results) -> go.Figure:
    df = tco_series(results)
    e = results.economics
    gpus = e.billed_gpus if e is not None else results.plan.gpus
    fig = _fig(f"Cumulative cost of {gpus:,} GPUs ({_view(results)})", xaxis_title="months",
               yaxis_title="USD")
    for k in df.columns[1:]:
        fig.add_trace(go.Scatter(x=df["months"], y=df[k], mode="lines", name=OPTION_LABELS[k]))
    be = e.breakeven_months if e is not None else None
    if be is not None and be <= results.scenario.horizon_months:
        # the same number as the headline: the breakeven stage's, not a grid crossing
        fig.add_vline(x=be, line_dash="dash",
                      annotation_text=f"buying beats on-demand after {be:.1f} months")
    return fig


#: one fixed colour per option, so the decision map reads as categories
OPTION_COLOURS = {"on_demand": "#4c78a8", "reserved_1y": "#72b7b2", "reserved_3y": "#54a24b",
                  "spot": "#f58518", "on_prem": "#b279a2"}


def decision_map(results: Results) -> go.Figure:
    u, m, names, best = decision_grid(results)
    fig = _fig(f"Cheapest option by utilization and horizon ({_view(results)})",
               xaxis_title="horizon (months)", yaxis_title="utilization", height=400)
    if not names:
        return fig
    labels = [OPTION_LABELS[n] for n in names]
    n = len(names)
    # a discrete colour scale: each option index gets one flat band
    scale = []
    for i, name in enumerate(names):
        c = OPTION_COLOURS.get(name, "#999999")
        scale += [[i / n, c], [(i + 1) / n, c]]
    fig.add_trace(go.Heatmap(x=[str(int(x)) for x in m], y=u, z=best, zmin=-0.5, zmax=n - 0.5,
                             colorscale=scale, text=np.array(labels, dtype=object)[best],
                             hovertemplate="%{y:.0%}, %{x} months: %{text}<extra></extra>",
                             colorbar=dict(tickvals=list(range(n)), ticktext=labels)))
    return fig


def tornado(results: Results) -> go.Figure:
    df = breakeven_tornado(results)
    base = float(df["base"].iloc[0]) if len(df) else np.nan
    title = (f"Breakeven month sensitivity (+-20%), base {base:.1f} months" if len(df)
             else "Breakeven month sensitivity: no breakeven to vary")
    fig = _fig(title, xaxis_title="breakeven month", barmode="overlay")
    fig.add_trace(go.Bar(y=df["input"], x=df["low"] - base, base=base, orientation="h", name="-20%"))
    fig.add_trace(go.Bar(y=df["input"], x=df["high"] - base, base=base, orientation="h", name="+20%"))
    return fig


def spot_heatmap(results: Results) -> go.Figure:
    r, L, sav = spot_grid(results)
    sp = results.economics.spot if results.economics is not None else None
    fig = _fig("Spot net savings by preemption rate and hours lost",
               xaxis_title="hours lost per preemption", yaxis_title="preemptions per day",
               height=420)
    if sp is None or sp.discount is None:
        fig.add_annotation(text="spot is not offered for this GPU", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
        return fig
    d = sp.discount
    # colour from -100% (spot costs twice on-demand) to the discount, the most spot can save
    shown = np.clip(sav, -1.0, d)
    fig.add_trace(go.Contour(x=L, y=r, z=shown, colorscale="RdBu", zmid=0, zmin=-1.0, zmax=d,
                             contours=dict(start=-1.0, end=d, size=0.1),
                             colorbar=dict(title="net", tickformat=".0%")))
    fig.add_trace(go.Contour(x=L, y=r, z=sav, contours=dict(start=0, end=0, size=1, coloring="none"),
                             line=dict(width=3, color="black"), showscale=False, name="zero"))
    fig.add_trace(go.Scatter(x=[sp.lost_hours_per_preemption], y=[sp.preemptions_per_day],
                             mode="markers+text", text=["this scenario"], textposition="top center",
                             marker=dict(size=12, color="black"), name="scenario"))
    return fig


def spot_monte_carlo(results: Results) -> go.Figure:
    mc = spot_distribution(results)
    fig = _fig("Monte Carlo: spot cost and duration (share of the ideal on-demand run)",
               xaxis_title="share", barmode="overlay")
    if mc is None:
        return fig
    fig.add_trace(go.Histogram(x=mc.cost_share, name="cost", opacity=0.6, nbinsx=60))
    fig.add_trace(go.Histogram(x=mc.duration_share, name="duration", opacity=0.6, nbinsx=60))
    return fig


def goodput_curve(results: Results) -> go.Figure:
    """Goodput vs checkpoint interval, one curve per mode (sync, async, peer-memory under
    stated assumptions), the chosen interval of the scenario's mode marked."""
    df = goodput_series(results)
    r = results.reliability
    chosen_mode = results.scenario.checkpoint_mode
    fig = _fig(f"Goodput vs checkpoint interval: {r.goodput:.2%} ({chosen_mode}) at the chosen "
               f"{r.interval_s / 60:,.1f} min", xaxis_title="compute between checkpoints (s)",
               yaxis_title="goodput", xaxis_type="log", height=420)
    for mode, part in df.groupby("mode", sort=False):
        stall, up, peer = (float(part[k].iloc[0]) for k in ("stall_s", "upload_s", "peer_copy_s"))
        if mode == "sync":
            name = f"sync ({stall:,.1f} s stall to the shared tier)"
        elif mode == "async":
            name = f"async ({stall:,.2f} s local stall, {up:,.1f} s background upload)"
        else:
            name = (f"peer-memory (assumed: peer copy {peer:,.2f} s = the async local stall; "
                    "every failure leaves the peer alive)")
        fig.add_trace(go.Scatter(x=part["interval_s"], y=part["goodput"], mode="lines", name=name,
                                 legendgroup=f"mode-{mode}",
                                 line=dict(width=3 if mode == chosen_mode else 1.5),
                                 hovertemplate=f"{mode}: %{{y:.2%}} at %{{x:,.0f}} s"
                                               f"<br>{name}<extra></extra>"))
    low = float(df["goodput"].min())
    up = float(df.loc[df["mode"] == "async", "upload_s"].iloc[0])
    if up > 0:
        fig.add_trace(go.Scatter(x=[up, up], y=[low, 1.0], mode="lines",
                                 line=dict(dash="dot", color="grey", width=1),
                                 name=f"upload {up:,.1f} s: async snapshots never come faster"))
    fig.add_trace(go.Scatter(x=[r.daly_interval_s] * 2, y=[low, 1.0], mode="lines",
                             line=dict(dash="dash", color="black", width=1),
                             name=f"Daly: {r.daly_interval_s / 60:,.1f} min ({chosen_mode} stall)"))
    fig.add_trace(go.Scatter(x=[r.interval_s], y=[r.goodput], mode="markers",
                             marker=dict(size=11, color="#e76f51"),
                             name=f"chosen ({chosen_mode}): {r.interval_s / 60:,.1f} min, "
                                  f"goodput {r.goodput:.2%}"))
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    return fig


def _cell(fmt: str, x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "NO"
    return fmt.format(x)


def storage_tiers_table(results: Results) -> go.Figure:
    """What each storage tier must carry vs what it offers (hot per node, warm aggregate)."""
    from .review.series import storage_tiers
    df = storage_tiers(results)
    cols = {"tier": ("tier", "{}"), "role": ("role", "{}"), "per": ("per", "{}"),
            "checkpoints_kept": ("copies kept", "{:.0f}"),
            "capacity_needed_tb": ("capacity needed (TB)", "{:,.3g}"),
            "write_burst_needed_gb_per_s": ("burst write needed (GB/s)", "{:,.3g}"),
            "write_average_needed_gb_per_s": ("average write needed (GB/s)", "{:,.3g}"),
            "offered_write_gb_per_s": ("write offered (GB/s)", "{:,.3g}"),
            "read_gb_per_s": ("data reads (GB/s)", "{:,.3g}"),
            "meets_burst": ("meets burst", "{}"), "meets_average": ("meets average", "{}")}
    fig = _fig(f"Storage tiers for {results.scenario.checkpoint_mode} checkpoints: needed vs "
               "offered", height=200 + 40 * len(df))
    fig.add_trace(go.Table(header=dict(values=[cols[c][0] for c in cols]),
                           cells=dict(values=[[_cell(cols[c][1], x) for x in df[c]]
                                              for c in cols])))
    fig.update_traces(columnwidth=[40, 150, 65] + [70] * (len(cols) - 3))
    return fig


def notice_table(results: Results) -> go.Figure:
    """Checkpoint-on-notice: one preempted node's share of the checkpoint, written to local
    NVMe or the shared tier, against AWS's 2 min and GCP's 30 s spot notices."""
    from .review.series import notice_checks
    df = notice_checks(results)
    cols = {"cloud": ("cloud", "{}"), "notice_s": ("notice (s)", "{:,.0f}"),
            "detect_s": ("detection (s)", "{:,.0f}"), "target": ("written to", "{}"),
            "node_gb": ("GB per node", "{:,.3g}"), "write_gb_per_s": ("write (GB/s)", "{:,.3g}"),
            "write_s": ("detect + write (s)", "{:,.1f}"), "slack_s": ("slack (s)", "{:,.1f}"),
            "fits": ("fits", "{}")}
    fig = _fig("Checkpoint on a spot notice (a local NVMe copy survives only if the disk "
               "outlives the node)", height=170 + 30 * len(df))
    fig.add_trace(go.Table(header=dict(values=[cols[c][0] for c in cols]),
                           cells=dict(values=[[_cell(cols[c][1], x) for x in df[c]]
                                              for c in cols])))
    return fig


def utilization_vs_published(mu, runs: pd.DataFrame) -> go.Figure:
    """``mu``: :func:`llmcost.review.measured_utilization`; ``runs``: the catalog's published runs."""
    runs = runs.assign(value=runs["mfu"].fillna(runs["pct_of_peak"])).dropna(subset=["value"])
    fig = _fig("Your run vs published runs", yaxis_title="share of dense peak", height=400)
    fig.add_trace(go.Bar(x=list(runs["id"]), y=runs["value"], name="published",
                         hovertext=runs["source"]))
    fig.add_trace(go.Bar(x=["your run"], y=[mu.effective_utilization], name="your run",
                         marker_color="#e76f51"))
    fig.add_hline(y=0.6, line_dash="dot", annotation_text="above 60%: rarer than any large run")
    return fig


def frame_table(df: pd.DataFrame, title: str, columns: dict) -> go.Figure:
    cols = [c for c in columns if c in df]
    fig = _fig(title, height=80 + 28 * min(len(df), 10))
    fig.add_trace(go.Table(header=dict(values=[columns[c][0] for c in cols]),
                           cells=dict(values=[[columns[c][1].format(x) for x in df[c].head(10)]
                                              for c in cols])))
    return fig


def measured_scaling(analysis) -> go.Figure:
    """A user's measured efficiency, the fitted gradual trend and its extrapolation."""
    t, x = analysis.table, analysis.extrapolated
    fig = _fig(f"Your scaling: {analysis.comm_share_per_doubling:.1%} more time per doubling of nodes",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["efficiency"], mode="markers+lines", name="measured"))
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["fitted_efficiency"], mode="lines", name="fitted",
                             line=dict(dash="dot")))
    if len(x):
        fig.add_trace(go.Scatter(x=x["nodes"], y=x["efficiency"], mode="markers", name="extrapolated",
                                 marker=dict(symbol="diamond", size=10)))
    return fig


def ladder_table(results: Results) -> go.Figure:
    """Seed 003's ladder (adapt, fine-tune, train at scale), cheapest first."""
    L = finetune_ladder(results)
    df = L.frame()
    df["hours"] = df["hours"].map(lambda x: "-" if x is None or x != x else f"{x:,.1f}")
    df["gpus"] = [("-" if m == "adapt" else f"{n:,}") for m, n in zip(df["method"], df["gpus"])]
    # two "$" in one cell make plotly.js typeset it as LaTeX (and show nothing)
    df["note"] = df["note"].str.replace("$", "USD ", regex=False)
    cols = {"method": ("rung", "{}"), "gpu": ("GPU", "{}"), "gpus": ("GPUs", "{}"),
            "hours": ("hours", "{}"), "cost_usd": ("cost", "${:,.0f}"), "note": ("how", "{}")}
    fig = frame_table(df, f"Fine-tune ladder for {L.model}, cheapest first "
                          f"({L.finetune_tokens:.3g} fine-tune tokens; pretraining on "
                          f"{results.scenario.tokens:.3g})", cols)
    fig.update_traces(columnwidth=[60, 70, 45, 60, 80, 420])
    fig.update_layout(height=120 + 60 * len(df))
    return fig
