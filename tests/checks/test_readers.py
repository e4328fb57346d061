"""Readers of nccl-tests and training logs on real public outputs (tests/data/cluster,
origins in SOURCES.csv). Every expected figure is the one printed in the source file."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmcost._validate import InputError
from llmcost.checks import dcgm, nccl_tests, train_log

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"


def _nccl(name, **kw):
    return nccl_tests.read((DATA / name).read_text(), name=name, **kw)


def _log(name):
    return train_log.read((DATA / name).read_text())


def test_every_data_file_has_an_origin():
    src = pd.read_csv(DATA / "SOURCES.csv")
    files = {p.name for p in DATA.iterdir() if p.name != "SOURCES.csv"}
    assert files == set(src["file"])
    # a public repository's file, issue or pull request, or the vendor's own documentation
    assert src["origin"].str.match(
        r"https://(github\.com/|docs\.nvidia\.com/|huggingface\.co/)").all()
    # each with the verdict the check should give (or why it reads only)
    assert src["expected_verdict"].notna().all()
    assert src["as_of"].notna().all()
    # at least one file per reader comes from a cluster with a reported problem
    assert src["known_problem"].notna().sum() >= 6


def test_nccl_text_with_rank_lines_a3mega():
    r = _nccl("nccl_all_reduce_a3mega_h100_16.txt")
    assert len(r.size_bytes) == 31 and set(r.op) == {"all_reduce"}
    assert r.ranks == 16 and r.ranks_from == "Rank lines"
    assert r.hosts == ("ztan-mig-235z", "ztan-mig-gq73") and r.nodes == 2
    assert r.device == "NVIDIA H100 80GB HBM3"
    assert r.size_bytes[-1] == 8589934592
    assert r.busbw_gb_per_s[-1] == 338.82 and r.algbw_gb_per_s[-1] == 180.71
    assert r.busbw_in_place_gb_per_s[-1] == 337.35 and r.time_us[-1] == 47535
    assert np.all(r.wrong == 0)


def test_device_at_a_tie_is_the_first_printed_whatever_the_hash_seed():
    # half the ranks renamed: 8 print each device; the first printed wins, on every run
    text = (DATA / "nccl_all_reduce_a3mega_h100_16.txt").read_text()
    lines, seen = [], 0
    for x in text.splitlines():
        if "Rank " in x and seen < 8:
            x, seen = x.replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"), seen + 1
        lines.append(x)
    assert nccl_tests.read("\n".join(lines)).device == "NVIDIA H100 PCIe"
    flipped = [x.replace("NVIDIA H100 PCIe", "TMP").replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe")
               .replace("TMP", "NVIDIA H100 80GB HBM3") for x in lines]
    assert nccl_tests.read("\n".join(flipped)).device == "NVIDIA H100 80GB HBM3"


def test_ranks_from_the_bus_bandwidth_factor():
    # 338.82 / 180.71 = 1.875 = 2 (n-1) / n with n = 16, as the Rank lines say
    text = (DATA / "nccl_all_reduce_a3mega_h100_16.txt").read_text()
    no_ranks = "\n".join(x for x in text.splitlines() if "Rank " not in x)
    r = nccl_tests.read(no_ranks)
    assert r.ranks == 16 and r.ranks_from.startswith("busbw/algbw")
    # nothing names the collective: busbw > algbw makes it an all-reduce
    assert set(r.op) == {"all_reduce"} and r.notes


@pytest.mark.parametrize("name, rows, ranks, top", [
    ("nccl_all_reduce_p5_h100_16.txt", 16, 16, 487.09),     # srun --label "0: " prefixes
    ("nccl_all_reduce_p4de_a100_16.txt", 13, 16, 78.33),
    # Open MPI --tag-output "[0]" at the start and inside each row; 29.50 / 15.39 = 1.917
    # = 2 (n-1)/n for n = 24
    ("nccl_all_reduce_collapse.txt", 10, 24, 29.50),
    # two GPUs: busbw = algbw (2 (n-1)/n = 1)
    ("nccl_all_reduce_h100pcie_2.txt", 2, 2, 115.86),
])
def test_nccl_text_files(name, rows, ranks, top):
    r = _nccl(name)
    assert len(r.size_bytes) == rows and set(r.op) == {"all_reduce"}
    assert r.ranks == ranks
    assert r.busbw_gb_per_s.max() == top


def test_collapse_file_rows():
    r = _nccl("nccl_all_reduce_collapse.txt")
    i = list(r.size_bytes).index(67108864)
    assert (r.busbw_gb_per_s[i - 1], r.busbw_gb_per_s[i]) == (29.50, 5.27)
    assert r.busbw_in_place_gb_per_s[1] == 9.65


def test_nccl_json_pr318():
    r = _nccl("nccl_alltoall_p2p_disabled.json")
    assert list(r.op) == ["alltoall", "alltoall"]
    assert list(r.size_bytes) == [33554432, 67108864]
    assert r.busbw_gb_per_s.tolist() == [19.648366, 20.628529]
    assert r.busbw_in_place_gb_per_s.tolist() == [20.115716, 20.609110]
    # 20.628529 / 23.575462 = 0.875 = (n-1)/n: the PR's -g 8
    assert r.ranks == 8
    assert r.wrong[0] == 0


def test_nccl_op_flag_overrides():
    r = _nccl("nccl_alltoall_p2p_disabled.json", op="all_gather")
    assert set(r.op) == {"all_gather"}
    with pytest.raises(InputError, match="nccl_op"):
        _nccl("nccl_alltoall_p2p_disabled.json", op="allreduce")


@pytest.mark.parametrize("text, match", [
    ("", "no result row"),
    ("# just a comment\nNCCL INFO nothing\n", "no result row"),
    ("     1024   256  float  sum  -1  abc  0.1  0.1  0  1.0  0.1  0.1  0", "line 1: .*time"),
    ("x\n     1024   256  float  sum  -1  7.0  0.1", "line 2: expected a result row"),
    ("     1024   256  float  sum  -1  7.0  -0.1  0.1  0  1.0  0.1  0.1  0", "line 1: .*algbw"),
    ("  " + "9" * 30 + " 256 float sum -1 7.0 0.1 0.1 0 1.0 0.1 0.1 0", "above"),
    ("ok\x00", "NUL"),
    ("{", "line 1 column 2: not valid JSON"),
    ('{"results": [{"size": 8, "out_of_place": {"bus_bw": NaN}}]}', "NaN"),
    ('{"results": [{"size": -8, "out_of_place": {"bus_bw": 1}}]}', "size in bytes"),
    ('{"benchmark": [{"8": {"oop_busbw": "fast"}}]}', "oop_busbw"),
    ('{"other": 1}', "'results' list"),
    ("[" * 100_000 + "]" * 100_000, "no result row"),
    ("{" + '"a":' * 1 + "[" * 100_000 + "]" * 100_000 + "}", "'results' list|JSON"),
])
def test_nccl_bad_input_is_one_line_naming_what(text, match):
    with pytest.raises(InputError, match=match) as e:
        nccl_tests.read(text)
    assert e.value.param == "nccl_tests" and "\n" not in str(e.value)


def test_megatron_iteration_lines():
    log = _log("megatron_mixtral_8x7b_16xh100.log")
    assert log.framework == "megatron"
    assert log.step.tolist() == [71, 72, 73]
    assert log.step_time_s.tolist() == pytest.approx([5.3616, 5.4707, 5.8299], rel=1e-12)
    assert log.global_batch.tolist() == [128, 128, 128]
    assert log.log_tflops_per_gpu.tolist() == [243.6, 238.7, 224.0]
    assert log.time_s.tolist() == [0.0, 6.0, 12.0]     # 03:02:12, :18, :24


def test_megatron_without_throughput_or_timestamps():
    log = _log("megatron_llm_slow.log")
    assert log.step.tolist() == [122, 123, 124, 125]
    assert log.step_time_s[0] == pytest.approx(86.5452)
    assert np.isnan(log.time_s).all() and np.isnan(log.log_tflops_per_gpu).all()
    assert (log.global_batch == 1024).all()


def test_megatron_batch_generator_timers_gwda():
    # the time each step waited for its data, as the "time (ms)" line after the iteration
    # line prints it: 263.80 ms of 1996.1 ms, then 274.37 ms of 429.4 ms
    log = _log("megatron_data_bound_gwda.log")
    assert log.step.tolist() == [1, 2]
    assert log.data_loading_s.tolist() == pytest.approx([0.26380, 0.27437], rel=1e-12)
    assert log.step_time_s.tolist() == pytest.approx([1.9961, 0.4294], rel=1e-12)


def test_megatron_minmax_timers_take_the_slowest_rank():
    text = ("iteration 10/ 100 | elapsed time per iteration (ms): 500.0 | global batch size: 8 |\n"
            "    batch-generator ...............................: (12.50, 80.00)\n")
    log = train_log.read(text)
    assert log.data_loading_s.tolist() == [0.08]


def test_a_log_without_timers_has_no_data_loading():
    assert np.isnan(_log("megatron_mixtral_8x7b_16xh100.log").data_loading_s).all()


def test_nemo2_step_lines():
    log = _log("nemo2_esm2_bionemo.log")
    assert log.framework == "nemo"
    assert log.step.tolist() == [120, 121, 122, 123, 124, 125]
    assert log.step_time_s.tolist() == [0.03146, 0.03163, 0.03215, 0.03157, 0.0317, 0.03147]
    assert (log.global_batch == 1).all() and np.isnan(log.time_s).all()


def test_torchtitan_step_lines():
    log = _log("torchtitan_llama3_8b_h100.log")
    assert log.framework == "torchtitan"
    assert log.step.tolist() == [200, 210, 220, 230, 240, 250]
    # 22:31:04,970 -> 22:31:18,934: 13.964 s over 10 steps
    assert log.step_time_s[2] == pytest.approx(1.3964, abs=1e-6)   # float epoch seconds
    assert np.isnan(log.step_time_s[0])
    assert log.tokens_per_s_per_gpu.tolist() == [5856, 5593, 5868, 5869, 5864, 5862]
    assert log.log_mfu[0] == pytest.approx(0.3429) and log.memory_gib[0] == 49.66
    small = _log("torchtitan_checkpoint_pr.log")
    assert small.step.tolist() == list(range(14, 22)) and small.log_mfu[0] == pytest.approx(0.0017)


def test_torchtitan_checkpoint_save_lines():
    log = _log("torchtitan_checkpoint_zoc.log")
    assert log.step.tolist() == [800, 810, 820]
    assert log.checkpoint_s.tolist() == [0.02]
    # 13:20:46,458 -> 13:21:01,733 over 10 steps, the save and a profiler dump inside
    assert log.step_time_s[1] == pytest.approx(15.275 / 10, abs=1e-6)
    assert len(_log("torchtitan_llama3_8b_h100.log").checkpoint_s) == 0


def test_torchtitan_other_ranks_copies_dropped_restart_kept():
    text = (DATA / "torchtitan_llama3_8b_h100.log").read_text()
    both = "\n".join(x + "\n" + x.replace("[rank0]", "[rank3]") for x in text.splitlines())
    assert _steps(both) == [200, 210, 220, 230, 240, 250]
    # the same rank logging the steps again later (a restart) keeps both runs
    later = text.replace("22:3", "23:3")
    assert _steps(text + later) == [200, 210, 220, 230, 240, 250] * 2


def _steps(text):
    return train_log.read(text).step.tolist()


@pytest.mark.parametrize("text, match", [
    ("", "no step line"),
    ("hello\nworld", "no step line"),
    (" iteration 7/ 10 | elapsed time per iteration (ms): fast |", "line 1: .*elapsed"),
    (" elapsed time per iteration (ms): 5.0 |", "line 1: expected 'iteration N/"),
    ("x\n[titan] step: 3  loss: 1.0  tps: 1e999  tflops: 1", "line 2: .*tps"),
    ("[titan] step: x  loss: 1.0  tps: 10", "line 1: expected 'step: N"),
    ("| global_step: 3 | train_step_timing in s: -0.1", "line 1: .*train_step_timing"),
    ("| train_step_timing in s: 0.1", "line 1: expected 'global_step: N'"),
    ("| global_step: 3 | train_step_timing in s:", "line 1: expected 'global_step: N'"),
    (b"\xff\xfe", "UTF-8"),
])
def test_log_bad_input_is_one_line(text, match):
    with pytest.raises(InputError, match=match) as e:
        train_log.read(text)
    assert e.value.param == "train_log" and "\n" not in str(e.value)


def test_dcgm_exporter_readme_blank_is_not_a_reading():
    d = dcgm.read((DATA / "dcgm_exporter_readme.prom").read_text())
    assert d.metric.tolist() == ["DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
                                 "DCGM_FI_DEV_MEMORY_TEMP"]
    assert d.value[:2].tolist() == [139, 405]
    # 9223372036854775794 = DCGM_INT64_BLANK (0x7ffffffffffffff0) + 2: not supported
    assert 9223372036854775794 - 0x7FFFFFFFFFFFFFF0 == 2
    assert d.blank.tolist() == [False, False, True] and np.isnan(d.value[2])
    s = dcgm.summary(d)
    assert s["DCGM_FI_DEV_MEMORY_TEMP"] == {"samples": 1, "gpus": 1, "blank": 1, "mean": None,
                                            "min": None, "max": None}


def test_dcgm_exporter_mig_instances():
    d = dcgm.read((DATA / "dcgm_exporter_a30_mig.prom").read_text())
    assert d.model == "NVIDIA A30"
    # two GPUs, four and two MIG instances: one row each
    assert d.gpu.tolist() == ["0/3", "0/4", "0/5", "0/6", "1/3", "1/4"]
    assert (d.value == 0).all()


@pytest.mark.parametrize("text, match", [
    # dcgm-exporter's Prometheus text
    ("", "no DCGM sample"),
    ("node_cpu_seconds_total 5", "line 1: expected a DCGM_"),
    ('DCGM_FI_PROF_SM_ACTIVE{gpu="0} 0.5', "line 1: expected labels"),
    ('DCGM_FI_PROF_SM_ACTIVE{gpu="0"} fast', "line 1: expected a non-negative number"),
    ('DCGM_FI_PROF_SM_ACTIVE{gpu="0"} -1', "non-negative"),
    ('# HELP x\nDCGM_FI_PROF_SM_ACTIVE{gpu="0"}', "line 2: expected 'DCGM_NAME"),
    # dcgmi dmon's table
    ("# Entity\n GPU 0 1", "line 1: expected the header"),
    ("    GPU 0  0.5", "line 1: expected a DCGM_"),
    ("# Entity  SMACT\n      Id\n    GPU 0  0.5  0.7", "line 3: 2 value"),
    ("# Entity  SMACT\n    GPU 0  fast", "line 2: expected a non-negative number or N/A"),
    ("# Entity  SMACT\n    GPU 0  -0.5", "line 2: expected a non-negative"),
    ("# Entity  SMACT\n    Node 0  0.5", "line 2: expected a row 'GPU"),
    ("# Entity  SMACT\n      Id\n", "no DCGM sample"),
])
def test_dcgm_bad_input_is_one_line(text, match):
    with pytest.raises(InputError, match=match) as e:
        dcgm.read(text)
    assert e.value.param == "dcgm" and "\n" not in str(e.value)


def test_dcgmi_dmon_a100_proftester():
    """NVIDIA's own sample: dcgmproftester's tensor load read by 'dcgmi dmon -e 1001,1004,1005'.
    The guide reads it as ~99% graphics activity and tensor activity pegged at ~93%."""
    d = dcgm.read((DATA / "dcgmi_dmon_a100_proftester.txt").read_text())
    assert set(d.metric.tolist()) == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"}
    assert len(d.value) == 15 * 3 and set(d.gpu.tolist()) == {"0"} and not d.blank.any()
    s = dcgm.summary(d)
    tensor = s["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]
    assert tensor["samples"] == 15 and tensor["max"] == pytest.approx(0.932)
    # the loaded samples (the last 11, after 3 idle and 1 ramping) average 0.930
    loaded = [0.928, 0.931, 0.929, 0.927, 0.929, 0.930, 0.931, 0.931, 0.930, 0.932, 0.930]
    assert tensor["mean"] == pytest.approx((0.527 + sum(loaded)) / 15, abs=1e-12)
    assert s["DCGM_FI_PROF_DRAM_ACTIVE"]["max"] == 0.0


def test_dcgmi_dmon_mig_instances_are_their_own_entities():
    d = dcgm.read((DATA / "dcgmi_dmon_a100_mig.txt").read_text())
    assert list(dict.fromkeys(d.gpu.tolist())) == ["0", "GPU-I 0", "GPU-I 1"]
    m = (d.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE") & (d.gpu == "GPU-I 0")
    assert d.value[m][-1] == pytest.approx(0.985)
    # the guide's reading: two 3g.20gb instances hold 2 x 42 of 98 SMs, so the whole GPU's
    # activity is 84/98 of the instances' (0.8571 x 0.986 = 0.845)
    whole = d.value[(d.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE") & (d.gpu == "0")]
    assert whole[-1] == pytest.approx(84 / 98 * 0.985, abs=0.003)


def test_dcgmi_dmon_not_available_is_a_blank():
    d = dcgm.read("# Entity  SMACT  TENSO\n      Id\n    GPU 0  0.912  N/A\n    GPU 1  N/A  0.4\n")
    assert d.blank.tolist() == [False, True, True, False]
    assert np.isnan(d.value[1]) and d.value[3] == 0.4
    assert dcgm.summary(d)["DCGM_FI_PROF_SM_ACTIVE"]["blank"] == 1
