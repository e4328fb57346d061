"""Expected bus bandwidth, findings and the whole check (library and `llmcost check`)."""

import json
from pathlib import Path

import numpy as np
import pytest
from cli.test_cli_robust import run_cli

from llmcost.checks import check as chk
from llmcost.checks import expect, nccl_tests, train_log
from llmcost.checks import findings as fnd
from llmcost.scenario import Scenario
from llmcost.training.step import calibration_for

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"
GIB = 2 ** 30


def test_bus_bandwidth_factors():
    # nccl-tests doc/PERFORMANCE.md
    assert expect.bus_bandwidth_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert expect.bus_bandwidth_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert expect.bus_bandwidth_factor("alltoall", 16) == pytest.approx(15 / 16)
    assert expect.bus_bandwidth_factor("sendrecv", 8) == 1.0


def test_expected_8_gpu_h100_all_reduce(cat):
    gpu = cat.gpu("h100-sxm")
    up = cat.fabric(gpu.scale_up)
    eta = calibration_for(gpu).nvlink_efficiency
    links = expect.TwoLevelLinks(up.bandwidth_gb_per_s_per_gpu, 50, up.latency_us, 1, eta, 0.9)
    got = expect.expected_busbw_gb_per_s("all_reduce", 8 * GIB, 8, 8, links)
    # ring: t = 2 (n-1) alpha + 2 (n-1)/n S / (eta B); busbw = 2 (n-1)/n S / t
    t = 14 * up.latency_us * 1e-6 + 1.75 * 8 * GIB / (eta * 450e9)
    assert got == pytest.approx(1.75 * 8 * GIB / t / 1e9, rel=1e-12)
    # NVIDIA's figure for a ring on NVLink 4: ~370 GB/s after protocol overhead
    # (S. Jeaugey, NVIDIA/nccl-tests#212)
    assert got == pytest.approx(370, rel=0.1)


def test_expected_two_nodes_is_the_nics():
    # 16 ranks, 8 per node over 8 x 50 GB/s at 0.9, congestion 1 + 0.26 log2(2). Ring: each
    # NIC carries 2(N-1)/N S/k, busbw = k eta B_o / c; tree (NCCL's choice at large sizes):
    # each node sends S once through its k NICs, busbw = 2(N-1)/N k eta B_o / c
    args = (16, 8, expect.TwoLevelLinks(450, 50, 1, 1, 0.77, 0.9, 1.26))
    ring = 8 * 50 * 0.9 / 1.26
    assert expect.expected_busbw_gb_per_s("all_reduce", 16 * GIB, *args) == pytest.approx(
        2 * 15 / 16 * ring, rel=1e-3)
    # S. Jeaugey (NVIDIA/nccl#1017): busbw ~480 GB/s on two H100 nodes needs ~240 GB/s per
    # node between them: busbw / node bandwidth = 2, the tree's 2(N-1)/N = 1.875 within 7%
    assert 480 / 240 == pytest.approx(2 * 15 / 16, rel=0.07)
    # all-gather has no tree: the ring's k eta B_o / c
    assert expect.expected_busbw_gb_per_s("all_gather", 16 * GIB, *args) == pytest.approx(
        ring, rel=1e-3)
    assert np.isnan(expect.expected_busbw_gb_per_s("broadcast", GIB, 8, 8, expect.TwoLevelLinks(450, 50)))


def _h100_all_reduce(busbw_share):
    """8 x H100 all-reduce rows at a share of the expectation (derived, not measured)."""
    sizes = np.array([2 ** k for k in range(20, 34)], float)
    exp = expect.expected_busbw_gb_per_s("all_reduce", sizes, 8, 8,
                                         expect.TwoLevelLinks(450, 50, 1, 1, 0.77, 0.9))
    return sizes, busbw_share * exp, exp


