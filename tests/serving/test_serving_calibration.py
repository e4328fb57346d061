"""The trtllm efficiencies against the rows they were fitted to (TensorRT-LLM's
perf-overview throughput tables, data/serving_runs.csv), and the fit reproduced."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmcost.serving import calibrate, engines

ALL = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "serving_runs.csv")
ROWS = ALL[ALL.engine == "trtllm"]
VLLM = ALL[ALL.engine == "vllm"]


def test_rows_cite_their_source():
    assert len(ROWS) == 147
    assert ROWS["source"].str.contains("TensorRT-LLM").all() and ROWS["as_of"].notna().all()
    # per GPU = the page's total output throughput over the TP GPUs of the run
    assert np.allclose(ROWS.output_tokens_per_s_per_gpu,
                       ROWS.total_output_tokens_per_s / ROWS.tp, rtol=1e-6)


@pytest.mark.slow
def test_fit_quality_as_stated():
    # engines.FIT_NOTES: mean |pred / meas - 1| 18.8%, median 13.9%; a tolerance of one
    # point above catches a changed formula or constant
    e = np.abs(np.exp(calibrate.log_errors(ROWS, engines.engine("trtllm"))) - 1.0)
    print(f"trtllm throughput fit: mean {e.mean():.3f}, median {np.median(e):.3f}, "
          f"max {e.max():.3f} over {len(e)} rows")
    assert e.mean() <= 0.198 and np.median(e) <= 0.149
    # no systematic bias: geometric mean of pred / meas within 5%
    assert abs(np.mean(calibrate.log_errors(ROWS, engines.engine("trtllm")))) < 0.05


# the whole table: a fit over every row, as `make validate` runs it (make test-grid)
@pytest.mark.grid
def test_refit_lands_on_the_shipped_constants():
    eng = engines.engine("trtllm")
    start = eng.with_(prefill_efficiency=0.6, decode_compute_efficiency=0.6,
                      sequence_overhead_s=5e-6, moe_efficiency=0.8, fp4_efficiency=0.9)
    best, err = calibrate.fit(ROWS, start, engines.FITTED)
    assert err == pytest.approx(0.188, abs=0.01)
    for name in engines.FITTED:
        assert getattr(best, name) == pytest.approx(getattr(eng, name), rel=0.1), name


def test_vllm_latency_rows_reproduced():
    # the two constants were solved from these two rows: each within 1% (the solve's rounding)
    e = np.exp(calibrate.log_errors(VLLM, engines.engine("vllm"))) - 1.0
    assert len(e) == 2 and np.all(np.abs(e) < 0.01)
    assert VLLM.source.str.contains("vLLM performance benchmark").all()


def test_vllm_decode_constants_solve_back():
    start = engines.engine("vllm").with_(step_overhead_s=5e-3, collective_latency_us=1.0)
    best, err = calibrate.fit(VLLM, start, ("step_overhead_s", "collective_latency_us"))
    assert err < 1e-4
    assert best.step_overhead_s == pytest.approx(1.93e-3, rel=0.01)
    assert best.collective_latency_us == pytest.approx(21.3, rel=0.01)


def test_the_gpus_measured_are_those_of_the_fitted_rows_and_others_say_uncalibrated(capsys):
    from llmcost.cli import main
    root = Path(__file__).resolve().parents[2] / "data"
    runs = pd.read_csv(root / "serving_runs.csv")
    points = pd.read_csv(root / "serving_measurements.csv")
    sglang = points[(points["engine"] == "sglang")
                    & points["source"].str.contains("sgl-cookbook")].head(
        engines.SGLANG_FIT_POINTS)
    assert set(engines.MEASURED_GPUS) == set(runs["gpu"]) | set(sglang["gpu"])
    for gpu, said in (("mi300x", True), ("h100-sxm", False)):
        assert main(["serve", "--query", f"model=llama3-70b&gpu={gpu}&engine=vllm",
                     "--json"]) == 0
        notes = json.loads(capsys.readouterr().out)["notes"]
        assert any(n.startswith(f"no serving measurement on {gpu}") for n in notes) == said
