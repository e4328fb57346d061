"""Flags refused rather than ignored: a flag the chosen mode does not read, a numeric flag
out of range, and the error line that names a flag the user gave."""

from __future__ import annotations

import math

from .. import _validate as v
from ..scenario import FIELDS as SCENARIO_FIELDS
from .common import _flag

#: (command, the flag that picks a mode, the flags that mode does not read): given together,
#: the second is refused rather than silently ignored
IGNORED_WITH = (
    ("mfu", "flops_per_token", ("model", "model_config", "layers", "hidden", "heads", "kv_heads",
                                "ffn_hidden", "gated_ffn", "vocab")),
    ("checkpoint", "mtbf_h", ("gpus", "nodes", "gpus_per_node", "failures_per_1000_gpu_days",
                              "node_failures_per_1000_node_days", "failure_rate", "gpu")),
    ("spot", "lost_hours_per_preemption", ("checkpoint_interval_s", "checkpoint_s")),
)


#: ``check``'s flags that one pasted input reads: flag -> (that input's flag, what the flag is
#: to it)
CHECK_INPUT_FLAGS = {
    "nccl_op": ("nccl_tests", ""), "nodes": ("nccl_tests", "the nccl-tests placement: "),
    "gpus_per_node": ("nccl_tests", "the nccl-tests placement: "),
    "nics_per_node": ("nccl_tests", "the nccl-tests fabric: "),
    "model": ("train_log", "the training log's model: "),
    "model_config": ("train_log", "the training log's model: "),
}

#: (commands, flag, whether the call reads it, why not): a flag the call does not read is
#: refused rather than silently ignored
NEEDS = (
    (("memory", "predict"), "first_stage_layers", lambda a: (a.pp or 1) > 1,
     "--first-stage-layers needs --pp above 1 (one stage holds every layer)"),
    (("memory", "predict"), "last_stage_layers", lambda a: (a.pp or 1) > 1,
     "--last-stage-layers needs --pp above 1 (one stage holds every layer)"),
    (("memory", "predict"), "interleave", lambda a: (a.pp or 1) > 1,
     "--interleave needs --pp above 1 (virtual stages split a pipeline stage)"),
    (("memory",), "lora_rank", lambda a: a.finetune == "lora",
     "--lora-rank is used only with --finetune lora"),
    (("checkpoint",), "gpus_per_node",
     lambda a: a.nodes is not None or a.node_failures_per_1000_node_days is not None,
     "--gpus-per-node is used only with --nodes or --node-failures-per-1000-node-days"),
    (("checkpoint",), "gpu",
     lambda a: a.failure_rate is None and a.failures_per_1000_gpu_days is None
     and a.node_failures_per_1000_node_days is None,
     "--gpu picks the default failure rate of its generation: not used with a failure rate "
     "given"),
    (("check",), "gpu", lambda a: a.nccl_tests is not None,
     "--gpu is the nccl-tests hardware: used only with --nccl-tests (a training log's GPU "
     "is the query's gpu=)"),
    (("check",), "fabric", lambda a: a.nccl_tests is not None and a.gpu is not None,
     "--fabric goes with --nccl-tests and --gpu (with --query alone the fabric is its fabric=)"),
    *((("check",), dest, lambda a, given=given: getattr(a, given) is not None,
       f"{_flag(dest)} is {what}used only with {_flag(given)}")
      for dest, (given, what) in CHECK_INPUT_FLAGS.items()),
    (("check",), "query",
     lambda a: a.train_log is not None or (a.nccl_tests is not None and a.gpu is None),
     "--query is read for --train-log, or for --nccl-tests without --gpu (with --gpu the "
     "hardware is --gpu's)"),
    (("spot",), "billed_share_during_wait", lambda a: bool(a.capacity_wait_h),
     "--billed-share-during-wait is used only with --capacity-wait-h above 0"),
    (("spot",), "failure_lost_hours",
     lambda a: bool(a.failures_per_day),
     "--failure-lost-hours is used only with --failures-per-day above 0"),
)


#: numeric flags whose range includes negative values (a saving can be a loss)
NEGATIVE_OK = {"observed_net_savings"}


def _typed(parser, a) -> list:
    """The optional flags of ``a.command`` given a value other than their default, by dest."""
    sub = parser._subparsers._group_actions[0].choices[a.command]
    return [x.dest for x in sub._actions
            if x.option_strings and x.dest not in ("help", "json")
            and getattr(a, x.dest, None) != x.default]


def _check_flags(parser, a) -> list:
    """Refuse a flag the chosen mode ignores (naming both flags). Returns the flags given."""
    typed = _typed(parser, a)
    for command, mode, ignored in IGNORED_WITH:
        if a.command == command and mode in typed:
            for dest in ignored:
                if dest in typed:
                    raise v.InputError(dest, f"{_flag(dest)} is not used with {_flag(mode)}: give "
                                             "one or the other")
    if a.command == "spot" and "run_hours" in typed and not a.monte_carlo_runs:
        raise v.InputError("run_hours", "--run-hours is used only with --monte-carlo-runs")
    for commands, dest, reads, why in NEEDS:
        if a.command in commands and dest in typed and not reads(a):
            raise v.InputError(dest, why)
    a.typed = typed
    return typed


def _check_ranges(a, typed) -> None:
    """Refuse a numeric flag out of range whether or not the mode read it: finite, and not
    negative but where a negative value means something. Run after the command, so that a
    flag it reads is refused by its own, narrower check first."""
    for dest in typed:
        x = getattr(a, dest)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            if dest in NEGATIVE_OK:
                v.as_float(_flag(dest), x)
            else:
                v.nonnegative(_flag(dest), x)


def _named(msg: str, e, a, typed) -> str:
    """The error line naming a flag the user gave: the flag of the parameter the error names
    (prefixed if the message does not say it), else the flags given."""
    param = getattr(e, "param", None)
    if a is None or not typed or param == "arguments":
        return msg
    if param in typed:
        flag = _flag(param)
        return msg if flag in msg else f"{flag}: {msg}"
    if a.command in ("review", "storage") and param in SCENARIO_FIELDS and param in msg:
        return msg
    if any(_flag(d) in msg for d in typed):
        return msg
    return f"{msg} (from {', '.join(_flag(d) for d in typed[:6])})"


def _extreme(a, typed) -> str:
    """The numeric flags given, farthest from 1 in decades first (the likeliest to take the
    arithmetic out of range), as the user typed them; "their ranges" if none."""
    nums = [(d, getattr(a, d)) for d in typed if isinstance(getattr(a, d), (int, float))
            and not isinstance(getattr(a, d), bool)]
    if not nums:
        return "their ranges"

    def decades(x):
        try:
            y = abs(float(x))
        except OverflowError:               # an integer beyond float's range
            return math.inf
        return abs(math.log10(y or 1e-300)) if math.isfinite(y) else math.inf

    nums.sort(key=lambda dx: -decades(dx[1]))
    return ", ".join(f"{_flag(d)}={str(x)[:24]}" for d, x in nums[:3])
