"""Sizing and layout: GPUs for a target date, ranked layouts, scaling, the fine-tune ladder,
and a user's measured scaling curve."""

from __future__ import annotations

import io

import ipywidgets as W
import pandas as pd

from .. import plots
from ..training.scaling import analyse_measured_scaling
from .base import TRAINING_RUN_CONTROLS, ReviewPanel
from .plotview import clear_figure, plot_widget, show_figure
from .shared import make
from .text import esc

#: column -> (lowest, highest) a measured-scaling row may give: node and GPU counts within
#: the GPUs a scenario takes (Scenario.gpus, 131,072), batch and sequence length within the
#: measured-run fields (1e7), throughput within 131,072 GPUs x 1e7 tokens/s (above any GPU
#: on any model: an H100 trains an 8B model at ~1e4 tokens/s)
MEASURED_RANGES = {"nodes": (1, 131_072), "gpus": (1, 131_072),
                   "tokens_per_s": (1e-9, 131_072 * 1e7), "step_time_s": (1e-9, 1e9),
                   "global_batch": (1, 1e7), "seq_len": (1, 1e7)}
#: the most rows a measured-scaling CSV is read with (a scaling study has a few dozen)
MAX_MEASURED_ROWS = 10_000
#: the largest measured-scaling CSV read: 10,000 rows of a few columns are ~1 MB
MAX_SCALING_CSV_BYTES = 2_000_000


def read_measured_csv(text: str) -> pd.DataFrame:
    """A measured-scaling CSV, each number checked: a value that is not a number, not finite
    or beyond :data:`MEASURED_RANGES` is refused by its row (as a spreadsheet numbers it, the
    header being row 1) and column."""
    df = pd.read_csv(io.StringIO(text), dtype=str, nrows=MAX_MEASURED_ROWS + 1)
    if len(df) > MAX_MEASURED_ROWS:
        raise ValueError(f"more than {MAX_MEASURED_ROWS:,} rows: a scaling study has a few dozen")
    df.columns = [str(c).strip() for c in df.columns]
    for col, (lo, hi) in MEASURED_RANGES.items():
        if col not in df:
            continue
        for i, raw in enumerate(df[col]):
            where = f"row {i + 2}, column {col}"
            try:
                x = float(str(raw).strip())
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"{where}: expected a number, got {str(raw)[:40]!r}") from None
            if not lo <= x <= hi:       # NaN and infinities fail this too
                raise ValueError(f"{where}: {str(raw).strip()[:40]} is outside {lo:g} to {hi:,.6g}")
        df[col] = df[col].astype(float)
    return df


class SizingApp(ReviewPanel):
    name = "sizing"
    title = "Sizing and layout"
    question = ("How large a cluster meets the target date, which layouts fit, and how does "
                "throughput scale on each fabric?")
    order = 10
    card_keys = ("gpus", "days")
    intro = ("GPUs, days and dollars for the run; the planner's ranked layouts and their memory; "
             "predicted scaling by fabric; the fine-tune ladder (adapt a hosted model, QLoRA, "
             "LoRA, full fine-tune, pretrain), cheapest first. Upload your own measured throughput at several node "
             "counts (CSV with columns nodes, tokens_per_s) to see efficiency, the fitted "
             "communication share and where the curve breaks.")
    fields = TRAINING_RUN_CONTROLS + ("headroom", "max_power_mw", "price_source",
                                      "on_demand_usd_per_gpu_hour", "finetune_tokens")
    sliders = ("headroom",)
    headline_keys = ("gpus", "days", "cost_on_demand_usd", "mfu", "memory_gb_per_gpu",
                     "best_layout", "meets_target")

    def _build(self):
        # here, not in __init__: a panel made only to compute (a landing card) makes no widget
        from .upload import FilePicker
        # a plain label ("Measured scaling CSV"), not FileUpload's counted one, cut at 1400 px
        self.scaling_upload = FilePicker(
            lambda name, text: self._on_scaling({"new": [{"name": name,
                                                          "content": memoryview(text.encode())}]}),
            self._scaling_failed, label="Measured scaling CSV", accept=".csv",
            max_bytes=MAX_SCALING_CSV_BYTES, hint="nodes (or gpus) and tokens_per_s per row")
        self.scaling_upload.add_class("llmc-scaling-upload")
        self.scaling_note = make(W.HTML, "")
        self.scaling_note.add_class("llmc-scaling-note")
        self.scaling_out = plot_widget()
        self.scaling_out.add_class("llmc-plot-measured")
        self.extra_widgets = [make(W.HBox, [self.scaling_upload]), self.scaling_note, self.scaling_out]
        return super()._build()

    def headline(self, res):
        out = super().headline(res)
        if res.size is not None and res.size.sizing.memory_floor_gpus:
            out["floor"] = ("Memory floor (GPUs)", f"{res.size.sizing.memory_floor_gpus:,}", None)
        return out

    figures_from = (("days", plots.sizing_curve), ("layouts", "_layouts"),
                    ("memory", plots.memory_stack), ("scaling", plots.scaling),
                    ("ladder", plots.ladder_table))

    def _layouts(self, res):
        # each layout as the headline's string: the key under "Best layout" explains it, and
        # one text column fits a 1,100 px page where a column per field did not
        from ..training.layout import describe_layout
        rows = res.plan.layouts.copy()
        rows["layout"] = [describe_layout(r) for r in rows.to_dict("records")]
        rows["fits"] = rows["fits"].map(lambda x: "yes" if bool(x) else "no")
        cols = {"layout": ("layout (key under Best layout)", "{}"),
                "step_time_s": ("step time [s]", "{:.3f}"), "mfu": ("MFU", "{:.1%}"),
                "memory_gb": ("memory per GPU [GB]", "{:.1f}"), "fits": ("fits", "{}")}
        return plots.frame_table(rows, f"Best layouts on {res.plan.gpus:,} GPUs", cols,
                                 widths=[40, 9, 8, 10, 5])

    def analyse_csv(self, text: str):
        df = read_measured_csv(text)
        top = int(df["nodes"].max())
        return analyse_measured_scaling(df, target_nodes=[top * 2, top * 4])

    def _scaling_failed(self, message: str) -> None:
        self.measured = None
        clear_figure(self.scaling_out)
        self.scaling_note.value = f"<span class='llmc-err'>Could not read the CSV: {esc(message)}</span>"

    def _on_scaling(self, change):
        files = change["new"]
        if not files:
            return
        item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        try:
            res = self.analyse_csv(bytes(item["content"]).decode("utf-8", errors="replace"))
        except (ValueError, KeyError, TypeError, ArithmeticError, pd.errors.ParserError) as e:
            # this file's error replaces whatever the last upload said, and its curve
            self._scaling_failed(str(e))
            return
        warn = "".join(f"<li>{esc(w)}</li>" for w in res.warnings) or "<li>no cliff: gradual</li>"
        self.scaling_note.value = (f"<div>Fitted communication share: {res.comm_share_per_doubling:.1%} "
                                   f"per doubling of nodes.<ul>{warn}</ul></div>")
        show_figure(self.scaling_out, plots.measured_scaling(res))
        self.measured = res