def test_a_third_of_expected_is_an_alert_and_healthy_is_not():
    # an 8-GPU H100 all-reduce topping out at a third of the expected is an alert
    s, b, e = _h100_all_reduce(1 / 3)
    f = fnd.busbw_findings("all_reduce", s, b, e, np.zeros_like(s), 8)
    assert [x["level"] for x in f] == ["alert"] and "0.33 x" in f[0]["evidence"]
    s, b, e = _h100_all_reduce(0.95)
    assert [x["level"] for x in fnd.busbw_findings("all_reduce", s, b, e, 0 * s, 8)] == ["ok"]
    s, b, e = _h100_all_reduce(0.7)
    assert [x["level"] for x in fnd.busbw_findings("all_reduce", s, b, e, 0 * s, 8)] == ["warn"]
    # NVLS: ~480 GB/s busbw on 8 H100 (nccl-tests#212) reads above the ring model: ok
    f = fnd.busbw_findings("all_reduce", s, 0 * s + 480, e, 0 * s, 8)
    assert [x["level"] for x in f] == ["ok"] and "above the model" in f[0]["what"]


def test_wrong_results_alert():
    s, b, e = _h100_all_reduce(0.95)
    wrong = np.zeros_like(s)
    wrong[3] = 12
    f = fnd.busbw_findings("all_reduce", s, b, e, wrong, 8)
    assert f[0]["level"] == "alert" and "12 wrong" in f[0]["evidence"]


def _check_file(cat, name, gpu, fabric, **placement):
    r = nccl_tests.read((DATA / name).read_text(), name=name)
    g = cat.gpu(gpu)
    return chk.check(chk.Measured(r), hardware=chk.Hardware(g, cat.fabric(g.scale_up), cat.fabric(fabric)),
                     placement=chk.Placement(**placement))


@pytest.mark.parametrize("name, gpu, fabric", [
    ("nccl_all_reduce_a3mega_h100_16.txt", "h100-sxm", "gcp-a3-mega-tcpxo"),
    ("nccl_all_reduce_p5_h100_16.txt", "h100-sxm", "aws-efa-p5"),
    ("nccl_all_reduce_p4de_a100_16.txt", "a100-80gb", "aws-efa-p4d"),
])
def test_healthy_clusters_get_no_alert(cat, name, gpu, fabric):
    # two nodes each (SOURCES.csv); the a3mega output shows it in its Rank lines, the
    # others are told (--nodes 2)
    out = _check_file(cat, name, gpu, fabric, nodes=2)
    assert {f["level"] for f in out["findings"]} == {"ok"}
    top = max(out["collectives"], key=lambda c: c["busbw_gb_per_s"])
    # two nodes of 8: NCCL's tree, 2(N-1)/N x the node's NICs k eta B_o / c(2), or NVLink's
    # eta_i B_i if that is lower
    f, g = cat.fabric(fabric), cat.gpu(gpu)
    nics = 8 * f.bandwidth_gb_per_s_per_gpu * f.efficiency / (1 + f.congestion_per_doubling)
    nvlink = 0.77 * cat.fabric(g.scale_up).bandwidth_gb_per_s_per_gpu
    assert top["expected_busbw_gb_per_s"] == pytest.approx(2 * 15 / 16 * min(nics, nvlink),
                                                           rel=0.01)
    # the same cluster at 45% of what it measured: below half the expectation an alert,
    # else (0.5-0.8) a warning
    share = 0.45 * top["busbw_gb_per_s"] / top["expected_busbw_gb_per_s"]
    r = nccl_tests.read((DATA / name).read_text(), name=name)
    slow = type(r)(**{**r.__dict__, "busbw_gb_per_s": 0.45 * r.busbw_gb_per_s})
    out = chk.check(chk.Measured(slow), hardware=chk.Hardware(g, cat.fabric(g.scale_up), f),
                    placement=chk.Placement(nodes=2))
    assert out["findings"][0]["level"] == ("alert" if share < 0.5 else "warn")


def test_the_collapse_of_nccl_1453_is_found(cat):
    out = _check_file(cat, "nccl_all_reduce_collapse.txt", "a100-80gb", "ib-hdr")
    what = [(f["level"], f["what"]) for f in out["findings"]]
    assert ("alert", "all_reduce on 24 ranks: bandwidth collapse at 64 MiB") in what
    f = [x for x in out["findings"] if "collapse" in x["what"]][0]
    assert "29.5 GB/s" in f["evidence"]
    # 24 ranks without Rank lines: the placement is asked for, not assumed
    assert ("warn", "all_reduce: not judged against the fabric") in what


