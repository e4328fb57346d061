"""The checkpoints app's figures: goodput against the checkpoint interval per mode, the
storage tiers needed against offered, and checkpointing on a spot notice."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ..review import Results, goodput_series
from ..review.format import minutes_text
from .base import DASHES, LABEL_BOX, SYMBOLS, _fig, _legend_below, _named, _runs
from .tables import _cell, _fit_table

MODE_COLOURS = {"sync": "#4c78a8", "async": "#e45756", "peer-memory": "#54a24b"}


def goodput_curve(results: Results, *, compare=(), label=None) -> go.Figure:
    """Goodput vs checkpoint interval in minutes (the headline's unit), one curve per mode
    (sync, async, peer-memory under stated assumptions), the chosen interval of the
    scenario's mode marked and labelled. Each point carries its interval in seconds as
    ``customdata``. Compared scenarios: a dash per scenario and their chosen points."""
    runs = _runs(results, compare, label)
    r = results.reliability
    chosen_mode = results.scenario.checkpoint_mode
    fig = _fig(f"Goodput vs checkpoint interval: {r.goodput:.2%} ({chosen_mode}) at the chosen "
               f"{r.interval_s / 60:,.1f} min", xaxis_title="compute between checkpoints (min)",
               yaxis_title="goodput", xaxis_type="log", height=460 + 90 * (len(runs) - 1))
    lows = []
    for i, (lab, res) in enumerate(runs):
        df = goodput_series(res)
        lows.append(float(df["goodput"].min()))
        mode_here = res.scenario.checkpoint_mode
        for mode, part in df.groupby("mode", sort=False):
            stall, up, peer = (float(part[k].iloc[0]) for k in ("stall_s", "upload_s", "peer_copy_s"))
            if mode == "sync":
                name = f"sync ({stall:,.1f} s stall to the shared tier)"
            elif mode == "async":
                name = f"async ({stall:,.2f} s local stall, {up:,.1f} s background upload)"
            else:
                name = (f"peer-memory (assumed: peer copy {peer:,.2f} s = the async local stall; "
                        "every failure leaves the peer alive)")
            name = _named(lab, name)
            fig.add_trace(go.Scatter(
                x=part["interval_s"] / 60, y=part["goodput"], customdata=part["interval_s"],
                mode="lines", name=name,
                legendgroup=f"mode-{mode}" if i == 0 else f"mode-{mode}-{i}",
                line=dict(width=3 if mode == mode_here else 1.5, color=MODE_COLOURS.get(mode),
                          dash=DASHES[i % 4]),
                hovertemplate=f"{_named(lab, mode)}: %{{y:.2%}} at %{{x:,.1f}} min "
                              f"(%{{customdata:,.0f}} s)<extra></extra>"))
    low = min(lows)
    df = goodput_series(results)
    up = float(df.loc[df["mode"] == "async", "upload_s"].iloc[0])
    if up > 0:
        fig.add_trace(go.Scatter(x=[up / 60] * 2, y=[low, 1.0], mode="lines",
                                 line=dict(dash="dot", color="grey", width=1),
                                 name=_named(runs[0][0], f"upload {minutes_text(up)}: async snapshots "
                                             "never come faster"),
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[r.daly_interval_s / 60] * 2, y=[low, 1.0], mode="lines",
                             line=dict(dash="dash", color="black", width=1),
                             name=_named(runs[0][0], f"Daly: {r.daly_interval_s / 60:,.1f} min "
                                                     f"({chosen_mode} stall)"),
                             hoverinfo="skip"))
    for i, (lab, res) in enumerate(runs):
        rr, mode = res.reliability, res.scenario.checkpoint_mode
        text = f"chosen ({mode}): {rr.interval_s / 60:,.1f} min, goodput {rr.goodput:.2%}"
        fig.add_trace(go.Scatter(x=[rr.interval_s / 60], y=[rr.goodput], mode="markers",
                                 customdata=[rr.interval_s],
                                 marker=dict(size=12, color="#e76f51" if i == 0 else "white",
                                             symbol=SYMBOLS[i % 4],
                                             line=dict(color="#222", width=1.5)),
                                 name=text if i == 0 and not compare else f"{lab}: {text}"
                                 if lab else text,
                                 hovertemplate=f"{_named(lab, text)} "
                                               "(%{customdata:,.0f} s)<extra></extra>"))
        fig.add_annotation(x=math.log10(rr.interval_s / 60), y=rr.goodput,
                           text=_named(lab, f"chosen {rr.interval_s / 60:,.1f} min"),
                           showarrow=True, arrowhead=0, ax=-60, ay=34 + 26 * i, **LABEL_BOX)
    fig.update_yaxes(tickformat=".0%", range=[max(0.0, low - 0.03), 1.01])
    fig.update_xaxes(tickformat=",~r")
    _legend_below(fig)
    return fig


def storage_tiers_table(results: Results, *, compare=(), label=None) -> go.Figure:
    """What each storage tier must carry vs what it offers (hot per node, warm aggregate).
    A table: the current scenario's only, whatever ``compare`` holds."""
    from ..review.series import storage_tiers
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
    header = [cols[c][0] for c in cols]
    cells = [[_cell(cols[c][1], x) for x in df[c]] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells)


def notice_table(results: Results, *, compare=(), label=None) -> go.Figure:
    """Checkpoint-on-notice: one preempted node's share of the checkpoint, written to local
    NVMe or the shared tier, against AWS's 2 min and GCP's 30 s spot notices. A table: the
    current scenario's only."""
    from ..review.series import notice_checks
    df = notice_checks(results)
    cols = {"cloud": ("cloud", "{}"), "notice_s": ("notice (s)", "{:,.0f}"),
            "detect_s": ("detection (s)", "{:,.0f}"), "target": ("written to", "{}"),
            "node_gb": ("GB per node", "{:,.3g}"), "write_gb_per_s": ("write (GB/s)", "{:,.3g}"),
            "write_s": ("detect + write (s)", "{:,.1f}"), "slack_s": ("slack (s)", "{:,.1f}"),
            "fits": ("fits", "{}")}
    fig = _fig("Checkpoint on a spot notice (a local NVMe copy survives only if the disk "
               "outlives the node)", height=170 + 30 * len(df))
    header = [cols[c][0] for c in cols]
    cells = [[_cell(cols[c][1], x) for x in df[c]] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells)
