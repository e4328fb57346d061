"""Effective utilization, MFU/HFU and their plausibility findings."""

import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost import utilization as ut
from llmcost.training import flops as fl


def test_seed_formula_by_hand():
    # model_flops x batch x seq x steps / (peak x GPUs x wall clock):
    # 4.2e11 x 512 x 4096 x 1000 / (989.4e12 x 64 x 36000) = 0.3863
    u = ut.effective_utilization(4.2e11, 512, 4096, 1000, 989.4, 64, 36000)
    assert u == pytest.approx(4.2e11 * 512 * 4096 * 1000 / (989.4e12 * 64 * 36000))
    assert u == pytest.approx(0.3863, abs=1e-4)


def test_seed_formula_equals_mfu_over_the_same_interval():
    tokens_per_s = ut.tokens_per_s_from_step_time(12.5, 1024, 4096)
    assert tokens_per_s == pytest.approx(1024 * 4096 / 12.5)
    u = ut.effective_utilization(1e12, 1024, 4096, 100, 312, 256, 1250)
    assert u == pytest.approx(ut.mfu(tokens_per_s, 1e12, 312, 256))


def test_megatron_table1_hfu_from_step_time():
    # 18.4B row, 256 A100s, batch 1024, 135 TFLOP/s of Eq. 3 FLOPs: the step time implied
    # by the row gives back 135 TFLOP/s and 43% HFU.
    F = fl.megatron_flops_per_iteration(1024, 2048, 40, 6144, 51200, "full")
    step = F / (256 * 135e12)
    tps = ut.tokens_per_s_from_step_time(step, 1024, 2048)
    hw_per_token = fl.flops_per_token(fl.ModelShape(40, 6144, 48, 51200), 2048, recompute="full")
    assert ut.achieved_tflops_per_gpu(tps, hw_per_token, 256) == pytest.approx(135)
    assert ut.hfu(tps, hw_per_token, 312, 256) == pytest.approx(0.43, abs=0.005)
    # MFU is lower by the recompute share: Eq. 7 / Eq. 3
    model_per_token = fl.flops_per_token(fl.ModelShape(40, 6144, 48, 51200), 2048)
    assert ut.mfu(tps, model_per_token, 312, 256) / ut.hfu(tps, hw_per_token, 312, 256) == \
        pytest.approx(model_per_token / hw_per_token)


def test_seed_best_config_68_percent_is_flagged():
    a = ut.assess_utilization(0.68)
    assert [f.code for f in a.findings] == ["rare"]
    assert "38" in a.findings[0].message and a.ok



def test_a_measured_and_a_predicted_mfu_meet_one_ceiling():
    """A measured 58.9% (`llmcost mfu`) and a predicted one (the review's band and flag) are
    judged against one number: PaLM 540B's 57.8% HFU, the highest of a large published run
    (Chowdhery et al. 2022, Table 3)."""
    from llmcost.training.uncertainty import PUBLISHED_MFU_CEILING
    assert ut.RARE_ABOVE is PUBLISHED_MFU_CEILING == 0.578
    assert ut.PUBLISHED_RANGE[1] is PUBLISHED_MFU_CEILING
    assert [f.code for f in ut.assess_utilization(0.589).findings] == ["rare"]
    assert not ut.assess_utilization(0.57).findings
    assert list(ut.plausibility_level(np.array([0.57, 0.589]))) == [0, 1]

def test_seed_worst_config_12_percent_is_low():
    assert [f.code for f in ut.assess_utilization(0.12).findings] == ["low"]


def test_above_peak_is_an_error():
    a = ut.assess_utilization(1.3)
    assert not a.ok and a.findings[0].code == "above-peak"


def test_double_of_published_suspects_sparsity():
    # Llama 3 405B reached 43% on 8,192 H100; a claim of 0.84 for the same setting is 1.95x.
    codes = [f.code for f in ut.assess_utilization(0.84, published=0.43).findings]
    assert "sparsity-suspected" in codes


def test_sparse_peak_detected_against_catalog():
    h100 = catalog.gpu("h100-sxm")
    a = ut.assess_utilization(0.25, peak_tflops=1978.9, gpu=h100)   # = 2 x 989.4
    # 1978.9 is both the BF16 sparsity figure and the dense FP8 peak: either way, for a
    # BF16 run it is the wrong peak; the finding says sparse since 2x dense BF16 matches.
    assert a.findings[0].code == "sparse-peak"
    assert not ut.assess_utilization(0.4, peak_tflops=989.4, gpu=h100).findings


def test_plausibility_levels_vectorized():
    lv = ut.plausibility_level(np.array([0.4, 0.65, 0.86, 1.2]), published=0.43)
    assert list(lv) == [0, 1, 2, 3]


@pytest.mark.parametrize("kwargs,param", [
    (dict(gpus=0), "gpus"), (dict(wall_clock_s=-5), "wall_clock_s"),
    (dict(peak_tflops=float("inf")), "peak_tflops"), (dict(steps="ten"), "steps"),
])
def test_bad_input(kwargs, param):
    args = dict(flops_per_token=1e12, global_batch=512, seq_len=2048, steps=10,
                peak_tflops=312, gpus=8, wall_clock_s=100)
    args.update(kwargs)
    with pytest.raises(InputError) as e:
        ut.effective_utilization(**args)
    assert e.value.param == param
