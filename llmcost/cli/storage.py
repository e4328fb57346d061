"""``llmcost storage``: checkpoint and data-read figures of a reviewed scenario."""

from __future__ import annotations

import argparse

from .scenarios import _compared, _scenarios_from_args


def cmd_storage(a) -> dict:
    """Checkpoint and data-read figures of a reviewed scenario (the same Results)."""
    from ..review import evaluate
    from ..review.storage_view import storage_summary
    scenarios, cat, notes = _scenarios_from_args(a)
    out = [storage_summary(evaluate(s, cat)) for s in scenarios]
    if len(out) == 1:
        out[0]["warnings"] = notes
        return out[0]
    return _compared(out, notes)


def _args_storage(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost storage``."""
    sp.add_argument("--query", help='the apps\' query string, e.g. '
                                    '"model=llama3-405b&gpus=16384&checkpoint_mode=async"')
    sp.add_argument("--scenario", help="a scenario file saved by an app (JSON)")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: that model's checkpoints and reads")
