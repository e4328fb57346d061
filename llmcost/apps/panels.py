"""The apps of the workbook. Each is thin: controls, headline, plots; the numbers come from
llmcost.review (one cached Results per Scenario) and the plots from llmcost.plots."""

from __future__ import annotations

import html
import io

import ipywidgets as W
import numpy as np
import pandas as pd

from .. import plots
from ..review import OPTION_LABELS, evaluate, measured_utilization
from ..training.scaling import analyse_measured_scaling
from .base import Panel, plotly_output, run_app


def _money(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"${x:,.0f}"


class ReviewPanel(Panel):
    """An app whose numbers are one review Results."""

    def compute(self, s):
        return evaluate(s, self.catalog)


class ReviewApp(ReviewPanel):
    name = "review"
    title = "Architecture review"
    intro = ("Pick the model, the tokens, the GPU, the fabric and the cluster size (or a target "
             "number of days): the planner finds the best parallel layout, the step-time model "
             "predicts MFU, and failures, checkpoints and data stalls turn it into days and "
             "dollars. Prices, capex and power follow the GPU from the catalog unless you set "
             "them. Costs are cash: a reservation is billed for its whole term.")
    fields = ("model", "tokens", "gpu", "fabric", "precision", "sizing", "gpus", "target_days",
              "global_batch_tokens", "moe_load_imbalance", "moe_a2a_overlap",
              "data_stall", "data_stall_share", "checkpoint_mode",
              "price_source", "price_offer", "on_demand_usd_per_gpu_hour",
              "reserved_3y_usd_per_gpu_hour", "spot_discount", "onprem_capex_usd_per_gpu",
              "utilization", "resale")
    sliders = ("data_stall_share", "utilization")
    headline_keys = ("days", "gpus", "cost_on_demand_usd", "cheapest_option", "mfu",
                     "effective_utilization", "memory_gb_per_gpu", "fits", "best_layout",
                     "goodput", "meets_target")

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
        return measured_utilization(s, self.catalog)

    def headline(self, res):
        from ..review import Flag
        u = res.effective_utilization
        flag = None
        levels = {f.level for f in res.findings}
        if "error" in levels:
            flag = Flag("effective_utilization", "infeasible", "above 100% of peak")
        elif levels:
            flag = Flag("effective_utilization", "implausible",
                        "see the notes: rarer than any published large run or a wrong peak")
        return {"effective_utilization": ("Effective utilization", f"{u:.1%}", flag),
                "achieved_tflops": ("Achieved TFLOP/s per GPU", f"{res.achieved_tflops_per_gpu:,.0f}"),
                "tokens_per_s": ("Tokens per second", f"{res.tokens_per_s:,.0f}"),
                "peak": ("Peak used (TFLOP/s)", f"{res.peak_tflops:,.1f}"),
                "hfu": ("HFU if fully recomputed", f"{res.hfu_if_full_recompute:.1%}")}

    def note_lines(self, res):
        return [f"[{f.level}] {f.message}" for f in res.findings] or ["plausible: within published ranges"]

    def plot_names(self):
        return ("published",)

    def make_figures(self, res):
        fig = plots.utilization_vs_published(res, self.catalog.published_runs())
        fig.update_layout(title=f"Your run: {res.effective_utilization:.1%} of dense peak, vs published runs")
        return {"published": fig}


class TcoApp(ReviewPanel):
    name = "tco"
    title = "Rent vs buy"
    intro = ("Cloud on-demand and spot bill the hours you use; a reservation bills every hour of "
             "its term; owning pays capex up front and power, space, staff, storage and upkeep "
             "each month. Cash view: hardware is not resold unless you ask. The seed's rule of "
             "thumb: about 7-8 months to break even at 90% utilization, buy at 80%+ for 12+ "
             "months. Costs are for the review's cluster; prices per GPU-hour.")
    fields = ("gpu", "gpus", "price_source", "price_offer", "on_demand_usd_per_gpu_hour",
              "reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour", "spot_discount",
              "onprem_capex_usd_per_gpu", "onprem_power_kw_per_gpu", "onprem_opex_usd_per_gpu_month",
              "pue", "usd_per_kwh", "life_years", "residual_share", "resale", "utilization",
              "horizon_months", "discount_rate")
    sliders = ("utilization", "residual_share")
    headline_keys = ("breakeven_months",)

    def headline(self, res):
        out = super().headline(res)
        e = res.economics
        if e is None:
            return out
        if res.inputs.prices is None or res.inputs.onprem is None:
            out["breakeven_months"] = ("Buying beats on-demand after", "n/a (no price)", None)
        for k, x in e.usd_per_used_gpu_hour.items():
            out[f"per_{k}"] = (f"{OPTION_LABELS[k]}: $ per used GPU-h", f"${x:,.2f}", None)
        return out

    def plot_names(self):
        return ("curves", "map", "tornado")

    def make_figures(self, res):
        return {"curves": plots.tco_curves(res), "map": plots.decision_map(res),
                "tornado": plots.tornado(res)}


class SpotApp(ReviewPanel):
    name = "spot"
    title = "Spot vs on-demand"
    intro = ("Net savings after preemptions: each one costs the work since the last checkpoint "
             "(from the review's checkpoint interval, unless you set the hours), a restart and a "
             "wait for capacity, billed; the spot run fails like the on-demand one too. The "
             "seed's 60% off with 2.4 preemptions a day and 1-2 h lost gives about 53%, not its "
             "22%: the goal-seek shows the hours per preemption its 22% implies. "
             "<a href='spot.ipynb?price_source=custom&spot_discount=0.6&spot_lost_work=custom"
             "&lost_hours_per_preemption=1.5&restart_s=0&failure_rate=custom"
             "&failures_per_1000_gpu_days=0.0001'>The seed's numbers</a>.")
    fields = ("gpu", "price_source", "price_offer", "spot_discount", "preemptions_per_day",
              "spot_lost_work", "lost_hours_per_preemption", "restart_s", "capacity_wait_h",
              "observed_net_savings")
    sliders = ("spot_discount",)
    headline_keys = ()

    def resolved(self, res):
        out = super().resolved(res)
        if res.economics is not None:
            out["lost_hours_per_preemption"] = res.economics.spot.lost_hours_per_preemption
        return out

    def headline(self, res):
        sp = res.economics.spot if res.economics is not None else None
        if sp is None or not sp.offered:
            why = "spot not offered for this GPU" if sp is None or sp.discount is None else \
                "preemptions fill the day: the run never finishes"
            return {"net": ("Net savings", "n/a", None), "why": ("Spot", why, None)}
        mc = self._mc(res)
        out = {"net": ("Net savings", f"{sp.net_savings:.1%}", None),
               "stretch": ("Duration stretch", f"{sp.duration_stretch:.2f}x", None),
               "lost": ("Hours lost per preemption",
                        f"{sp.lost_hours_per_preemption:.2f} h ({sp.lost_hours_source})", None)}
        if mc is not None:
            p = np.percentile(mc.cost_share, [10, 50, 90])
            out["p50"] = ("Cost P10/P50/P90 (of on-demand)", " / ".join(f"{x:.0%}" for x in p), None)
        if sp.breakeven_lost_hours is not None:
            out["breakeven"] = ("Spot stops paying at",
                                f"{sp.breakeven_lost_hours:.2f} h lost per preemption", None)
        if sp.implied_lost_hours is not None:
            out["implied"] = ("Observed savings imply",
                              f"{sp.implied_lost_hours:.2f} h lost per preemption", None)
        return out

    def _mc(self, res):
        from ..review import spot_distribution
        return spot_distribution(res)

    def plot_names(self):
        return ("heatmap", "montecarlo")

    def make_figures(self, res):
        heat = plots.spot_heatmap(res)
        sp = res.economics.spot if res.economics is not None else None
        if sp is not None and sp.net_savings is not None:
            heat.update_layout(title=f"Spot net savings: {sp.net_savings:.1%} at this scenario "
                                     "(zero contour in black)")
        return {"heatmap": heat, "montecarlo": plots.spot_monte_carlo(res)}


class SizingApp(ReviewPanel):
    name = "sizing"
    title = "Sizing and layout"
    intro = ("GPUs, days and dollars for the run; the planner's ranked layouts and their memory; "
             "predicted scaling by fabric; the fine-tune ladder (adapt a hosted model, QLoRA, "
             "LoRA, full fine-tune, pretrain), cheapest first. Upload your own measured throughput at several node "
             "counts (CSV with columns nodes, tokens_per_s) to see efficiency, the fitted "
             "communication share and where the curve breaks.")
    fields = ("model", "tokens", "gpu", "fabric", "precision", "sizing", "gpus", "target_days",
              "global_batch_tokens", "moe_load_imbalance", "moe_a2a_overlap", "headroom",
              "max_power_mw", "price_source",
              "on_demand_usd_per_gpu_hour", "finetune_tokens")
    sliders = ("headroom",)
    headline_keys = ("gpus", "days", "cost_on_demand_usd", "mfu", "memory_gb_per_gpu",
                     "best_layout", "meets_target")

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
        return super()._build()

    def headline(self, res):
        out = super().headline(res)
        if res.size is not None and res.size.sizing.memory_floor_gpus:
            out["floor"] = ("Memory floor (GPUs)", f"{res.size.sizing.memory_floor_gpus:,}", None)
        return out

    def plot_names(self):
        return ("days", "layouts", "memory", "scaling", "ladder")

    def make_figures(self, res):
        cols = {"tp": ("TP", "{}"), "pp": ("PP", "{}"), "interleave": ("v", "{}"), "cp": ("CP", "{}"),
                **({"ep": ("EP", "{}"), "etp": ("ETP", "{}")} if res.inputs.model.is_moe else {}),
                "dp": ("DP", "{}"), "micro_batch": ("mb", "{}"), "zero_stage": ("ZeRO", "{}"),
                "recompute": ("recompute", "{}"), "sequence_parallel": ("SP", "{}"),
                "step_time_s": ("step s", "{:.3f}"),
                "mfu": ("MFU", "{:.1%}"), "memory_gb": ("GB/GPU", "{:.1f}")}
        table = plots.frame_table(res.plan.layouts, f"Best layouts on {res.plan.gpus:,} GPUs", cols)
        return {"days": plots.sizing_curve(res), "layouts": table,
                "memory": plots.memory_stack(res), "scaling": plots.scaling(res),
                "ladder": plots.ladder_table(res)}

    def analyse_csv(self, text: str):
        df = pd.read_csv(io.StringIO(text))
        return analyse_measured_scaling(df, target_nodes=[int(df["nodes"].max()) * 2,
                                                          int(df["nodes"].max()) * 4])

    def _on_scaling(self, change):
        files = change["new"]
        if not files:
            return
        item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        try:
            res = self.analyse_csv(bytes(item["content"]).decode("utf-8", errors="replace"))
        except (ValueError, KeyError, TypeError, pd.errors.ParserError) as e:
            self.scaling_note.value = (f"<span class='llmc-err'>Could not read the CSV: "
                                       f"{html.escape(str(e))}</span>")
            return
        warn = "".join(f"<li>{html.escape(w)}</li>" for w in res.warnings) or "<li>no cliff: gradual</li>"
        self.scaling_note.value = (f"<div>Fitted communication share: {res.comm_share_per_doubling:.1%} "
                                   f"per doubling of nodes.<ul>{warn}</ul></div>")
        self.scaling_out.outputs = (plotly_output(plots.measured_scaling(res)),)
        self.measured = res


class CheckpointApp(ReviewPanel):
    name = "checkpoints"
    title = "Storage and checkpoints"
    intro = ("What storage does this run need, and what do checkpoints and failures cost it? "
             "The checkpoint's size (weights and Adam state), what a "
             "synchronous save to the shared tier stalls, what an asynchronous one stalls "
             "locally and how long its background upload takes (a snapshot is durable only "
             "once uploaded, so async never checkpoints faster than the upload), the interval "
             "(Daly's unless you set one) and the goodput of each mode; the data read rate; "
             "what the local NVMe and shared tiers must carry; whether a node's share fits in "
             "a spot notice. A job fails when any of its GPUs does, at a rate per GPU that "
             "reproduces the published job-level measurement for the GPU's generation (H100: "
             "Llama 3, one interruption per 3.1 h on 16,384 GPUs; A100: Kokolis et al. 2025), "
             "or a preset, or a given MTBF (the seed: 4.7 days).")
    fields = ("model", "gpu", "gpus", "checkpoint_mode", "shared_storage_gb_per_s", "local_write_gb_per_s",
              "failure_rate", "failures_per_1000_gpu_days", "mtbf_h", "restart_s",
              "checkpoint_interval_s", "data_stall", "data_tier_read_gb_per_s",
              "data_read_amplification", "data_stall_share")
    sliders = ("data_stall_share",)

    @staticmethod
    def _rate(gb_per_s: float) -> str:
        """A data rate in the unit that reads best (GB = 1e9 bytes)."""
        if gb_per_s >= 0.1:
            return f"{gb_per_s:,.2f} GB/s"
        if gb_per_s >= 1e-4:
            return f"{gb_per_s * 1e3:,.2f} MB/s"
        return f"{gb_per_s * 1e6:,.2f} kB/s"

    def _storage(self, res) -> dict:
        from ..review.series import storage_figures
        return storage_figures(res)

    def headline(self, res):
        from ..review.series import notice_checks
        f, r, s = self._storage(res), res.reliability, res.scenario
        mode = s.checkpoint_mode
        stalls = {"sync": f"sync: {f['sync_stall_s']:,.1f} s",
                  "async": f"async local: {f['async_stall_s']:,.2f} s"}
        other = "async" if mode == "sync" else "sync"
        tau, up = f["interval_s"], f["upload_s"]
        how = "set" if s.checkpoint_interval_s > 0 else "Daly"
        shown = f"{tau:,.1f} s = {tau / 60:,.1f} min"
        if mode == "sync":
            interval = f"{shown} ({how}, sync)"
        elif f["durable_interval_s"] > tau:       # set below the upload
            interval = (f"{tau:,.1f} s set (async): snapshots every "
                        f"{f['durable_interval_s']:,.1f} s, never faster than the upload")
        elif how == "Daly" and up > r.daly_interval_s:
            interval = f"{shown} (async: Daly's {r.daly_interval_s:,.0f} s raised to the upload)"
        else:
            interval = f"{shown} ({how}, async; not shorter than the {up:,.1f} s upload)"
        warm = f["tiers"]["warm"]
        burst = ("sync stall under 10 s" if mode == "sync" else "upload within the interval")
        notice = notice_checks(res)
        local = notice[notice["target"] == "local NVMe"]
        fits = " / ".join(f"{c} {n:,.0f} s: {'yes' if ok else 'no'} ({w:,.1f} s)"
                          for c, n, ok, w in zip(local["cloud"], local["notice_s"], local["fits"],
                                                 local["write_s"]))
        out = {"size": ("Checkpoint", f"{f['checkpoint_gb']:,.0f} GB "
                                      f"({f['checkpoint_bytes_per_param']:.0f} bytes/param)", None),
               "stall": ("Checkpoint stall (chosen mode first)",
                         f"{stalls[mode]} ({stalls[other]})", None),
               "upload": ("Async upload (background)", f"{f['upload_s']:,.1f} s", None),
               "interval": ("Chosen interval", interval, None),
               "goodput": ("Goodput (chosen mode)", f"{f['goodput']:.2%} ({mode})", None),
               "mtbf": ("Job MTBF", f"{r.job_mtbf_h:,.1f} h ({r.failures_per_1000_gpu_days:.3g} "
                                    f"failures per 1000 GPU-days, {r.failure_source})", None),
               "read": ("Data read rate",
                        f"{self._rate(f['read_gb_per_s'])} total, "
                        f"{self._rate(f['read_gb_per_s_per_node'])} per node", None),
               "shared": ("Shared tier: burst needed / offered",
                          f"{warm['write_burst_gb_per_s']:,.3g} / "
                          f"{warm['offered_write_gb_per_s']:,.3g} GB/s: "
                          f"{'meets it' if warm['meets_burst'] else 'does NOT meet it'} ({burst})",
                          None),
               "notice": ("Local write within a spot notice", fits, None)}
        if res.economics is not None:
            out["useful"] = ("Goodput x (1 - data stalls)", f"{res.economics.useful_share:.2%}", None)
        return out

    def note_lines(self, res):
        from ..review.series import notice_checks, seed_storage_claims
        f, c = self._storage(res), seed_storage_claims(res)
        node_gb = float(notice_checks(res)["node_gb"].iloc[0])
        s = res.scenario
        lo, hi = c["seed_hours"]
        b60, b30 = c["shared_gb_per_s_for_seed_stall"][::-1]
        lines = [f"Seed: \"500 checkpoints x 30-60 s = 5-8 h\": the arithmetic gives "
                 f"{lo:.1f}-{hi:.1f} h (5-8 h is {c['seed_stall_for_hours_s'][0]:.0f}-"
                 f"{c['seed_stall_for_hours_s'][1]:.0f} s each). A 30-60 s sync stall of this "
                 f"{f['checkpoint_gb']:,.0f} GB checkpoint needs {b60:,.1f}-{b30:,.1f} GB/s of "
                 f"shared write; here it stalls {f['sync_stall_s']:,.1f} s at "
                 f"{s.shared_storage_gb_per_s:,.3g} GB/s, so 500 sync checkpoints would cost "
                 f"{c['run_hours_for_500']:,.1f} h."]
        if "full_gb" in c:
            n5, n3 = c["nodes_for_seed"]
            shard = (f"sharded over {n5:,}-{n3:,} nodes at this scenario's "
                     f"{s.local_write_gb_per_s:,.3g} GB/s per node" if n5 and n3 else
                     "sharded over many nodes")
            w_lo, w_hi = c["weights_gb_per_s_for_seed"]
            o_lo, o_hi = c["one_node_gb_per_s_for_seed"]
            lines.append(f"Seed: \"3-5 s local write of a 70B checkpoint\": the full "
                         f"{c['full_gb']:,.0f} GB state ({c['model']}, "
                         f"{c['full_bytes_per_param']:.0f} bytes/param) on one "
                         f"node would need {o_lo:,.0f}-{o_hi:,.0f} GB/s. It holds only for the "
                         f"bf16 weights ({c['weights_gb']:,.0f} GB: {w_lo:,.1f}-{w_hi:,.1f} GB/s) "
                         f"or for the full state {shard}. This run writes "
                         f"{node_gb:,.1f} GB per node in "
                         f"{f['async_stall_s']:,.2f} s on {f['nodes']:,} nodes.")
        return lines + [w for w in res.warnings if "failure" in w or "checkpoint" in w]

    def plot_names(self):
        return ("goodput", "tiers", "notice")

    def make_figures(self, res):
        return {"goodput": plots.goodput_curve(res), "tiers": plots.storage_tiers_table(res),
                "notice": plots.notice_table(res)}


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
