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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="llmcost", description="Numbers for an LLM training architecture review.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    def add(name: str, func: Callable, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        sp.set_defaults(func=func)
        return sp
    sp = add("flops", cmd_flops, "Parameters and training FLOPs of a model.")
    _args_flops(sp)
    sp = add("mfu", cmd_mfu, "Effective utilization of a measured run (the cluster guide's formula), "
                             "with plausibility findings.")
    _args_mfu(sp)
    sp = add("memory", cmd_memory, "Per-GPU memory of a layout, by component (GB = 1e9 bytes).")
    _args_memory(sp)
    sp = add("predict", cmd_predict, "Step time, MFU/HFU and memory of one layout, each term explained.")
    _args_predict(sp)
    sp = add("plan", cmd_plan, "Every layout evaluated and ranked; the best first.")
    _args_plan(sp)
    sp = add("breakeven", cmd_breakeven, "Months after which buying a node beats renting it.")
    _args_breakeven(sp)
    sp = add("spot", cmd_spot, "Net savings of spot over on-demand after preemptions.")
    _args_spot(sp)
    sp = add("checkpoint", cmd_checkpoint, "Optimal checkpoint interval (Young, Daly) and goodput.")
    _args_checkpoint(sp)
    sp = add("size", cmd_size, "GPUs and nodes to train within a target number of days, and cost.")
    _args_size(sp)
    sp = add("ladder", cmd_ladder, "The fine-tune ladder of the infrastructure overview ('LLM "
                                   "Training Infrastructure'): adapt, QLoRA, LoRA, full "
                                   "fine-tune, pretraining; GPUs, hours and dollars, cheapest first.")
    _args_ladder(sp)
    sp = add("review", cmd_review, "The whole review of a scenario: days, layout, MFU, "
                                   "reliability and the cash cost of each pricing option.")
    _args_review(sp)
    sp = add("storage", cmd_storage, "Checkpoint size, stalls, upload, durable interval, "
                                     "goodput and data read rate of a scenario.")
    _args_storage(sp)
    sp = add("serve", cmd_serve, "Serving a model: memory, TTFT, TPOT, output tokens/s per "
                                 "GPU and $ per million tokens; the best layout under limits.")
    _args_serve(sp)
    sp = add("compare", cmd_compare, "One run on every GPU with an offer, each offer and each "
                                     "option: forecast days and band, cost, $ per million "
                                     "tokens; each row the review for its GPU and offer.")
    _args_compare(sp)
    sp = add("check", cmd_check, "Is the cluster delivering: nccl-tests output and a training "
                                 "log against the model's expectations, with findings.")
    _args_check(sp)
    sp = add("list", cmd_list, "List a catalog table.")
    _args_list(sp)
    return p