def test_p2p_disabled_alltoall_is_far_below_nvlink(cat):
    # PR 318 ran 8 GPUs in one node with NCCL_P2P_DISABLE=1 (its GPU is not named: any
    # NVLink 4 system expects ~340 GB/s for a pairwise all-to-all of 64 MiB)
    out = _check_file(cat, "nccl_alltoall_p2p_disabled.json", "h100-sxm", "ib-ndr", nodes=1)
    assert out["findings"][0]["level"] == "alert"
    row = out["collectives"][-1]
    assert row["busbw_gb_per_s"] == 20.628529
    # pairwise: t = alpha + (k-1)/N S / (eta B) inside one node; busbw = (N-1)/N S / t
    t = 1e-6 + 7 / 8 * 67108864 / (0.77 * 450e9)
    assert row["expected_busbw_gb_per_s"] == pytest.approx(7 / 8 * 67108864 / t / 1e9, rel=1e-9)


TITAN_Q = "model=llama3-8b&gpu=h100-sxm&gpus=8&seq_len=8192&global_batch_tokens=65536&stack=fsdp"


def _check_log(cat, name, query):
    s, _ = Scenario.from_query(query, cat, strict=True)
    return chk.check(chk.Measured(log=train_log.read((DATA / name).read_text())), scenario=s,
                     query=query, cat=cat)


def test_torchtitan_mfu_is_ours_and_agrees_with_the_log(cat):
    out = _check_log(cat, "torchtitan_llama3_8b_h100.log", TITAN_Q)
    st = out["steps"]
    model = cat.model("llama3-8b")
    tps = np.median([5856, 5593, 5868, 5869, 5864, 5862])          # per GPU, as logged
    assert st["tokens_per_s"] == pytest.approx(8 * tps)
    assert st["mfu"] == pytest.approx(model.flops_per_token("none", 8192) * tps / 989.4e12,
                                      rel=1e-9)
    # torchtitan's own MFU (6N + 12 L H Q T over the same peak): 34.3%
    assert st["mfu"] == pytest.approx(0.3434, rel=0.02)
    assert st["median_step_s"] == pytest.approx(np.median([14.648, 13.964, 13.961, 13.974,
                                                           13.977]) / 10, rel=1e-6)
    assert 0.3 < st["predicted_mfu"] < 0.7 and st["count"] == 6 and st["predicted_fits"]
    assert "alert" not in {f["level"] for f in out["findings"]}


def test_the_prediction_band_is_the_step_models_own(cat):
    from llmcost.training.uncertainty import throughput_band
    out = _check_log(cat, "torchtitan_llama3_8b_h100.log", TITAN_Q)
    st = out["steps"]
    band = throughput_band("hopper", "bf16", st["predicted_mfu"], cat.step_model_errors())
    assert st["predicted_mfu_band"] == pytest.approx(
        [st["predicted_mfu"] * (1 - band.low), st["predicted_mfu"] * (1 + band.high)])
    # tokens/s in the band means step time in [t / (1 + high), t / (1 - low)]
    t = st["predicted_step_time_s"]
    assert st["predicted_step_time_band_s"] == pytest.approx([t / (1 + band.high),
                                                              t / (1 - band.low)])
    assert st["band_reason"] == band.reason


def test_mfu_below_the_band_is_a_warning_above_the_alert(cat):
    # the torchtitan run read against the Megatron stack's prediction (the wrong stack: the
    # run is FSDP): below 0.6 x the prediction an alert, else below the band a warning
    out = _check_log(cat, "torchtitan_llama3_8b_h100.log", TITAN_Q.replace("&stack=fsdp", ""))
    st = out["steps"]
    level = ("alert" if st["mfu"] < 0.6 * st["predicted_mfu"] else
             "warn" if st["mfu"] < st["predicted_mfu_band"][0] else "ok")
    assert level != "ok"
    assert out["findings"][0]["level"] == level


def test_checkpoint_saves_p50_and_p99(cat):
    out = _check_log(cat, "torchtitan_checkpoint_zoc.log", TITAN_Q)
    assert out["steps"]["checkpoints"] == 1 and out["steps"]["checkpoint_p99_s"] == 0.02
    f = [x for x in out["findings"] if x["what"] == "checkpoint saves"][0]
    assert "p50 0.02 s, p99 0.02 s" in f["evidence"]


