"""The six apps of the workbook. Each is thin: controls, headline, plots; the numbers come
from llmcost.review and the plots from llmcost.plots."""

from __future__ import annotations

import io

import ipywidgets as W
import numpy as np
import pandas as pd

from .. import plots
from ..review import (HEADLINE_LABELS, Results, evaluate, format_headline,
                      measured_utilization, onprem_of, _node_prices, spot_distribution)
from ..economics import spot as spot_mod
from ..economics import tco
from ..scenario import Scenario
from ..training.scaling import analyse_measured_scaling
from .base import Panel, plotly_output, run_app


def _headline(res: Results, keys) -> dict:
    return {k: (HEADLINE_LABELS[k][0], format_headline(k, res.headline[k]))
            for k in keys if k in res.headline}


def _money(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"${x:,.0f}"


class ReviewApp(Panel):
    name = "review"
    title = "Architecture review"
    intro = ("Pick the model, the tokens, the GPU, the fabric and the cluster size (or a target "
             "number of days): the planner finds the best parallel layout, the step-time model "
             "predicts MFU, and failures, checkpoints and data stalls turn it into days and "
             "dollars. Every assumption is a control on the left; every figure updates at once.")
    fields = ("model", "tokens", "gpu", "fabric", "sizing", "gpus", "target_days",
              "global_batch_tokens", "data_stall_share", "checkpoint_mode",
              "on_demand_usd_per_node_hour", "reserved_3y_usd_per_node_hour",
              "spot_usd_per_node_hour", "onprem_capex_usd_per_node", "utilization")
    sliders = ("data_stall_share", "utilization")

    def compute(self, s):
        return evaluate(s)

    def headline(self, res):
        return _headline(res, ("days", "cost_on_demand_usd", "gpus", "mfu", "effective_utilization",
                               "memory_gb_per_gpu", "fits", "best_layout", "meets_target"))

    def plot_names(self):
        return ("waterfall", "costs")

    def make_figures(self, res):
        return {"waterfall": plots.waterfall(res), "costs": plots.cost_by_option(res)}


class UtilizationApp(Panel):
    name = "utilization"
    title = "Effective utilization of a measured run"
    intro = ("The seed article's formula: model FLOPs per token x batch x sequence x steps over "
             "peak x GPUs x wall clock. Enter a run; the figure comes with what is plausible "
             "about it, next to published large runs (Megatron-LM, PaLM, Llama 3). Peaks are "
             "dense: a 2:4-sparsity peak halves the figure, a doubled FLOP count doubles it.")
    fields = ("model", "gpu", "measured_flops_per_token", "measured_global_batch",
              "measured_seq_len", "measured_steps", "measured_gpus", "measured_wall_clock_s",
              "measured_peak_tflops")

    def compute(self, s):
        return measured_utilization(s)

    def headline(self, res):
        return {"effective_utilization": ("Effective utilization", f"{res['effective_utilization']:.1%}"),
                "achieved_tflops": ("Achieved TFLOP/s per GPU", f"{res['achieved_tflops_per_gpu']:,.0f}"),
                "tokens_per_s": ("Tokens per second", f"{res['tokens_per_s']:,.0f}"),
                "peak": ("Peak used (TFLOP/s)", f"{res['peak_tflops']:,.1f}"),
                "hfu": ("HFU if fully recomputed", f"{res['hfu_if_full_recompute']:.1%}")}

    def note_lines(self, res):
        return [f"[{f.level}] {f.message}" for f in res["findings"]] or ["plausible: within published ranges"]

    def plot_names(self):
        return ("published",)

    def make_figures(self, res):
        fig = plots.utilization_vs_published(self.scenario)
        fig.update_layout(title=f"Your run: {res['effective_utilization']:.1%} of dense peak, vs published runs")
        return {"published": fig}


class TcoApp(Panel):
    name = "tco"
    title = "Rent vs buy"
    intro = ("Cloud bills the hours you use (reserved: every hour of the term); owning bills "
             "capex up front and power, space and staff each month. The seed's rule of thumb: "
             "about 7-8 months to break even at 90% utilization, buy at 80%+ for 12+ months. "
             "Costs are per 8-GPU node.")
    fields = ("on_demand_usd_per_node_hour", "reserved_1y_usd_per_node_hour",
              "reserved_3y_usd_per_node_hour", "spot_usd_per_node_hour",
              "onprem_capex_usd_per_node", "onprem_power_kw_per_node", "pue", "usd_per_kwh",
              "onprem_other_usd_per_node_month", "life_years", "residual_share", "utilization",
              "horizon_months")
    sliders = ("utilization", "residual_share")

    def compute(self, s):
        prem = onprem_of(s)
        opex = float(tco.onprem_opex_usd_per_month(prem, s.utilization))
        be = float(tco.breakeven_months(s.on_demand_usd_per_node_hour, s.onprem_capex_usd_per_node,
                                        s.utilization, opex))
        per = tco.cost_per_useful_gpu_hour(s.horizon_months, s.utilization, _node_prices(s), prem)
        return {"breakeven": be, "opex": opex, "per_gpu_hour": {k: float(x) for k, x in per.items()}}

    def headline(self, res):
        be = res["breakeven"]
        out = {"breakeven": ("Breakeven vs on-demand", "never" if not np.isfinite(be) else f"{be:.1f} months"),
               "opex": ("On-prem opex per node-month", _money(res["opex"]))}
        for k, x in res["per_gpu_hour"].items():
            out[f"per_{k}"] = (f"{plots.OPTION_LABELS[k]}: $ per used GPU-h", f"${x:,.2f}")
        return out

    def plot_names(self):
        return ("curves", "map", "tornado")

    def make_figures(self, res):
        return {"curves": plots.tco_curves(self.scenario), "map": plots.decision_map(self.scenario),
                "tornado": plots.tornado(self.scenario)}


class SpotApp(Panel):
    name = "spot"
    title = "Spot vs on-demand"
    intro = ("Net savings after preemptions: each one costs the work since the last checkpoint, "
             "a restart and a wait for capacity, billed. The seed's 60% off with 2.4 preemptions "
             "a day and 1-2 h lost gives about 53%, not its 22%: the goal-seek shows the hours "
             "per preemption its 22% implies.")
    fields = ("spot_discount", "preemptions_per_day", "lost_hours_per_preemption", "restart_h",
              "capacity_wait_h", "observed_net_savings")
    sliders = ("spot_discount",)

    def compute(self, s):
        r = spot_mod.spot_net_savings(s.spot_discount, s.preemptions_per_day,
                                      s.lost_hours_per_preemption, s.restart_h, s.capacity_wait_h)
        mc = spot_distribution(s)
        out = {"net": float(r.net_savings), "stretch": float(r.duration_stretch),
               "p": np.percentile(mc.cost_share, [10, 50, 90]), "mc": mc}
        if s.preemptions_per_day > 0:
            out["breakeven"] = float(spot_mod.breakeven_lost_hours(s.spot_discount, s.preemptions_per_day))
            if s.observed_net_savings <= s.spot_discount:
                out["implied"] = float(spot_mod.implied_lost_hours(
                    s.spot_discount, s.preemptions_per_day, s.observed_net_savings))
        return out

    def headline(self, res):
        out = {"net": ("Net savings", f"{res['net']:.1%}"),
               "stretch": ("Duration stretch", f"{res['stretch']:.2f}x"),
               "p50": ("Cost P10/P50/P90 (of on-demand)",
                       " / ".join(f"{x:.0%}" for x in res["p"]))}
        if "breakeven" in res:
            out["breakeven"] = ("Spot stops paying at", f"{res['breakeven']:.2f} h lost per preemption")
        if "implied" in res:
            out["implied"] = ("Observed savings imply", f"{res['implied']:.2f} h lost per preemption")
        return out

    def plot_names(self):
        return ("heatmap", "montecarlo")

    def make_figures(self, res):
        heat = plots.spot_heatmap(self.scenario)
        heat.update_layout(title=f"Spot net savings: {res['net']:.1%} at this scenario (zero contour in black)")
        return {"heatmap": heat, "montecarlo": plots.spot_monte_carlo(self.scenario)}


class SizingApp(Panel):
    name = "sizing"
    title = "Sizing and layout"
    intro = ("GPUs, days and dollars for the run; the planner's ranked layouts and their memory; "
             "predicted scaling by fabric. Upload your own measured throughput at several node "
             "counts (CSV with columns nodes, tokens_per_s) to see efficiency, the fitted "
             "communication share and where the curve breaks.")
    fields = ("model", "tokens", "gpu", "fabric", "sizing", "gpus", "target_days",
              "global_batch_tokens", "headroom", "on_demand_usd_per_node_hour")
    sliders = ("headroom",)

    def __init__(self, *a, **kw):
        self.scaling_upload = W.FileUpload(accept=".csv", multiple=False,
                                           description="Measured scaling CSV")
        self.scaling_upload.add_class("llmc-scaling-upload")
        self.scaling_note = W.HTML("")
        self.scaling_note.add_class("llmc-scaling-note")
        self.scaling_out = W.Output()
        self.scaling_out.add_class("llmc-plot-measured")
        self.scaling_upload.observe(self._on_scaling, names="value")
        super().__init__(*a, **kw)

    def _build(self):
        self.extra_widgets = [W.HBox([self.scaling_upload]), self.scaling_note, self.scaling_out]
        root = super()._build()
        return root

    def compute(self, s):
        return evaluate(s)

    def headline(self, res):
        out = _headline(res, ("gpus", "days", "cost_on_demand_usd", "mfu", "memory_gb_per_gpu",
                              "best_layout", "meets_target"))
        if res.sizing is not None and res.sizing.memory_floor_gpus:
            out["floor"] = ("Memory floor (GPUs)", f"{res.sizing.memory_floor_gpus:,}")
        return out

    def plot_names(self):
        return ("days", "layouts", "memory", "scaling")

    def make_figures(self, res):
        cols = {"tp": ("TP", "{}"), "pp": ("PP", "{}"), "interleave": ("v", "{}"), "cp": ("CP", "{}"),
                "dp": ("DP", "{}"), "micro_batch": ("mb", "{}"), "zero_stage": ("ZeRO", "{}"),
                "recompute": ("recompute", "{}"), "sequence_parallel": ("SP", "{}"),
                "step_time_s": ("step s", "{:.3f}"),
                "mfu": ("MFU", "{:.1%}"), "memory_gb": ("GB/GPU", "{:.1f}")}
        table = plots.frame_table(res.layouts, f"Best layouts on {res.headline['gpus']:,} GPUs", cols)
        return {"days": plots.sizing_curve(res), "layouts": table,
                "memory": plots.memory_stack(res), "scaling": plots.scaling(res)}

    def analyse_csv(self, text: str):
        df = pd.read_csv(io.StringIO(text))
        res = analyse_measured_scaling(df, target_nodes=[int(df["nodes"].max()) * 2,
                                                         int(df["nodes"].max()) * 4])
        return res

    def _on_scaling(self, change):
        files = change["new"]
        if not files:
            return
        item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        try:
            res = self.analyse_csv(bytes(item["content"]).decode("utf-8", errors="replace"))
        except (ValueError, KeyError, pd.errors.ParserError) as e:
            self.scaling_note.value = f"<span class='llmc-err'>Could not read the CSV: {e}</span>"
            return
        warn = "".join(f"<li>{w}</li>" for w in res.warnings) or "<li>no cliff: gradual</li>"
        self.scaling_note.value = (f"<div>Fitted communication share: {res.comm_share_per_doubling:.1%} "
                                   f"per doubling of nodes.<ul>{warn}</ul></div>")
        self.scaling_out.outputs = (plotly_output(plots.measured_scaling(res)),)
        self.measured = res


class CheckpointApp(Panel):
    name = "checkpoints"
    title = "Checkpoints and failures"
    intro = ("A job fails when any of its nodes does (Kokolis et al. 2025: 6.5 node failures per "
             "1000 node-days), or at a given MTBF (the seed: 4.7 days). Each checkpoint stalls "
             "the run (synchronous to shared storage, or asynchronous to local NVMe); too few "
             "lose work to failures. Young's and Daly's intervals balance the two.")
    fields = ("model", "gpu", "gpus", "checkpoint_mode", "shared_storage_gbps", "local_write_gbps",
              "node_failures_per_1000_node_days", "mtbf_h", "restart_s", "checkpoint_interval_s")

    def compute(self, s):
        return evaluate(s)

    def headline(self, res):
        r = res.reliability
        return {"mtbf": ("Job MTBF", f"{r['mtbf_h']:,.1f} h"),
                "stall": ("Checkpoint stall", f"{r['checkpoint_stall_s']:,.1f} s ({r['checkpoint_bytes'] / 1e9:,.0f} GB)"),
                "young": ("Young interval", f"{r['young_interval_s'] / 60:,.1f} min"),
                "daly": ("Daly interval", f"{r['daly_interval_s'] / 60:,.1f} min"),
                "goodput": ("Goodput", f"{r['goodput']:.2%}"),
                "losses": ("Lost to checkpoints / rework / restarts",
                           f"{r['checkpoint_share']:.1%} / {r['rework_share']:.1%} / {r['restart_share']:.1%}"),
                "bandwidth": ("Shared storage for a 10 s sync stall",
                              f"{r['bandwidth_for_10s_gbps']:,.0f} GB/s")}

    def note_lines(self, res):
        return []

    def plot_names(self):
        return ("goodput",)

    def make_figures(self, res):
        fig = plots.goodput_curve(res)
        fig.update_layout(title=f"Goodput vs checkpoint interval: {res.reliability['goodput']:.2%} at the chosen interval")
        return {"goodput": fig}


def review():
    return run_app(ReviewApp)


def utilization():
    return run_app(UtilizationApp)


def rent_vs_buy():
    return run_app(TcoApp)


def spot():
    return run_app(SpotApp)


def sizing():
    return run_app(SizingApp)


def checkpoints():
    return run_app(CheckpointApp)
