"""Catalog contents, look-ups and user rows."""

import re

import pandas as pd
import pytest

from llmcost import InputError, catalog
from llmcost.catalog import Catalog


@pytest.mark.parametrize("table", catalog.TABLES)
def test_every_row_has_source_and_as_of(table):
    df = pd.read_csv(catalog.data_dir() / f"{table}.csv")
    assert len(df) > 0
    for col in ("id", "source", "as_of"):
        assert df[col].notna().all() and (df[col].astype(str).str.strip() != "").all()
    assert df["as_of"].astype(str).str.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?").all()
    assert not df["id"].str.lower().duplicated().any()


def test_required_entries_exist():
    for g in ("a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "gb200",
              "mi300x", "mi325x", "l40s"):
        catalog.gpu(g)
    for m in ("gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
              "llama3-405b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b"):
        catalog.model(m)
    for f in ("nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib-hdr", "ib-ndr", "ib-xdr",
              "roce-200", "roce-400"):
        catalog.fabric(f)
    megatron = [i for i in catalog.ids("models") if i.startswith("megatron-gpt-")]
    assert len(megatron) == 10


def test_peaks_are_dense_not_sparse():
    # Reference datasheet figures (dense): the sparsity figure is twice these.
    dense = {"a100-80gb": 312, "h100-sxm": 989.4, "h100-pcie": 756, "h200": 989, "b200": 2250,
             "mi300x": 1307.4, "l40s": 362}
    for gid, tf in dense.items():
        assert catalog.gpu(gid).bf16_dense_tflops == pytest.approx(tf)
    assert catalog.gpu("h100-sxm").fp8_dense_tflops == pytest.approx(1978.9)
    assert catalog.gpu("a100-80gb").fp8_dense_tflops is None


def test_prices_refer_to_known_gpus_and_per_gpu_figures_agree():
    gpus = set(catalog.ids("gpus"))
    p = catalog.prices()
    assert set(p["gpu"]) <= gpus
    # derived rows: 8 x the quoted $/GPU-h (GCP 11.06, Azure 12.29, Lambda 3.99)
    rows = p.set_index("id")
    assert rows.loc["gcp-a3-highgpu-8g", "on_demand_usd_per_hour"] == pytest.approx(8 * 11.06)
    assert rows.loc["azure-nd96isr-h100-v5", "on_demand_usd_per_hour"] == pytest.approx(8 * 12.29)
    assert rows.loc["aws-p5", "on_demand_usd_per_hour"] == pytest.approx(55.04)


def test_lookup_by_alias_and_case():
    assert catalog.gpu("H100").id == "h100-sxm"
    assert catalog.model("llama3.1-70b").id == "llama3-70b"


def test_did_you_mean():
    with pytest.raises(InputError) as e:
        catalog.gpu("h100-sx")
    assert e.value.param == "gpu" and "did you mean" in str(e.value) and "h100-sxm" in str(e.value)


def test_user_rows_extend_a_copy():
    base = catalog.default()
    mine = base.with_rows("gpus", [dict(
        id="my-gpu", name="In-house", generation="hopper", bf16_dense_tflops=500,
        memory_gib=96, hbm_bandwidth_tb_per_s=4, scale_up="nvlink4", scale_up_bandwidth_gb_per_s=900,
        gpus_per_node=8, tdp_w=600)])
    assert mine.gpu("my-gpu").memory_bytes == 96 * 2**30
    assert "my-gpu" not in base.ids("gpus")
    row = mine.gpus().set_index("id").loc["my-gpu"]
    assert row["source"] == "user-supplied" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["as_of"])
    with pytest.raises(InputError):
        mine.with_rows("gpus", [dict(id="my-gpu", name="x", generation="x", bf16_dense_tflops=1,
                                     memory_gib=1, hbm_bandwidth_tb_per_s=1, scale_up="x",
                                     scale_up_bandwidth_gb_per_s=1, gpus_per_node=1, tdp_w=1)])


def test_user_rows_are_validated():
    with pytest.raises(InputError) as e:
        catalog.default().with_rows("models", [dict(id="m", layers=-2, hidden=8, heads=2,
                                                    vocab=10, seq_len=8)])
    assert e.value.param == "layers"
    with pytest.raises(InputError) as e:
        catalog.default().with_rows("models", [dict(id="m", hidden=8)])
    assert e.value.param == "layers"


def test_user_model_row_becomes_a_spec():
    cat = catalog.default().with_rows("models", [dict(
        id="tiny", layers=2, hidden=64, heads=4, vocab=100, seq_len=32)])
    m = cat.model("tiny")
    assert m.ffn_hidden == 256 and m.kv_heads == 4 and m.params > 0


def test_tables_are_copies():
    df = catalog.gpus()
    df.loc[:, "bf16_dense_tflops"] = 0
    assert catalog.gpu("h100-sxm").bf16_dense_tflops > 0


def test_every_table_has_its_accessor_and_nothing_else_does(cat):
    for name in catalog.TABLES:
        a, b = getattr(cat, name)(), getattr(catalog, name)()
        pd.testing.assert_frame_equal(a, cat.table(name))
        pd.testing.assert_frame_equal(b, catalog.default().table(name))
        assert a is not getattr(cat, name)()
    for owner in (cat, catalog):
        assert not hasattr(owner, "gpu_table") and not hasattr(owner, "price")
        # a notebook's completion lists them
        assert set(catalog.TABLES) <= set(dir(owner))


def test_catalog_from_another_folder(tmp_path):
    for t in catalog.TABLES:
        (tmp_path / f"{t}.csv").write_text((catalog.data_dir() / f"{t}.csv").read_text())
    assert Catalog.from_dir(tmp_path).gpu("b200").bf16_dense_tflops == 2250


def test_a_catalog_with_the_old_gbps_columns_is_read_under_the_new_names(tmp_path):
    # bandwidth_gbps_per_gpu / hbm_bandwidth_tbps / scale_up_bandwidth_gbps meant GB/s and TB/s
    import shutil

    from llmcost import catalog as cat_mod
    data = tmp_path / "data"
    shutil.copytree(cat_mod.data_dir(), data)
    for name, old in (("fabrics.csv", "bandwidth_gb_per_s_per_gpu"),
                      ("gpus.csv", "hbm_bandwidth_tb_per_s")):
        text = (data / name).read_text()
        legacy = {x: k for k, x in cat_mod.LEGACY_COLUMNS.items()}[old]
        (data / name).write_text(text.replace(old, legacy, 1))
    c = cat_mod.Catalog.from_dir(data)
    new = cat_mod.default()
    assert c.gpu("h100-sxm").hbm_bandwidth_tb_per_s == new.gpu("h100-sxm").hbm_bandwidth_tb_per_s
    assert c.fabric("ib-ndr").bandwidth_gb_per_s_per_gpu == new.fabric("ib-ndr").bandwidth_gb_per_s_per_gpu
