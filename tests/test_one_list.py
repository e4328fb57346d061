"""One list per concept: the training stacks, the precisions, the layout fields and the landing
apps are each declared once; every entry point (the Scenario, the CLI, the step and memory
models, the planner's and the sizing tables, the workbook server) holds that same object, so
adding a stack or a precision in one place offers it everywhere."""

from __future__ import annotations

import argparse
from dataclasses import fields

from llmcost import scenario
from llmcost.cli import build_parser
from llmcost.economics import sizing
from llmcost.server import app as server_app
from llmcost.server import extension, handlers
from llmcost.training import memory, planner, precision, stacks, step
from llmcost.training.layout import Layout


def _choices(flag: str) -> list:
    """The ``choices`` object of ``flag`` in every subcommand that takes it."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a.choices for p in sub.choices.values() for a in p._actions
            if flag in a.option_strings]


def test_stacks_are_one_object():
    assert step.STACKS is stacks.NAMES and memory.MEMORY_STACKS is stacks.NAMES
    cli = _choices("--stack")
    assert cli and all(c is stacks.NAMES for c in cli)
    # the Scenario adds "auto" (no stack named) in front of the same names
    assert tuple(scenario.FIELDS["stack"].metadata["options"][1:]) == stacks.NAMES


def test_precisions_are_one_object():
    assert scenario.FIELDS["precision"].metadata["options"] is precision.PRECISIONS
    cli = _choices("--precision")
    assert cli and all(c is precision.PRECISIONS for c in cli)


def test_layout_columns_follow_the_layout_fields():
    names = [f.name for f in fields(Layout)]
    for table in (planner.FRAME_LAYOUT_COLUMNS, sizing.LAYOUT_KEYS):
        own = [c for c in table if c in names]
        assert own == [n for n in names if n in table]       # the declared order
        # the rest are Layout's own derived properties (dp, num_microbatches), not a list
        assert all(isinstance(getattr(Layout, c), property) for c in table if c not in names)


def test_landing_apps_are_one_list():
    assert server_app.LANDING is handlers.LANDING
    assert extension.LANDING == [f"notebooks/{n}" for n in handlers.LANDING] + list(handlers.LANDING)
