"""data/whole_runs.csv (published GPU-hours of whole pre-training runs) and the section of
benchmarks/validate.py that reviews each of them beside the napkin. The other runs are a check
that is reported, not a fit: only the two named runs carry thresholds (as in test_whole_run.py)."""

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmcost import catalog
from llmcost.training import hf_config

ROOT = Path(__file__).resolve().parents[2]
CAT = catalog.default()


from bench_support import validate_module as _validate_module  # noqa: E402


VALIDATE = _validate_module()
ROWS = VALIDATE.load_whole_runs()


def by_id(frame, run_id):
    return frame.set_index("id").loc[run_id]


def config_model(row):
    return hf_config.model_from_config(
        hf_config.read_config_file(VALIDATE.HF_CONFIGS / row["config"]),
        seq_len=int(row["seq_len"]))[0]


def row_model(row):
    return CAT.model(row["model"]) if isinstance(row["model"], str) else config_model(row)


@pytest.fixture(scope="module")
def table():
    buf = io.StringIO()
    res = VALIDATE.whole_runs(out=buf)
    return res, buf.getvalue()


def test_every_row_has_its_source_and_sane_figures():
    assert ROWS["id"].is_unique
    for _, r in ROWS.iterrows():
        assert isinstance(r["source"], str) and r["source"].strip(), r["id"]
        assert isinstance(r["as_of"], str) and len(r["as_of"]) >= 7, r["id"]
        assert VALIDATE.whole_run_gpus(r) > 0 and r["tokens"] > 0, r["id"]
        assert r["published_gpu_hours"] > 0 and r["seq_len"] > 0, r["id"]
        assert r["precision"] in ("bf16", "fp8") and r["stack"] in ("megatron", "fsdp"), r["id"]
        assert r["hours_status"] in ("reported", "derived", "approximate"), r["id"]
        # a count the source does not give is assumed, and the notes say so
        if pd.isna(r["gpus"]):
            assert r["gpus_assumed"] > 0 and "assumed" in r["notes"], r["id"]


def test_models_gpus_and_fabrics_exist():
    fabrics = set(CAT.fabrics()["id"])
    for _, r in ROWS.iterrows():
        has_model = isinstance(r["model"], str)
        assert has_model != isinstance(r["config"], str), r["id"]   # exactly one of the two
        if has_model:
            CAT.model(r["model"])
        else:
            assert (VALIDATE.HF_CONFIGS / r["config"]).is_file(), r["id"]
        CAT.gpu(r["gpu"])
        if r["fabric"] == "custom":
            assert r["fabric_gb_per_s_per_gpu"] > 0, r["id"]
        else:
            assert r["fabric"] in fabrics, r["id"]


def test_transcribed_architectures_have_their_published_sizes():
    # LLaMA Table 2 prints 32.5B and 65.2B; DeepSeek-V2 236B total, 21B active (arXiv:2405.04434
    # abstract); DeepSeek LLM "67B"
    published = {"llama-33b": (32.5e9, None, 0.002), "llama-65b": (65.2e9, None, 0.002),
                 "deepseek-v2": (236e9, 21e9, 0.02), "deepseek-llm-67b": (67e9, None, 0.01),
                 # TinyLlama: "1.1B" (arXiv:2401.02385 Table 1: d 2048, 22 layers, FFN 5632)
                 "tinyllama-1.1b": (1.1e9, None, 0.01),
                 # Pythia 12B: 11,846,072,320 (its model card); StarCoderBase "15.5B"
                 # (arXiv:2305.06161)
                 "pythia-12b": (11_846_072_320, None, 1e-9),
                 "starcoderbase-15.5b": (15.5e9, None, 0.005)}
    for run_id, (total, active, tol) in published.items():
        m = config_model(by_id(ROWS, run_id))
        assert m.params == pytest.approx(total, rel=tol), run_id
        if active:
            assert m.active_params == pytest.approx(active, rel=0.03), run_id
    # LLaMA 7B / 13B share the catalog's Llama 2 architectures: Table 2's 6.7B and 13.0B
    assert CAT.model("llama2-7b").params == pytest.approx(6.7e9, rel=0.01)
    assert CAT.model("llama2-13b").params == pytest.approx(13.0e9, rel=0.01)


