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
from llmcost.training import hf_config, stacks

ROOT = Path(__file__).resolve().parents[2]
CAT = catalog.default()


from bench_support import validate_module as _validate_module  # noqa: E402
from bench_support import whole_runs_table  # noqa: E402

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
    return whole_runs_table()


def test_every_row_has_its_source_and_sane_figures():
    assert ROWS["id"].is_unique
    for _, r in ROWS.iterrows():
        assert isinstance(r["source"], str) and r["source"].strip(), r["id"]
        assert isinstance(r["as_of"], str) and len(r["as_of"]) >= 7, r["id"]
        assert VALIDATE.whole_run_gpus(r) > 0 and r["tokens"] > 0, r["id"]
        assert r["published_gpu_hours"] > 0 and r["seq_len"] > 0, r["id"]
        assert r["precision"] in ("bf16", "fp8") and r["stack"] in stacks.NAMES, r["id"]
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
                 "starcoderbase-15.5b": (15.5e9, None, 0.005),
                 # the other Pythia sizes: the released checkpoints' parameter counts, exactly
                 "pythia-70m": (70_426_624, None, 1e-9), "pythia-160m": (162_322_944, None, 1e-9),
                 "pythia-410m": (405_334_016, None, 1e-9), "pythia-1b": (1_011_781_632, None, 1e-9),
                 "pythia-1.4b": (1_414_647_808, None, 1e-9), "pythia-2.8b": (2_775_208_960, None, 1e-9),
                 "pythia-6.9b": (6_857_302_016, None, 1e-9),
                 # Llama 3.2 card: "1B (1.23B)", "3B (3.21B)"; Llama 2 paper Table 1: 34B;
                 # Phi-3-medium "14B", Phi-3.5-mini and Phi-4-mini "3.8B" (their cards)
                 "llama3.2-1b": (1.23e9, None, 0.01), "llama3.2-3b": (3.21e9, None, 0.01),
                 "llama2-34b": (34e9, None, 0.01), "phi-3-medium": (14e9, None, 0.01),
                 "phi-3.5-mini": (3.8e9, None, 0.01), "phi-4-mini": (3.8e9, None, 0.02),
                 # Olmo 3 32B: 32,233,522,176 (the checkpoint; ModelSpec counts its q/k norms per head);
                 # Falcon-180B: the card's "180B"
                 "olmo3-32b": (32_233_522_176, None, 1e-4), "falcon-180b": (180e9, None, 0.01),
                 # Granite 3.0 report Table 1: 2.5B, 8.1B, 1.3B with 400M active, 3.3B with 800M
                 "granite-3.0-2b": (2.5e9, None, 0.02), "granite-3.0-8b": (8.1e9, None, 0.01),
                 "granite-3.0-1b-a400m": (1.3e9, None, 0.03),
                 "granite-3.0-3b-a800m": (3.3e9, None, 0.01),
                 # Phi-3.5-MoE card: 16x3.8B, 6.6B active (the checkpoint holds 41.9B)
                 "phi-3.5-moe": (41.9e9, 6.6e9, 0.002),
                 # Nemotron-4 15B: 3.2B embedding + 12.5B non-embedding; 340B: 9.4B + 331.6B
                 "nemotron-4-15b": (15.7e9, None, 0.005), "nemotron-4-340b": (341e9, None, 0.001),
                 # OPT "175B"; BloombergGPT Table 4: 50.6B; OLMoE 6.9B with 1.3B active
                 "opt-175b": (175e9, None, 0.003), "bloomberggpt-50b": (50.6e9, None, 0.001),
                 "olmoe-1b-7b": (6.9e9, 1.3e9, 0.003),
                 # the checkpoints: phi-1_5 1,418,270,720, phi-2 2,779,683,840 (their biases
                 # are not counted); StableLM-3B-4E1T 2,795,443,200 (its card)
                 "phi-1.5": (1_418_270_720, None, 5e-4), "phi-2": (2_779_683_840, None, 5e-4),
                 "stablelm-3b-4e1t": (2_795_443_200, None, 1e-9)}
    for run_id, (total, active, tol) in published.items():
        m = config_model(by_id(ROWS, run_id))
        assert m.params == pytest.approx(total, rel=tol), run_id
        if active:
            assert m.active_params == pytest.approx(active, rel=0.03), run_id
    # Granite 3.0 MoE: Table 1's 400M and 800M active are the active parameters less the tied
    # embedding (378M and 807M; with it, 429M and 883M)
    for run_id, active in (("granite-3.0-1b-a400m", 0.4e9), ("granite-3.0-3b-a800m", 0.8e9)):
        m = config_model(by_id(ROWS, run_id))
        assert m.active_params - m.vocab * m.hidden == pytest.approx(active, rel=0.06), run_id
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
    # the Phi model cards: GPUs x whole days of "Training time"
    assert hours["phi-3-mini"] == 512 * 7 * 24 and hours["phi-3.5-mini"] == 512 * 10 * 24
    assert hours["phi-3-medium"] == 512 * 42 * 24 and hours["phi-4-mini"] == 512 * 21 * 24
    assert hours["phi-4"] == 1920 * 21 * 24
    # Olmo 3: pretraining tokens / the report's tokens per second per GPU (5.93T at 7,700; 5.5T at 1,960)
    assert hours["olmo3-7b"] == pytest.approx(5.93e12 / 7700 / 3600, abs=0.5)
    assert hours["olmo3-32b"] == pytest.approx(5.5e12 / 1960 / 3600, abs=0.5)
    # more model cards: Phi-3.5-MoE 512 H100 x 23 days, Phi-1.5 32 A100 x 8, Phi-2 96 A100 x 14
    assert hours["phi-3.5-moe"] == 512 * 23 * 24
    assert hours["phi-1.5"] == 32 * 8 * 24 and hours["phi-2"] == 96 * 14 * 24
    # BloombergGPT: 512 A100 x '~53 days' (139,200 steps x 32.5 s is 52.4 days)
    assert hours["bloomberggpt-50b"] == 512 * 53 * 24
    assert 139_200 * 32.5 / 86400 == pytest.approx(53, abs=0.7)
    # Nemotron-4 15B: Table 2's GPUs x days of its three batch-ramp stages; its days are the
    # stages' iterations x iteration time, the rule the 340B row applies to its own Table 2
    stages_15b = [(768, 0.57, 384, 200e9, 0.8), (1536, 0.58, 768, 200e9, 0.4),
                  (2304, 0.64, 1152, 7600e9, 11.9)]
    assert hours["nemotron-4-15b"] == pytest.approx(sum(g * d * 24 for g, *_, d in stages_15b))
    for _, t, batch, tokens, days in stages_15b:
        assert tokens / (batch * 4096) * t / 86400 == pytest.approx(days, abs=0.05)
    stages_340b = [(1536, 10.3, 768, 200e9), (3072, 10.3, 1536, 200e9), (6144, 8.0, 2304, 7600e9)]
    assert hours["nemotron-4-340b"] == pytest.approx(
        sum(tokens / (batch * 4096) * t * g / 3600 for g, t, batch, tokens in stages_340b), abs=0.5)
    derived = ROWS[ROWS["hours_status"] == "derived"]["id"]
    assert set(derived) == {"deepseek-v2", "deepseek-llm-67b", "mpt-7b", "smollm3-3b",
                            "tinyllama-1.1b", "starcoderbase-15.5b", "phi-3-mini", "phi-3.5-mini",
                            "phi-3-medium", "phi-4", "phi-4-mini", "olmo3-7b", "olmo3-32b",
                            "phi-3.5-moe", "phi-1.5", "phi-2", "bloomberggpt-50b",
                            "nemotron-4-15b", "nemotron-4-340b"}
    # Granite 3.0 report Table 7 prints each model's GPU-hours; LLaMA's Table 15 prints OPT-175B's
    assert [hours[f"granite-3.0-{k}"] for k in ("2b", "8b", "1b-a400m", "3b-a800m")] \
        == [192_030, 832_102, 71_171, 133_308]
    assert hours["opt-175b"] == 809_472 == 992 * 34 * 24
    # Pythia's appendix prints the hours themselves (iteration time x iterations x GPUs), Table 5
    assert hours["pythia-12b"] == 72_300
    assert [hours[f"pythia-{k}"] for k in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b")] \
        == [510, 1_030, 2_540, 4_830, 7_120, 14_240, 33_500]
    # Llama 2 paper Table 2: the 34B's row is the total 3,311,616 less the other three
    assert hours["llama2-34b"] == 3_311_616 - hours[["llama2-7b", "llama2-13b", "llama2-70b"]].sum()


def test_not_fitted_because_names_every_row_whose_hours_are_not_one_pretraining_run():
    why = {r["id"]: VALIDATE.not_fitted_because(r) for _, r in ROWS.iterrows()}
    # Meta's card: "the total GPU time required for training each model", quoted in the reason
    for run_id in ("llama3.1-8b", "llama3.1-70b"):
        assert "total GPU time required for training each model" in why[run_id], run_id
    # distillation and teacher passes; the StarCoder card's days hold two stages
    assert "distillation" in why["llama3.2-1b"] and "distillation" in why["llama3.2-3b"]
    assert "teacher" in why["llama4-maverick"] and "stage" in why["starcoderbase-15.5b"]
    # approximate hours say so
    for _, r in ROWS[ROWS["hours_status"] == "approximate"].iterrows():
        assert "approximate" in why[r["id"]], r["id"]
    # the named runs are one pre-training run each
    assert why["llama3.1-405b"] == "" and why["deepseek-v3"] == ""
    counted = {r["id"] for _, r in ROWS.iterrows() if VALIDATE.whole_run_counted(r)}
    assert counted == {k for k, v in why.items() if not v}


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
def test_the_named_runs_lie_in_their_band_with_their_stack_named(table, run_id):
    # each row names its stack (megatron for both), so its forecast comes from the megatron
    # runs of its group, itself included; the published figure lies in that band (Llama 3.1
    # 405B: 30.84M H100-hours; DeepSeek-V3: 2.664M H800-hours). Entered as the issue enters
    # them, without a stack, tests/review/test_whole_run.py holds them within 15%.
    r = by_id(table[0], run_id)
    # (to the 4 decimals data/realized_runs.csv keeps of each ratio: Llama 3.1 405B's own ratio
    # is its group's highest, so the band's top is its published figure)
    tol = 1e-4
    assert r["band_low"] * (1 - tol) <= r["published_gpu_hours"] <= r["band_high"] * (1 + tol), r
    assert r["band_low"] <= r["gpu_hours"] <= r["band_high"]
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
    # BLOOM, the eight Pythia sizes, StarCoderBase, DeepSeek-V2/V3, Llama 3.1 405B, SmolLM3,
    # Falcon, TinyLlama
    assert len(given) >= 17
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
    # --whole-runs prints this section alone, not the calibration table before it, and the
    # forecast's leave-one-run-out check after it (benchmarks/forecast_check.py)
    assert "Whole published pre-training runs" in out and "MFU convention" not in out
    assert out.startswith(text)
    tail = out[len(text):]
    assert "each forecast from the others' ratios" in tail and "stack not named" in tail
    # and each run's floor error beside the stored snapshot's (benchmarks/step_model_snapshot.csv)
    assert "error before" in tail and all(run_id in tail for run_id in ROWS["id"])


def test_the_summary_counts_only_one_pretraining_run_each(table):
    # a row with a not_fitted_because is listed with a '*' and left out of the summary's means
    res, text = table
    counted = [VALIDATE.whole_run_counted(r) for _, r in ROWS.iterrows()]
    assert list(res["in_statistics"]) == counted
    assert f"{sum(counted)} runs counted" in text
    assert f"listed only: {len(counted) - sum(counted)}" in text
    assert "llama3.1-8b *" in text and "llama3.1-405b *" not in text
