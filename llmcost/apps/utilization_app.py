"""Effective utilization (MFU) of a measured run, against published large runs; and the
cluster check: a cluster's own nccl-tests output, training log and DCGM scrape,
uploaded and read against the model."""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as W

from .. import plots
from ..review.format import measured_run_text
from .base import Panel
from .plotview import clear_figure, plot_widget, show_figure
from .shared import make
from .text import esc

#: largest uploaded measurement file [bytes] (a month of log lines is a few tens of MB; the
#: browser refuses a larger file before sending it)
CHECK_MAX_BYTES = 20_000_000
#: the uploads of the cluster check: kind -> (button label, file types, hint)
CHECK_FILES = {
    "nccl_tests": ("nccl-tests output", ".txt,.log,.out,.json",
                   "the text any *_perf prints, or its -J JSON"),
    "train_log": ("Training log", ".txt,.log,.out",
                  "Megatron-LM / Megatron-Bridge, NeMo 2 or torchtitan"),
    "dcgm": ("DCGM samples", ".txt,.prom,.log", "dcgm-exporter's /metrics text or dcgmi dmon output"),
}


class UtilizationApp(Panel):
    name = "utilization"
    title = "Cluster check"
    question = ("Is the cluster delivering what its hardware and layout should, by its measured "
                "utilization, nccl-tests, training log and DCGM files?")
    order = 50
    #: the card says which run its figure is of: the measured run's inputs are the app's own,
    #: not the scenario's cluster, and the two may differ
    card_keys = ("effective_utilization", "run")
    intro = ("The formula of the cluster guide (“GPU Clusters for LLM Training: A Builder’s "
             "Guide”, 2026): model FLOPs per token x batch x sequence x steps over "
             "peak x GPUs x wall clock. Enter a run; the figure comes with what is plausible "
             "about it, next to published large runs (Megatron-LM, PaLM, Llama 3). Peaks are "
             "dense: a 2:4-sparsity peak halves the figure, a doubled FLOP count doubles it.")
    fields = ("model", "gpu", "measured_flops_per_token", "measured_global_batch",
              "measured_seq_len", "measured_steps", "measured_gpus", "measured_wall_clock_s",
              "measured_peak_tflops")

    def compute(self, s):
        from ..review import measured_utilization
        return measured_utilization(s, self.catalog)

    def _build(self):
        # here, not in __init__: a panel made only to compute (a landing card) makes no widget
        from .upload import FilePicker
        self.check_texts: dict = {}
        self.check_result = None
        self.check_pickers = {}
        for kind, (label, accept, hint) in CHECK_FILES.items():
            picker = FilePicker(lambda name, text, k=kind: self.load_check_file(k, name, text),
                                self._check_failed, label=label, accept=accept,
                                max_bytes=CHECK_MAX_BYTES, hint=hint)
            picker.add_class(f"llmc-check-{kind.replace('_', '-')}")
            self.check_pickers[kind] = picker
        self.check_note = make(W.HTML, "")
        self.check_note.add_class("llmc-check-findings")
        self.check_busbw = plot_widget()
        self.check_busbw.add_class("llmc-plot-check-busbw")
        self.check_steps = plot_widget()
        self.check_steps.add_class("llmc-plot-check-steps")
        intro = make(W.HTML, "<h3>Cluster check</h3><p>Upload what the cluster prints: "
                             "nccl-tests output, a training log, a DCGM scrape. Each is read "
                             "against the model for the GPU and model above (the fabric and "
                             "GPU count of the scenario; the log's own arguments where it "
                             "states them) and answered with findings.</p>")
        self.extra_widgets = [intro, make(W.HBox, list(self.check_pickers.values())),
                              self.check_note, self.check_busbw, self.check_steps]
        return super()._build()

    def refresh(self) -> bool:
        ok = super().refresh()
        if ok and getattr(self, "check_texts", None):
            # the uploads are read against the scenario: a changed GPU or model re-checks them
            self.run_check()
        return ok

    def load_check_file(self, kind: str, name: str, text: str) -> None:
        """An uploaded file: kept (replacing the last of its kind) and the check re-run."""
        self.check_texts[kind] = (name, text)
        self.run_check()

    def _check_failed(self, message: str) -> None:
        self.check_note.value = f"<span class='llmc-err'>{esc(message)}</span>"

    def check_scenario(self):
        """The run the uploads are read against: the app's scenario with the measured GPU
        count as its cluster."""
        return replace(self.scenario, gpus=int(self.scenario.measured_gpus))

    def run_check(self) -> dict | None:
        """The check of the files uploaded so far; a file that cannot be read is named with
        its problem, and the figures of the last good check are cleared."""
        from ..checks import check as chk, dcgm, nccl_tests, train_log
        texts = self.check_texts
        try:
            nccl = log = samples = None
            if "nccl_tests" in texts:
                name, text = texts["nccl_tests"]
                nccl = nccl_tests.read(text, name=name)
            if "train_log" in texts:
                log = train_log.read(texts["train_log"][1])
            if "dcgm" in texts:
                samples = dcgm.read(texts["dcgm"][1])
            out = chk.check(nccl, log, dcgm=samples, scenario=self.check_scenario(),
                            cat=self.catalog)
        except (ValueError, ArithmeticError) as e:
            which = ", ".join(n for n, _ in texts.values())
            self.check_result = None
            clear_figure(self.check_busbw)
            clear_figure(self.check_steps)
            self.check_note.value = (f"<span class='llmc-err'>Could not check {esc(which)}: "
                                     f"{esc(str(e))}</span>")
            return None
        self.check_result = out
        self.check_note.value = check_html(out)
        if out["collectives"]:
            show_figure(self.check_busbw, plots.cluster_busbw(out))
        else:
            clear_figure(self.check_busbw)
        if log is not None:
            st = out["steps"]
            show_figure(self.check_steps, plots.cluster_steps(
                log.step, log.step_time_s, st["predicted_step_time_s"],
                st["predicted_step_time_band_s"]))
        else:
            clear_figure(self.check_steps)
        return out

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


def check_html(out: dict) -> str:
    """The check's findings and figures as the page shows them (every text escaped)."""
    rows = "".join(f"<li class='llmc-finding-{esc(f['level'])}'><b>[{esc(f['level'])}]</b> "
                   f"{esc(f['what'])}: {esc(f['evidence'])}</li>" for f in out["findings"])
    st = out.get("steps")
    steps = ""
    if st:
        fig = {"median step": f"{st['median_step_s']:.3f} s" if st["median_step_s"] else "-",
               "tokens/s": f"{st['tokens_per_s']:,.0f}" if st["tokens_per_s"] else "-",
               "MFU": f"{st['mfu']:.1%}" if st["mfu"] is not None else "-",
               "predicted MFU": f"{st['predicted_mfu']:.1%}" if st["predicted_mfu"] else "-"}
        steps = "<p>" + "; ".join(f"{k}: {esc(x)}" for k, x in fig.items()) + "</p>"
    notes = "".join(f"<li>{esc(n)}</li>" for n in out["notes"] + out["assumptions"])
    return (f"<div><ul>{rows or '<li>no finding</li>'}</ul>{steps}"
            f"<details><summary>How it was read</summary><ul>{notes}</ul></details></div>")