def test_same_throughput_on_a_b200_is_an_alert(cat):
    # 339 model TFLOP/s per GPU is 34% of an H100 but 15% of a B200's 2,250: below 0.6 x
    # any prediction the step model makes for a B200
    out = _check_log(cat, "torchtitan_llama3_8b_h100.log", TITAN_Q.replace("h100-sxm", "b200"))
    st = out["steps"]
    assert st["mfu"] == pytest.approx(0.3434 * 989.4 / 2250, rel=0.02)
    assert st["mfu"] < 0.6 * st["predicted_mfu"]
    assert ("alert", "MFU far below the prediction") in [(f["level"], f["what"])
                                                         for f in out["findings"]]


def test_a_scenario_unlike_the_log_is_named(cat):
    # Megatron-LM#756 logs 238.7 TFLOP/s per GPU at 128 sequences per 5.47 s on 16 GPUs;
    # at Mixtral's catalog length of 32,768 tokens that is 6 x the H100's peak
    out = _check_log(cat, "megatron_mixtral_8x7b_16xh100.log",
                     "model=mixtral-8x7b&gpu=h100-sxm&gpus=16")
    assert out["steps"]["tokens_per_s"] == pytest.approx(128 * 32768 / 5.4707)
    levels = {f["what"]: f["level"] for f in out["findings"]}
    assert levels["the scenario gives more model FLOPs than the peak"] == "alert"
    assert out["steps"]["mfu"] is None
    # 128 x 32768 tokens / 5.4707 s / 16 GPUs x Mixtral's FLOPs per token is above the dense
    # peak: no MFU above 1 is shown anywhere, as an answer or in a finding
    mfu = out["steps"]["flops_per_token"] * 128 * 32768 / 5.4707 / (16 * 989.4e12)
    assert mfu > 1 and out["steps"]["mfu"] is None
    assert f"{mfu:.2f}" not in json.dumps(out["findings"])
    assert levels["the scenario does not match the log"] == "warn"
    assert "global_batch_tokens=4194304" in out["notes"][0]


def test_a_layout_that_does_not_fit_is_named(cat):
    # 405B parameters on 8 H100: 810 GB of BF16 weights alone against 8 x 80 GiB
    out = _check_log(cat, "torchtitan_llama3_8b_h100.log", "model=llama3-405b&gpus=8&gpu=h100-sxm")
    assert out["steps"]["predicted_fits"] is False
    # alerts first, then the warning naming the layout
    assert "the scenario's layout does not fit in memory" in [
        f["what"] for f in out["findings"] if f["level"] == "warn"]


def test_restart_and_gap_from_a_log_logged_twice(cat):
    text = (DATA / "torchtitan_llama3_8b_h100.log").read_text()
    again = text.replace("22:3", "23:3")                      # the same steps an hour later
    s, _ = Scenario.from_query(TITAN_Q, cat, strict=True)
    out = chk.check(chk.Measured(log=train_log.read(text + again)), scenario=s, query=TITAN_Q, cat=cat)
    f = {x["what"]: x for x in out["findings"]}
    assert f["restart"]["level"] == "alert"
    assert "step 200 logged after step 250: 51 steps" in f["restart"]["evidence"]
    # 23:30:50,322 - 22:32:00,846 = 3,529.476 s between the last and the repeated line
    assert f["gaps in the log (lost time)"]["level"] == "warn"
    assert "3,529 s between steps 250 and 200" in f["gaps in the log (lost time)"]["evidence"]


# --------------------------------------------------------------------------- CLI

def test_cli_nccl_json_keys():
    code, out, err = run_cli(["check", "--nccl-tests", str(DATA / "nccl_all_reduce_a3mega_h100_16.txt"),
                              "--gpu", "h100-sxm", "--fabric", "gcp-a3-mega-tcpxo", "--json"])
    assert code == 0, err
    r = json.loads(out)
    row = r["collectives"][-1]
    assert {"size_bytes", "busbw_gb_per_s", "expected_busbw_gb_per_s"} <= set(row)
    assert row["size_bytes"] == 8589934592 and row["busbw_gb_per_s"] == 338.82
    assert all({"level", "what", "evidence"} == set(f) for f in r["findings"])


