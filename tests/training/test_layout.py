"""Layout as the one declaration of a layout's fields: the planner's frame, ``plan --json``,
``size``'s layout and the description are built from it, its fields are predict_step's and
memory_per_gpu's arguments, and a planner row reads back into the same Layout."""

import contextlib
import inspect
import io
import json
from dataclasses import fields

import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost.cli import main
from llmcost.economics import sizing
from llmcost.training import memory as mem
from llmcost.training import planner as pl
from llmcost.training import step as st
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout, describe_layout, layout_columns
from llmcost.training.memory import MemoryOptions

CAT = catalog.default()
A100, NVL3, HDR = CAT.gpu("a100-80gb"), CAT.fabric("nvlink3"), CAT.fabric("ib-hdr")
FIELDS = [f.name for f in fields(Layout)]


@pytest.fixture(scope="module")
def plan():
    # megatron-gpt-1.7b (24 layers), 32 GPUs, batch 64, two memory recipes: a small grid
    space = pl.Space(cp=(1,), micro_batch=(1, 2), zero_stage=(1,), recompute=("none", "full"),
                     interleave=(1, 2), recompute_modules=((), ("core_attn",)),
                     optimizer_moments=("fp32", "bf16"))
    return pl.plan(CAT.model("megatron-gpt-1.7b"), Hardware(A100, NVL3, HDR), 32, 64,
                   pl.Search(space, precision="bf16"))


def test_every_table_follows_the_declared_order():
    # the contract the apps, plan --json and size read: each table's layout columns in
    # this order (the orders these tables had before they were derived from Layout)
    assert pl.FRAME_LAYOUT_COLUMNS == (
        "gpus", "tp", "pp", "cp", "dp", "micro_batch", "num_microbatches", "interleave",
        "zero_stage", "recompute", "sequence_parallel", "flash_attention", "tp_comm_overlap",
        "precision", "recompute_modules", "optimizer_moments", "first_stage_layers",
        "middle_stage_layers", "last_stage_layers", "ep", "etp")
    assert pl.LAYOUT_COLUMNS == (
        "gpus", "tp", "pp", "cp", "dp", "micro_batch", "num_microbatches", "interleave",
        "zero_stage", "recompute", "sequence_parallel", "flash_attention", "tp_comm_overlap",
        "first_stage_layers", "last_stage_layers", "ep", "etp")
    assert sizing.LAYOUT_KEYS == (
        "tp", "pp", "cp", "dp", "micro_batch", "interleave", "zero_stage", "recompute",
        "sequence_parallel", "flash_attention", "tp_comm_overlap", "recompute_modules",
        "optimizer_moments")
    # and each is Layout's fields, in Layout's order, with the named derived columns
    for cols, derived in [(pl.FRAME_LAYOUT_COLUMNS, ("dp", "num_microbatches")),
                          (pl.LAYOUT_COLUMNS, ("dp", "num_microbatches")),
                          (sizing.LAYOUT_KEYS, ("dp",))]:
        own = [k for k in cols if k not in derived]
        assert own == [k for k in FIELDS if k in own]
    # every field but the plan's global batch is a column of the frame
    assert set(FIELDS) - set(pl.FRAME_LAYOUT_COLUMNS) == {"global_batch"}


def test_layout_columns_places_derived_columns_and_refuses_unknown_names():
    cols = layout_columns({"pp": "vp"}, drop=("gpus",))
    assert cols[:3] == ("tp", "pp", "vp") and "gpus" not in cols
    assert len(cols) == len(FIELDS)          # one dropped, one derived
    with pytest.raises(ValueError, match="nodes"):
        layout_columns(drop=("nodes",))
    with pytest.raises(ValueError, match="description_text"):
        layout_columns({"tp": "description_text"})


def test_plan_frame_and_json_carry_the_declared_columns(plan):
    df = plan.layouts
    assert tuple(df.columns[:len(pl.FRAME_LAYOUT_COLUMNS)]) == pl.FRAME_LAYOUT_COLUMNS
    # both recipes searched: every (modules, moments) pair appears as its own rows
    assert set(zip(df["recompute_modules"], df["optimizer_moments"])) == {
        ("", "fp32"), ("", "bf16"), ("core_attn", "fp32"), ("core_attn", "bf16")}
    # an empty plan has the same columns in the same order (was: the recipe at the end)
    none = pl.plan(CAT.model("megatron-gpt-1.7b"), Hardware(A100, NVL3, HDR), 7, 3, pl.Search(pl.Space()))
    assert none.evaluated == 0 and list(none.layouts.columns) == list(df.columns)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main("plan --model megatron-gpt-1.7b --gpu a100-80gb --gpus 32 --global-batch 64 "
             "--top 2 --json".split())
    lay = json.loads(buf.getvalue())["layouts"][0]["layout"]
    assert list(lay) == [*pl.LAYOUT_COLUMNS, "stage_layers"]


def test_a_planner_row_reads_back_into_its_layout(plan):
    for _, r in plan.layouts.iloc[[0, 1, -1]].iterrows():
        L = Layout.from_row(r, global_batch=64)
        # every frame column the row has is the Layout's value (modules joined by commas)
        row = L.row()
        for k in pl.FRAME_LAYOUT_COLUMNS:
            assert row[k] == (r[k].item() if hasattr(r[k], "item") else r[k]), k
        assert L.dp * L.micro_batch * L.num_microbatches == 64
        assert L.description == describe_layout(r)
        assert Layout.from_row(row) == L


def test_field_types_coerced_and_checked():
    L = Layout(gpus=np.int64(64), tp=np.float64(8), zero_stage=np.int64(0),
               sequence_parallel=np.bool_(True), recompute_modules="core_attn, mlp",
               first_stage_layers=np.int64(7))
    assert type(L.gpus) is int and type(L.tp) is int and type(L.zero_stage) is int
    assert type(L.sequence_parallel) is bool and type(L.first_stage_layers) is int
    assert L.recompute_modules == ("core_attn", "mlp") and L.last_stage_layers is None
    for kw, param in [(dict(zero_stage=4), "zero_stage"), (dict(tp=0), "tp"),
                      (dict(ep=1.5), "ep"), (dict(last_stage_layers=0), "last_stage_layers"),
                      (dict(optimizer_moments="fp16"), "optimizer_moments")]:
        with pytest.raises(InputError) as e:
            Layout(gpus=8, **kw)
        assert e.value.param == param


def test_the_layout_is_the_models_one_layout_argument():
    # predict_step and memory_per_gpu read every field from the one Layout they take
    L = Layout(gpus=64, tp=8, pp=4, global_batch=256, optimizer_moments="bf16")
    for fn in (st.predict_step, mem.memory_per_gpu):
        params = inspect.signature(fn).parameters
        assert "layout" in params and not set(FIELDS) & set(params)
    # and the two paths give the same memory: predict_step's figure is memory_per_gpu's
    m = CAT.model("llama3-8b")
    p = st.predict_step(m, Hardware(A100, NVL3, HDR), L)
    b = mem.memory_per_gpu(m, L)
    assert float(p.memory_bytes) == pytest.approx(float(b.total_bytes), rel=1e-12)


def test_plan_is_built_by_keyword(plan):
    with pytest.raises(TypeError):
        pl.Plan(plan.layouts, 1, 1, 1)
    P = pl.Plan(layouts=plan.layouts, evaluated=plan.evaluated, feasible=plan.feasible,
                candidates=plan.candidates)
    assert P.feasible == int(plan.layouts["fits"].sum()) and P.note == ""