def test_derived_hours_are_the_arithmetic_of_their_sources():
    hours = ROWS.set_index("id")["published_gpu_hours"]
    assert hours["deepseek-v2"] == pytest.approx(172.8e3 * 8.1, rel=1e-9)   # per trillion x 8.1T
    assert hours["deepseek-llm-67b"] == pytest.approx(300.6e3 * 2.0, rel=1e-9)
    assert hours["mpt-7b"] == pytest.approx(440 * 9.5 * 24, rel=1e-9)        # 440 GPUs, 9.5 days
    assert hours["smollm3-3b"] == pytest.approx(384 * 24 * 24, rel=1e-9)      # 384 GPUs, 24 days
    assert hours["tinyllama-1.1b"] == pytest.approx(3456 * 10, rel=1e-9)     # per 300B x 3T
    assert hours["starcoderbase-15.5b"] == pytest.approx(512 * 24 * 24, rel=1e-9)  # 24 days
    # LLaMA 65B: 380 tokens/s/GPU on 2,048 GPUs over 1.4T tokens (§2.4) is Table 15's figure
    assert 1.4e12 / 380 / 3600 == pytest.approx(hours["llama-65b"], rel=2e-3)
    derived = ROWS[ROWS["hours_status"] == "derived"]["id"]
    assert set(derived) == {"deepseek-v2", "deepseek-llm-67b", "mpt-7b", "smollm3-3b",
                            "tinyllama-1.1b", "starcoderbase-15.5b"}
    # Pythia's appendix prints the hours themselves (iteration time x iterations x GPUs)
    assert hours["pythia-12b"] == 72_300


@pytest.mark.slow
def test_every_run_is_answered_and_fits(table):
    res, _ = table
    assert list(res["id"]) == list(ROWS["id"])
    bad = res[(res["status"] != "ok") | (res["fits"] != True)]  # noqa: E712
    assert bad.empty, bad[["id", "status", "fits", "layout"]].to_string()
    assert (res["layout"].str.len() > 0).all()
    assert (res["gpus"] == [VALIDATE.whole_run_gpus(r) for _, r in ROWS.iterrows()]).all()


@pytest.mark.slow
def test_every_run_is_also_reviewed_without_its_fabric(table):
    res, _ = table
    assert res["auto_error"].notna().all()
    row = ROWS.iloc[0]
    assert "fabric=" in VALIDATE.whole_run_query(row)
    assert "fabric" not in VALIDATE.whole_run_query(row, with_fabric=False)
    # a run whose published fabric is the GPU's usual one answers the same either way
    usual = [(r["id"]) for _, r in ROWS.iterrows()
             if r["fabric"] == CAT.gpu(r["gpu"]).usual_scale_out]
    assert usual
    by = res.set_index("id")
    for run_id in usual:
        assert by.loc[run_id, "auto_error"] == pytest.approx(by.loc[run_id, "error"], rel=1e-12)


def test_a_published_batch_is_the_batch_reviewed(table):
    res, _ = table
    for (_, r), (_, got) in zip(ROWS.iterrows(), res.iterrows()):
        if not pd.isna(r["global_batch_tokens"]):
            # whole sequences: the published batch rounded to a multiple of the sequence length
            assert got["global_batch_tokens"] == pytest.approx(r["global_batch_tokens"],
                                                               abs=r["seq_len"]), r["id"]


def test_the_napkin_is_6nd_at_40_percent_of_the_dense_bf16_peak_on_every_row(table):
    res, _ = table
    for (_, r), (_, got) in zip(ROWS.iterrows(), res.iterrows()):
        peak = CAT.gpu(r["gpu"]).bf16_dense_tflops * 1e12
        napkin = 6 * row_model(r).active_params * r["tokens"] / (0.4 * peak) / 3600
        assert got["napkin_gpu_hours"] == pytest.approx(napkin, rel=1e-6), r["id"]
        assert got["napkin_error"] == pytest.approx(napkin / r["published_gpu_hours"] - 1,
                                                    rel=1e-6), r["id"]


@pytest.mark.parametrize("run_id", ["llama3.1-405b", "deepseek-v3"])
def test_the_named_runs_beat_the_napkin(table, run_id):
    # as tests/review/test_whole_run.py: within 15% of the published GPU-hours, closer than the
    # napkin (Llama 3.1 405B: 30.84M H100-hours; DeepSeek-V3: 2.664M H800-hours)
    r = by_id(table[0], run_id)
    assert abs(r["error"]) <= 0.15, r["gpu_hours"]
    assert abs(r["error"]) < abs(r["napkin_error"])
    assert r["fits"] == True  # noqa: E712


