"""Property: every valid scenario is answered, or refused by the user's own setting, and no
given layout key is dropped.

Hypothesis draws a catalog model and GPU, 8-32,768 GPUs (mostly whole nodes, some not),
1e9-3e13 tokens and up to four of the layout keys a link may give (tp, pp, vp, cp, ep,
micro_batch, zero, recompute, first/last_stage_layers, global_batch_tokens). Each scenario is
either answered, with a layout and finite days, every given key's value in that layout (a
given batch: its whole sequences, or the nearby batch the review says it moved to), or refused
with an InputError that names a key the scenario set, and never blames the GPU count ("use a
GPU count that is a multiple of 8") when the GPUs are whole nodes; the command line prints
the refusal in one line and exits 2. ``make test`` draws ``budget.examples(300)`` of them,
derandomized (tests/conftest.py); ``make test-grid`` all 300.
"""

from __future__ import annotations

import contextlib
import io
import math

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import CUSTOM_MODE, Scenario
from llmcost.training.layout import LINK_KEYS

CAT = catalog.default()
MODELS = CAT.ids("models")
GPUS = CAT.ids("gpus")
#: the advice the review gave where a batch could not split over whole nodes
GPU_COUNT_ADVICE = "use a GPU count that is a multiple of"
#: the limits a review names (results.MfuLimit)
LIMITS = {"batch", "bubble", "bandwidth", "memory", "compute"}

#: values a link may give each layout key: the usual ones and some that cannot work
LAYOUT_VALUES = {
    "tp": st.sampled_from([1, 2, 4, 8, 16, 3]),
    "pp": st.sampled_from([1, 2, 4, 8, 16, 3, 5]),
    "vp": st.sampled_from([1, 2, 4, 3]),
    "cp": st.sampled_from([1, 2, 4]),
    "ep": st.sampled_from([1, 2, 8, 16, 64, 3]),
    "micro_batch": st.sampled_from([1, 2, 4, 8]),
    "zero": st.sampled_from(["0", "1", "2", "3"]),
    "recompute": st.sampled_from(["none", "selective", "full"]),
    "first_stage_layers": st.integers(1, 24),
    "last_stage_layers": st.integers(1, 24),
    "global_batch_tokens": st.floats(3.0103, 9.0).map(lambda x: float(f"{10 ** x:.4g}")),
}


@st.composite
def links(draw) -> dict:
    d = {"model": draw(st.sampled_from(MODELS)), "gpu": draw(st.sampled_from(GPUS)),
         "gpus": draw(st.one_of(st.integers(1, 4096).map(lambda n: 8 * n),
                                st.sampled_from([2 ** k for k in range(3, 16)]),
                                st.integers(8, 32768))),
         "tokens": float(f"{10 ** draw(st.floats(9.0, math.log10(3e13))):.3g}")}
    for key in draw(st.lists(st.sampled_from(sorted(LAYOUT_VALUES)), max_size=4, unique=True)):
        d[key] = draw(LAYOUT_VALUES[key])
    return d


def set_keys(d: dict) -> set:
    """The settings a link with these keys sets: its keys and the modes they imply."""
    return set(d) | {CUSTOM_MODE[k][0] for k in d if k in CUSTOM_MODE}


def cli(query: str):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["review", "--json", "--query", query])
    return code, out.getvalue(), err.getvalue()


def check(d: dict) -> str:
    """Review one link; "answered" or "refused", or an assertion error saying what broke."""
    s, _ = Scenario.from_mapping(d, CAT, strict=True)
    whole_nodes = d["gpus"] % CAT.gpu(d["gpu"]).gpus_per_node == 0
    try:
        r = evaluate(s, CAT)
    except InputError as e:
        msg = str(e)
        assert e.param in set_keys(d), (e.param, msg, d)
        assert e.param in msg, (msg, d)
        if whole_nodes:
            # the old generic advice, never the cause on whole nodes (a key's own rule may
            # say "multiple of": "gpus must be a multiple of pp x ep x etp (16)" for ep=16)
            assert GPU_COUNT_ADVICE not in msg, (msg, d)
            assert "multiple of" not in msg or e.param != "gpus", (msg, d)
        code, out, err = cli(s.to_query())
        assert code == 2 and out == "" and err.count("\n") == 1 and e.param in err, (err, d)
        return "refused"
    j = r.to_json()
    lay = j["layout"]
    assert lay is not None and j["days"] is not None and math.isfinite(j["days"]), d
    for key, name in LINK_KEYS.items():
        if key in d:
            want = int(d[key]) if key == "zero" else d[key]
            assert lay[name] == want, (key, want, lay, j["warnings"], d)
    seq = j["seq_len"]
    if "global_batch_tokens" in d:
        B = max(1, round(d["global_batch_tokens"] / seq))
        moved = f"global batch adjusted from {B} to {lay['global_batch']} sequences"
        assert lay["global_batch"] == B or any(moved in w for w in j["warnings"]), (lay, d)
    if whole_nodes:
        assert not any(GPU_COUNT_ADVICE in w for w in j["warnings"]), (j["warnings"], d)
    if j["mfu"] is not None:
        assert j["mfu_limit"]["limit"] in LIMITS, j["mfu_limit"]
        assert any(w.startswith("what limits MFU") for w in j["warnings"]), j["warnings"]
    return "answered"


@pytest.mark.slow
@pytest.mark.sampled
@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(links())
def test_every_valid_scenario_is_answered_or_refused_and_no_given_key_is_dropped(d):
    check(d)
