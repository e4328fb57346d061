"""The argument parser: every subcommand with its flags and the function that answers it."""

from __future__ import annotations

import argparse
from typing import Callable

from .. import _validate as v
from .breakeven import _args_breakeven, cmd_breakeven
from .check import _args_check, cmd_check
from .checkpoint import _args_checkpoint, cmd_checkpoint
from .compare import _args_compare, cmd_compare
from .flops import _args_flops, cmd_flops
from .ladder import _args_ladder, cmd_ladder
from .listing import _args_list, cmd_list
from .memory import _args_memory, cmd_memory
from .mfu import _args_mfu, cmd_mfu
from .plan import _args_plan, cmd_plan
from .predict import _args_predict, cmd_predict
from .review import _args_review, cmd_review
from .serve import _args_serve, cmd_serve
from .size import _args_size, cmd_size
from .spot import _args_spot, cmd_spot
from .storage import _args_storage, cmd_storage


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage, so every error is one line."""

    def error(self, message):  # noqa: D401 - argparse API
        raise v.InputError("arguments", message)


#: every subcommand: its name, the function that answers it, the function that adds its
#: flags, and its one-line help (also its description)
SUBCOMMANDS: tuple[tuple[str, Callable, Callable[[argparse.ArgumentParser], None], str], ...] = (
    ("flops", cmd_flops, _args_flops,
     "Parameters and training FLOPs of a model."),
    ("mfu", cmd_mfu, _args_mfu,
     "Effective utilization of a measured run (the cluster guide's formula), "
     "with plausibility findings."),
    ("memory", cmd_memory, _args_memory,
     "Per-GPU memory of a layout, by component (GB = 1e9 bytes)."),
    ("predict", cmd_predict, _args_predict,
     "Step time, MFU/HFU and memory of one layout, each term explained."),
    ("plan", cmd_plan, _args_plan,
     "Every layout evaluated and ranked; the best first."),
    ("breakeven", cmd_breakeven, _args_breakeven,
     "Months after which buying a node beats renting it."),
    ("spot", cmd_spot, _args_spot,
     "Net savings of spot over on-demand after preemptions."),
    ("checkpoint", cmd_checkpoint, _args_checkpoint,
     "Optimal checkpoint interval (Young, Daly) and goodput."),
    ("size", cmd_size, _args_size,
     "GPUs and nodes to train within a target number of days, and cost."),
    ("ladder", cmd_ladder, _args_ladder,
     "The fine-tune ladder of the infrastructure overview ('LLM "
     "Training Infrastructure'): adapt, QLoRA, LoRA, full "
     "fine-tune, pretraining; GPUs, hours and dollars, cheapest first."),
    ("review", cmd_review, _args_review,
     "The whole review of a scenario: days, layout, MFU, "
     "reliability and the cash cost of each pricing option."),
    ("storage", cmd_storage, _args_storage,
     "Checkpoint size, stalls, upload, durable interval, "
     "goodput and data read rate of a scenario."),
    ("serve", cmd_serve, _args_serve,
     "Serving a model: memory, TTFT, TPOT, output tokens/s per "
     "GPU and $ per million tokens; the best layout under limits."),
    ("compare", cmd_compare, _args_compare,
     "One run on every GPU with an offer, each offer and each "
     "option: forecast days and band, cost, $ per million "
     "tokens; each row the review for its GPU and offer."),
    ("check", cmd_check, _args_check,
     "Is the cluster delivering: nccl-tests output and a training "
     "log against the model's expectations, with findings."),
    ("list", cmd_list, _args_list,
     "List a catalog table."),
)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="llmcost", description="Numbers for an LLM training architecture review.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, func, add_flags, help_ in SUBCOMMANDS:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        sp.set_defaults(func=func)
        add_flags(sp)
    return p