def test_the_summary_counts_reported_and_derived_rows_only():
    res = pd.DataFrame({"id": ["a", "b", "c"], "error": [0.10, -0.20, 0.90],
                        "napkin_error": [0.30, -0.10, 0.0],
                        "in_statistics": [True, True, False]})
    line = VALIDATE.whole_runs_summary(res)
    # review |error| 10% and 20%: mean 15.0%, max 20.0%; napkin 30% and 10%: mean 20.0%, max 30.0%
    assert "2 runs counted" in line and "listed only: 1" in line
    assert "review mean |error| 15.0%, max 20.0%" in line
    assert "napkin mean |error| 20.0%, max 30.0%" in line
    assert "closer on 1 of 2" in line
    assert "GPU count the run published" not in line       # no column: one statistic
    assert "without their fabric" not in line
    res["auto_error"] = [0.05, -0.25, 0.5]
    # the counted rows reviewed on the GPU's usual fabric: |5%| and |25%|: mean 15.0%, max 25.0%
    assert "without their fabric (the GPU's usual one): review mean |error| 15.0%, max 25.0%" \
        in VALIDATE.whole_runs_summary(res)
    res = res.drop(columns="auto_error")
    res["gpus_published"] = [True, False, True]
    line = VALIDATE.whole_runs_summary(res)
    # the run with its published count: review 10%, napkin 30%
    assert "1 of them with the GPU count the run published: review mean |error| 10.0%, " \
           "max 10.0%; napkin mean |error| 30.0%, max 30.0%" in line


def test_the_summary_sets_a_published_layout_beside_the_reviews_own():
    res = pd.DataFrame({"id": ["a", "b", "c"], "error": [0.10, -0.40, 0.05],
                        "napkin_error": [0.30, -0.10, 0.0], "in_statistics": [True] * 3,
                        "layout_error": [0.20, -0.20, np.nan]})
    # the two runs with a layout: own |10%| and |40%| (mean 25.0%), given |20%| and |20%| (20.0%)
    assert "2 of them with a published layout: review mean |error| 25.0% with its own layout, " \
           "20.0% given the run's" in VALIDATE.whole_runs_summary(res)


#: link keys of a published layout, and the review JSON layout field each one sets
LAYOUT_FIELDS = {"tp": "tp", "pp": "pp", "vp": "vp", "cp": "cp", "ep": "ep", "etp": "etp",
                 "micro_batch": "micro_batch", "zero": "zero_stage", "recompute": "recompute"}


def test_published_layouts_are_review_keys_and_the_review_runs_them_as_given(table):
    res = table[0].set_index("id")
    given = ROWS[ROWS["published_layout"].notna()]
    # BLOOM, Pythia, StarCoderBase, DeepSeek-V2/V3, Llama 3.1 405B, SmolLM3, Falcon, TinyLlama
    assert len(given) >= 10
    for _, row in given.iterrows():
        keys = dict(kv.split("=") for kv in row["published_layout"].split("&"))
        assert set(keys) <= set(LAYOUT_FIELDS), row["id"]
        r = res.loc[row["id"]]
        assert r["layout_fits"] == True, (row["id"], r["layout_fits"])  # noqa: E712
        lay = r["given_layout"]
        for key, value in keys.items():
            want = value if key == "recompute" else int(value)
            assert lay[LAYOUT_FIELDS[key]] == want, (row["id"], key, lay)


def test_the_reviews_own_layout_is_no_slower_than_the_published_one(table):
    # the planner ranks every layout it may choose by goodput-adjusted time and takes the
    # simplest within SIMPLEST_WITHIN (2%) of the fastest: a run's published layout, reviewed
    # on the same cluster, batch and stack, may tie it but never beat it by more than that
    from llmcost.review.stages import SIMPLEST_WITHIN
    res = table[0]
    res = res[res["layout_error"].notna()]
    own = 1 + res["error"].to_numpy()
    given = 1 + res["layout_error"].to_numpy()
    assert (own <= given * (1 + SIMPLEST_WITHIN) + 1e-9).all(), res[["id", "error", "layout_error"]]


def test_the_printed_table_and_the_command_line_section(table):
    res, text = table
    for run_id in ROWS["id"]:
        assert run_id in text
    assert "runs counted" in text and "napkin mean |error|" in text
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        VALIDATE.main(["--whole-runs"])
    out = buf.getvalue()
    # --whole-runs prints this section alone, not the calibration table before it
    assert "Whole published pre-training runs" in out and "MFU convention" not in out
    # then each run's error beside the stored snapshot's (benchmarks/step_model_snapshot.csv)
    assert out.startswith(text)
    rest = out[len(text):]
    assert "error before" in rest and all(run_id in rest for run_id in ROWS["id"])
