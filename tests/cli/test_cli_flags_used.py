"""Property: no flag is accepted and ignored.

For every subcommand, a valid call is run once as it is and once more with each of its other
flags added (every flag argparse declares: a new flag is covered without editing this file),
with several values each. Every added flag either is refused (exit 2, one line naming a flag
the user typed, checked in test_cli_robust) or changes the answer. The answer is compared
with the flag's own echo taken out (a key named like the flag, and the layout's one-line
description), so a flag that is only repeated back, and never used, fails.
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path

import pytest
from cli.test_cli_robust import BASE, SUBPARSERS, run_cli

from llmcost import catalog
from llmcost.cli import build_parser
from llmcost.training import stacks

CAT = catalog.default()
HF = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


#: values to try by flag, where the generic ones by type would not be in range or in the
#: catalog; every value differs from the baseline's (explicit or default) value
BY_DEST = {
    "model": ["llama3-70b"],
    "model_config": [str(HF / "qwen3-8b.json")],
    "gpu": ["a100-80gb", "b200"],
    "fabric": ["roce-200", "ib-hdr"],
    "price": [r for r in CAT.ids("prices")][:2],
    "failure_rate": ["kokolis-a100-jobs"],        # not the H100 default
    "recompute_modules": ["layernorm"],
    "loss": ["fp32"],                       # the baselines run the megatron stack: fused
    "scenario": [],                         # a file of the same query; covered in test_scenario
    "query": [],
    "layers": ["16"], "hidden": ["2048"], "heads": ["16"], "kv_heads": ["4"],
    "ffn_hidden": ["5632"], "vocab": ["50000"], "seq_len": ["2048"],
}
INT_VALUES = ["2", "4", "3"]
FLOAT_VALUES = ["0.5", "2.0", "30.0"]
#: cases in make test-grid only: the ladder's pre-training rung sized to half a day sizes
#: every cluster up to the catalog's largest (14 s); the flag's other values stay in make test
GRID_CASES = {("ladder", "--pretrain-days", "0.5")}


@functools.lru_cache(maxsize=None)
def base_answer(command: str) -> str:
    """The base call's JSON, run once per subcommand (every added flag compares with it)."""
    code, out, err = run_cli([command, *BASE[command], "--json"])
    assert code == 0, err
    return out


def _dest_keys(action):
    return {action.dest, action.dest.replace("_", "-")}


def _strip(obj, keys):
    """The answer without the flag's own echo."""
    if isinstance(obj, dict):
        return {k: _strip(x, keys) for k, x in obj.items()
                if k not in keys and k != "description"}
    if isinstance(obj, list):
        return [_strip(x, keys) for x in obj]
    return obj


def _cases():
    for command, base in sorted(BASE.items()):
        given = {a for a in base if a.startswith("--")}
        for action in SUBPARSERS[command]._actions:
            if isinstance(action, argparse._HelpAction) or not action.option_strings:
                continue
            flag = action.option_strings[-1]
            if action.dest == "json" or given & set(action.option_strings):
                continue
            if action.nargs == 0:
                values = [None]
            elif action.dest in BY_DEST:
                values = BY_DEST[action.dest]
            elif action.choices is not None:
                values = [str(c) for c in action.choices if c != action.default]
            elif action.type is int:
                values = [x for x in INT_VALUES if int(x) != action.default]
            elif action.type is float:
                values = [x for x in FLOAT_VALUES if float(x) != action.default]
            else:
                values = []
            for x in values:
                marks = [pytest.mark.grid] if (command, flag, x) in GRID_CASES else []
                yield pytest.param(command, action, x, marks=marks,
                                   id=f"{command}{flag}" + (f"={x}" if x else ""))


def test_the_cases_cover_every_subcommand():
    assert set(BASE) == set(SUBPARSERS)
    assert len(list(_cases())) > 200


@pytest.mark.slow
@pytest.mark.parametrize("command, action, value", list(_cases()))
def test_an_added_flag_is_refused_or_changes_the_answer(command, action, value):
    base = [command, *BASE[command], "--json"]
    out = base_answer(command)
    flag = action.option_strings[-1]
    argv = base + ([flag] if value is None else [f"{flag}={value}"])
    code2, out2, err2 = run_cli(argv)
    if code2 == 2:
        assert err2.startswith("llmcost: error:") and out2 == ""
        return
    assert code2 == 0, err2
    keys = _dest_keys(action)
    before, after = _strip(json.loads(out), keys), _strip(json.loads(out2), keys)
    if command == "memory" and action.dest == "stack":
        # a stack that holds memory as the default one does answers the same figures, and
        # says so (memory_model)
        same = stacks.stack(value).memory == stacks.stack(action.default).memory
        assert (after == before) == same, (flag, value)
        assert json.loads(out2)["memory_model"] == stacks.stack(value).memory
        return
    assert after != before, f"{flag}={value} accepted and ignored by `llmcost {command}`"