def test_cli_train_log_steps_keys():
    code, out, err = run_cli(["check", "--train-log", str(DATA / "torchtitan_llama3_8b_h100.log"),
                              "--query", TITAN_Q, "--json"])
    assert code == 0, err
    st = json.loads(out)["steps"]
    assert {"count", "median_step_s", "tokens_per_s", "mfu", "predicted_mfu"} <= set(st)


def test_cli_text_output_and_hardware_from_query():
    code, out, err = run_cli(["check", "--nccl-tests", str(DATA / "nccl_all_reduce_collapse.txt"),
                              "--query", "gpu=a100-80gb&fabric=ib-hdr"])
    assert code == 0, err
    assert out.startswith("findings:\n  [alert]") and "collapse at 64 MiB" in out


@pytest.mark.parametrize("argv, match", [
    (["check"], "--nccl-tests FILE, --train-log FILE and/or --dcgm"),
    (["check", "--nccl-tests", "/no/such/file", "--gpu", "h100-sxm"], "cannot read"),
    (["check", "--nccl-tests", str(DATA / "SOURCES.csv"), "--gpu", "h100-sxm"], "no result row"),
    (["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt")], "--gpu"),
    (["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt"), "--gpu", "h100-sxm",
      "--model", "llama3-8b"], "--model is the training log's model"),
    (["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt"), "--gpu", "h100-sxm",
      "--nodes", "0"], "--nodes"),
    (["check", "--train-log", str(DATA / "megatron_llm_slow.log"), "--gpu", "h100-sxm",
      "--query", "model=llama3-8b"], "--gpu is the nccl-tests hardware"),
    (["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt"), "--gpu", "h100-sxm",
      "--query", "gpus=8"], "--query is read for --train-log"),
    (["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt"), "--gpu", "h100-sxm",
      "--fabric", "nvlink4"], "scale-up link"),
    (["check", "--train-log", str(DATA / "nccl_all_reduce_p5_h100_16.txt"), "--query",
      "model=llama3-8b"], "no step line"),
])
def test_cli_refusals_are_one_line(argv, match):
    code, out, err = run_cli(argv)
    assert code == 2 and out == ""
    assert err.startswith("llmcost: error:") and err.count("\n") == 1
    assert match in err


