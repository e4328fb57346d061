"""Effective utilization (MFU) of a measured run, against published large runs; and the
cluster check: a cluster's own nccl-tests output, training log and DCGM scrape,
uploaded and read against the model."""

from __future__ import annotations

import shlex
from dataclasses import replace

import ipywidgets as W

from .. import plots
from ..checks.check import PLACEMENT_KEYS, typed_keys
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
        # the placement where nccl-tests output does not show it (0: not given), as
        # `llmcost check --nodes/--gpus-per-node/--nics-per-node` take it
        self.check_placement = {}
        for key, words in PLACEMENT_KEYS.items():
            box = make(W.BoundedIntText, value=0, min=0, max=1_000_000, description=words,
                       tooltip=f"{words} of the nccl-tests run; 0: as its Rank lines show",
                       layout={"width": "210px"}, style={"description_width": "initial"})
            box.add_class(f"llmc-check-{key.replace('_', '-')}")
            box.observe(lambda _c: self.check_texts and self.run_check(), names="value")
            self.check_placement[key] = box
        self.check_note = make(W.HTML, "")
        self.check_note.add_class("llmc-check-findings")
        self.check_busbw = plot_widget()
        self.check_busbw.add_class("llmc-plot-check-busbw")
        self.check_steps = plot_widget()
        self.check_steps.add_class("llmc-plot-check-steps")
        intro = make(W.HTML, "<h3>Cluster check</h3><p>Upload what the cluster prints: "
                             "nccl-tests output, a training log, a DCGM scrape. Each is read "
                             "against the GPU and fabric above, the model you set above or the "
                             "one the log prints (none stands in for it), the GPUs you set "
                             "above or the log's own arguments, and answered with findings. "
                             "Where nccl-tests output has no Rank lines, say how its ranks are "
                             "placed.</p>")
        placement_hint = make(W.HTML, "<span class='llmc-hint'>nccl-tests placement (0: as "
                                      "its Rank lines show it):</span>")
        self.extra_widgets = [intro, make(W.HBox, list(self.check_pickers.values())),
                              make(W.HBox, [placement_hint, *self.check_placement.values()]),
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

    def check_query(self) -> str:
        """The query the uploads are checked with, as ``llmcost check --query`` takes it:
        the keys set on the page, and the measured run's GPU count as ``gpus`` where it was
        set (the log's own count otherwise)."""
        q = self.scenario.to_query()
        typed = typed_keys(q)
        if "measured_gpus" in typed and "gpus" not in typed:
            q += f"&gpus={int(self.scenario.measured_gpus)}"
        return q

    def check_scenario(self):
        """The run the uploads are read against: the scenario of :meth:`check_query`."""
        if "gpus" in typed_keys(self.check_query()) and "gpus" not in typed_keys(
                self.scenario.to_query()):
            return replace(self.scenario, gpus=int(self.scenario.measured_gpus))
        return self.scenario

    def check_placement_values(self) -> dict:
        """nodes, gpus_per_node, nics_per_node as given (None: 0, not given)."""
        return {k: (int(b.value) or None) for k, b in getattr(self, "check_placement",
                                                               {}).items()}

    def check_command(self) -> str:
        """The same check on the command line, with the uploaded files' names."""
        flags = {"nccl_tests": "--nccl-tests", "train_log": "--train-log", "dcgm": "--dcgm"}
        parts = ["llmcost", "check", "--query", shlex.quote(self.check_query())]
        for kind, (name, _) in self.check_texts.items():
            parts += [flags[kind], shlex.quote(name)]
        for key, x in self.check_placement_values().items():
            if x is not None:
                parts += ["--" + key.replace("_", "-"), str(x)]
        return " ".join(parts)

    def run_check(self) -> dict | None:
        """The check of the files uploaded so far; a file that cannot be read is named with
        its problem, and the figures of the last good check are cleared."""
        from ..checks import check as chk
        from ..checks import train_log
        texts = self.check_texts
        try:
            out = chk.check_texts(chk.Pasted(texts.get("nccl_tests"), texts.get("train_log"),
                                             texts.get("dcgm")), scenario=self.check_scenario(),
                                  query=self.check_query(), cat=self.catalog,
                                  placement=chk.Placement(**self.check_placement_values()))
            log = train_log.read(texts["train_log"][1]) if "train_log" in texts else None
        except (ValueError, ArithmeticError) as e:
            which = ", ".join(n for n, _ in texts.values())
            self.check_result = None
            clear_figure(self.check_busbw)
            clear_figure(self.check_steps)
            self.check_note.value = (f"<span class='llmc-err'>Could not check {esc(which)}: "
                                     f"{esc(str(e))}</span>")
            return None
        self.check_result = out
        self.check_note.value = check_html(out, self.check_command())
        if out["collectives"]:
            show_figure(self.check_busbw, plots.cluster_busbw(out))
        else:
            clear_figure(self.check_busbw)
        if log is not None:
            st = out["steps"]
            show_figure(self.check_steps, plots.cluster_steps(
                log.step, log.step_time_s, st.get("predicted_step_time_s"),
                st.get("predicted_step_time_band_s")))
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
        # the Scenario's example run, until a figure of the user's own is entered
        what = "Example run's" if res.example else "Measured"
        # above the peak is no utilization: said, never shown as a figure over 100%
        shown = f"{u:.1%}" if u <= 1 else f"above 100% of peak ({u:.3g} x): check the figures"
        return {"effective_utilization": (f"{what} effective utilization", shown, flag),
                "achieved_tflops": ("Achieved TFLOP/s per GPU", f"{res.achieved_tflops_per_gpu:,.0f}"),
                "tokens_per_s": ("Tokens per second", f"{res.tokens_per_s:,.0f}"),
                "peak": ("Peak used (TFLOP/s)", f"{res.peak_tflops:,.1f}"),
                "hfu": ("HFU if fully recomputed", f"{res.hfu_if_full_recompute:.1%}"
                        if res.hfu_if_full_recompute <= 1 else "above 100% of peak"),
                "run": (("Example run (enter your run's figures)" if res.example
                         else "Measured run"), measured_run_text(res))}

    def note_lines(self, res):
        return [f"[{f.level}] {f.message}" for f in res.findings] or ["plausible: within published ranges"]

    figures_from = (("published", "_published"),)

    def _published(self, res):
        fig = plots.utilization_vs_published(res, self.catalog.published_runs())
        u = res.effective_utilization
        fig.update_layout(title=(f"Your run: {u:.1%} of dense peak, vs published runs" if u <= 1
                                 else "Your run: above 100% of dense peak (not plotted), vs "
                                      "published runs"))
        return fig


def check_html(out: dict, command: str = "") -> str:
    """The check's findings and figures as the page shows them (every text escaped), and
    the same check on the command line."""
    rows = "".join(f"<li class='llmc-finding-{esc(f['level'])}'><b>[{esc(f['level'])}]</b> "
                   f"{esc(f['what'])}: {esc(f['evidence'])}</li>" for f in out["findings"])
    st = out.get("steps")
    steps = ""
    if st:
        fig = {"median step": f"{st['median_step_s']:.3f} s" if st["median_step_s"] else "-",
               "tokens/s": f"{st['tokens_per_s']:,.0f}" if st["tokens_per_s"] else "-",
               "MFU": f"{st['mfu']:.1%}" if st["mfu"] is not None else "-",
               "predicted MFU": f"{st['predicted_mfu']:.1%}" if st.get("predicted_mfu") else "-"}
        if st.get("tokens_per_s_per_gpu"):
            fig["tokens/s per GPU (the log's)"] = f"{st['tokens_per_s_per_gpu']:,.0f}"
        if st.get("log_mfu") is not None:
            fig["MFU the log prints"] = f"{st['log_mfu']:.1%}"
        steps = "<p>" + "; ".join(f"{esc(k)}: {esc(x)}" for k, x in fig.items()) + "</p>"
    notes = "".join(f"<li>{esc(n)}</li>" for n in out["notes"] + out["assumptions"])
    cli = (f"<p class='llmc-check-command'>The same check: <code>{esc(command)}</code></p>"
           if command else "")
    return (f"<div><ul>{rows or '<li>no finding</li>'}</ul>{steps}"
            f"<details><summary>How it was read</summary><ul>{notes}</ul></details>{cli}</div>")
