"""Effective utilization (MFU) of a measured run, against published large runs."""

from __future__ import annotations

from .. import plots
from ..review.format import measured_run_text
from .base import Panel


class UtilizationApp(Panel):
    name = "utilization"
    title = "Effective utilization of a measured run"
    question = "Is the utilization a running cluster reports plausible, and what does it mean?"
    order = 50
    #: the card says which run its figure is of: the measured run's inputs are the app's own,
    #: not the scenario's cluster (a card reading 4.8% beside "llama3-8b on 64 GPUs" was of
    #: a run of 512 GPUs)
    card_keys = ("effective_utilization", "run")
    intro = ("The formula of the cluster guide (“GPU Clusters for LLM Training: A Builder’s "
             "Guide”, 2025): model FLOPs per token x batch x sequence x steps over "
             "peak x GPUs x wall clock. Enter a run; the figure comes with what is plausible "
             "about it, next to published large runs (Megatron-LM, PaLM, Llama 3). Peaks are "
             "dense: a 2:4-sparsity peak halves the figure, a doubled FLOP count doubles it.")
    fields = ("model", "gpu", "measured_flops_per_token", "measured_global_batch",
              "measured_seq_len", "measured_steps", "measured_gpus", "measured_wall_clock_s",
              "measured_peak_tflops")

    def compute(self, s):
        from ..review import measured_utilization
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
        return {"effective_utilization": ("Measured effective utilization", f"{u:.1%}", flag),
                "achieved_tflops": ("Achieved TFLOP/s per GPU", f"{res.achieved_tflops_per_gpu:,.0f}"),
                "tokens_per_s": ("Tokens per second", f"{res.tokens_per_s:,.0f}"),
                "peak": ("Peak used (TFLOP/s)", f"{res.peak_tflops:,.1f}"),
                "hfu": ("HFU if fully recomputed", f"{res.hfu_if_full_recompute:.1%}"),
                "run": ("Measured run", measured_run_text(res))}

    def note_lines(self, res):
        return [f"[{f.level}] {f.message}" for f in res.findings] or ["plausible: within published ranges"]

    figures_from = (("published", "_published"),)

    def _published(self, res):
        fig = plots.utilization_vs_published(res, self.catalog.published_runs())
        fig.update_layout(title=f"Your run: {res.effective_utilization:.1%} of dense peak, vs published runs")
        return fig