def test_cli_dcgm_findings():
    code, out, err = run_cli(["check", "--dcgm", str(DATA / "dcgm_exporter_a30_mig.prom"), "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["dcgm"]["metrics"]["DCGM_FI_PROF_DRAM_ACTIVE"]["gpus"] == 6
    assert [(f["level"], f["what"]) for f in r["findings"]] == [("warn", "profiling gauges read 0")]
    code, out, err = run_cli(["check", "--dcgm", str(DATA / "dcgm_exporter_readme.prom")])
    assert code == 0 and "[warn] DCGM fields not available: DCGM_FI_DEV_MEMORY_TEMP (1)" in out


def test_cli_reads_dcgmi_dmon_output():
    code, out, err = run_cli(["check", "--dcgm", str(DATA / "dcgmi_dmon_a100_mig.txt"), "--json"])
    assert code == 0, err
    r = json.loads(out)
    tensor = r["dcgm"]["metrics"]["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]
    # GPU 0 and two MIG instances, 7 samples each
    assert tensor["gpus"] == 3 and tensor["samples"] == 21 and tensor["max"] == 0.954
    assert [(f["level"], f["what"]) for f in r["findings"]] == [("ok", "profiling gauges read")]


def test_data_loading_share_against_the_cluster_guides_10_percent():
    # GWDA's log: the step waits 274.37 ms of 429.4 ms (63.9%) and 263.80 of 1996.1 (13.2%):
    # median 38.6%, above the guide's 10%; a warning, not yet "longer than it computes"
    log = train_log.read((DATA / "megatron_data_bound_gwda.log").read_text())
    share = fnd.data_loading_share(log.data_loading_s, log.step_time_s)
    assert share == pytest.approx(np.median([263.80 / 1996.1, 274.37 / 429.4]), rel=1e-12)
    (f,) = fnd.data_loading_findings(log.data_loading_s, log.step_time_s)
    assert f["level"] == "warn" and f"{share:.1%}" == "38.6%" and "38.6%" in f["evidence"]
    # the step itself: 274 of 429 ms is above half: an alert
    (g,) = fnd.data_loading_findings([0.27437], [0.4294])
    assert g["level"] == "alert"
    # BigScience's Megatron runs on 16 GB V100 nodes: 2.70 ms of 661.3 ms, fine
    (h,) = fnd.data_loading_findings([0.00270], [0.6613])
    assert h["level"] == "ok"


def test_cli_check_reports_the_data_loading_share():
    code, out, err = run_cli(["check", "--train-log", str(DATA / "megatron_data_bound_gwda.log"),
                              "--query", "model=llama3-8b&gpu=h100-sxm&gpus=2", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["steps"]["data_loading_share"] == pytest.approx(
        np.median([263.80 / 1996.1, 274.37 / 429.4]), rel=1e-12)
    assert any(f["what"] == "data loading above 10% of the step" for f in r["findings"])


# ------------------------------------------------------------------ size regimes

HEALTHY = [("nccl_all_reduce_a3mega_h100_16.txt", "h100-sxm", "gcp-a3-mega-tcpxo", 2),
           ("nccl_all_reduce_p5_h100_16.txt", "h100-sxm", "aws-efa-p5", 2),
           ("nccl_all_reduce_p4de_a100_16.txt", "a100-80gb", "aws-efa-p4d", 2),
           ("nccl_all_reduce_h100pcie_2.txt", "h100-pcie", "ib-ndr", 1)]


def test_share_from_the_printed_time_and_the_regime_by_the_expectation():
    # all-reduce on 16 ranks: f = 2 x 15/16 = 1.875; 1 MiB expected at 25.98 GB/s takes
    # 1.875 x 1,048,576 B / 25.98 GB/s = 75.68 us; nccl-tests printed 123.2 us: 0.614 x
    q = expect.share_of_expected("all_reduce", [2 ** 20], [123.2], [15.95], [25.98], 16)
    assert q[0] == pytest.approx(75.68 / 123.2, rel=1e-3)
    # no time printed: from the busbw column
    q = expect.share_of_expected("all_reduce", [2 ** 20], [np.nan], [15.95], [25.98], 16)
    assert q[0] == pytest.approx(15.95 / 25.98)
    reg = expect.size_regime([1.0, 10.0, 79.9, 80.0, np.nan], 100.0)
    assert list(reg) == ["latency-bound", "transitional", "transitional", "bandwidth-bound",
                         ""]


def test_regime_thresholds_are_set_on_the_healthy_samples(cat):
    # each threshold is 0.8 x the lowest share a healthy sample shows in that regime:
    # recomputed here from the samples, and no healthy sample warns
    lowest = {}
    for name, gpu, fabric, nodes in HEALTHY:
        out = _check_file(cat, name, gpu, fabric, nodes=nodes)
        assert {f["level"] for f in out["findings"]} == {"ok"}, name
        for c in out["collectives"]:
            if c["regime"]:
                lowest[c["regime"]] = min(lowest.get(c["regime"], 9.0), c["share_of_expected"])
    assert set(lowest) == set(fnd.REGIME_WARN_SHARE)
    for reg, thr in fnd.REGIME_WARN_SHARE.items():
        assert thr == pytest.approx(0.8 * lowest[reg], abs=0.01), reg


def test_one_slow_node_warns_in_every_regime(cat):
    # the p5 sample with one node at 0.4x (SOURCES.csv: derived): the large-message alert,
    # and each regime below its threshold, the threshold and its basis stated
    out = _check_file(cat, "nccl_all_reduce_p5_h100_16_derived_slow_0.4x.txt", "h100-sxm",
                      "aws-efa-p5", nodes=2)
    assert out["findings"][0]["level"] == "alert"
    warned = {f["what"].rsplit(" at ", 1)[1] for f in out["findings"]
              if "below expectation at" in f["what"]}
    assert warned == {"latency-bound sizes", "transitional sizes", "bandwidth-bound sizes"}
    for f in out["findings"]:
        if "below expectation at" in f["what"]:
            assert "lowest share of the healthy samples" in f["evidence"]
