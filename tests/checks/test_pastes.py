"""What people paste (older nccl-tests columns, partial pastes, several runs,
NeMo 1.x, DeepSpeed, Hugging Face Trainer, dcgmi dmon with prompts) and what the check asks
for when the paste does not show it. Samples in tests/data/cluster, origins and expected
verdicts in its SOURCES.csv."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli.test_cli_robust import run_cli

from llmcost._validate import InputError
from llmcost.checks import check as chk
from llmcost.checks import dcgm, nccl_tests, train_log
from llmcost.checks import findings as fnd
from llmcost.scenario import Scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"
SOURCES = pd.read_csv(DATA / "SOURCES.csv", keep_default_na=False)


def _argv(row):
    argv = ["check", row["flag"], str(DATA / row["file"])]
    a = row["check_args"]
    if a.startswith("--query"):
        argv += ["--query", a.split(" ", 1)[1]]
    elif a:
        argv += a.split()
    return argv + ["--json"]


@pytest.mark.parametrize("row", [r for _, r in SOURCES.iterrows()
                                 if r["expected_verdict"].split(":")[0] in ("ok", "warn", "alert")],
                         ids=lambda r: r["file"])
def test_every_sample_gets_its_expected_verdict(row):
    code, out, err = run_cli(_argv(row))
    assert code == 0, err
    found = json.loads(out)["findings"]
    level, what = row["expected_verdict"].split(": ", 1)
    # the worst finding is the expected level, and one finding of that level says it
    assert found[0]["level"] == level
    assert any(what in f["what"] for f in found if f["level"] == level)


def test_older_error_column_is_the_largest_error_not_a_count():
    r = nccl_tests.read((DATA / "nccl_all_reduce_2080ti_old_columns.txt").read_text(),
                        name="nccl_all_reduce_2080ti_old_columns.txt")
    assert len(r.size_bytes) == 12 and np.isnan(r.wrong).all()
    assert (r.max_error == 0).all()
    # busbw = algbw: 2 (n-1)/n = 1, two ranks (-g 2)
    assert r.ranks == 2 and r.busbw_gb_per_s[-1] == 20.34 and r.busbw_in_place_gb_per_s[-1] == 21.86
    # the older size is both GPUs' bytes: 8192 floats x 4 B x 2 = 65536; algbw 1.98 =
    # 32768 B / 16.57 us, so the row passes the size/time check on one GPU's bytes
    assert 8192 * 4 / 16.57e3 == pytest.approx(1.98, abs=0.005)
    # an error of 1e-07 (msccl#41's rows) is a rounding error, never "wrong results"
    text = "#  size count type redop time algbw busbw error\n" \
           "     512           128     float     sum    169.8    0.00    0.01  1e-07\n"
    r = nccl_tests.read(text, op="all_reduce")
    assert r.max_error[0] == 1e-07 and np.isnan(r.wrong[0])
    f = fnd.busbw_findings("all_reduce", r.size_bytes, r.busbw_gb_per_s, [np.nan], r.wrong, 8,
                           max_error=r.max_error)
    assert "wrong results" not in json.dumps(f) and f[0]["level"] == "ok"


def test_one_rank_line_of_sixteen_takes_the_bandwidth_ratio():
    text = (DATA / "nccl_all_reduce_a3mega_h100_16.txt").read_text().splitlines()
    ranks = [x for x in text if "Rank " in x]
    partial = "\n".join([ranks[0]] + [x for x in text if "Rank " not in x])
    r = nccl_tests.read(partial)
    # highest Rank id + 1 = 1; 338.82 / 180.71 = 1.875 = 2 (n-1)/n -> 16
    assert r.ranks == 16 and "more than the Rank lines" in r.ranks_from
    assert r.nodes is None and not r.ranks_complete
    # the placement is asked for, not assumed from one host
    from llmcost import catalog
    cat = catalog.default()
    g = cat.gpu("h100-sxm")
    a3 = chk.Hardware(g, cat.fabric(g.scale_up), cat.fabric("gcp-a3-mega-tcpxo"))
    out = chk.check(chk.Measured(r), hardware=a3)
    assert out["findings"][0]["what"] == "all_reduce: not judged against the fabric"
    assert all(c["expected_busbw_gb_per_s"] is None for c in out["collectives"])
    told = chk.check(chk.Measured(r), hardware=a3, placement=chk.Placement(nodes=2))
    whole = chk.check(chk.Measured(nccl_tests.read("\n".join(text))), hardware=a3)
    assert [c["expected_busbw_gb_per_s"] for c in told["collectives"]] == \
        [c["expected_busbw_gb_per_s"] for c in whole["collectives"]]


def test_two_runs_in_one_file_are_checked_apart():
    a = (DATA / "nccl_all_reduce_p5_h100_16.txt").read_text()
    b = (DATA / "nccl_all_reduce_p5_h100_16_derived_slow_0.4x.txt").read_text()
    r = nccl_tests.read(a + b)
    assert sorted(set(r.run.tolist())) == [0, 1] and (r.run == 1).sum() == 16
    from llmcost import catalog
    cat = catalog.default()
    g = cat.gpu("h100-sxm")
    out = chk.check(chk.Measured(r), hardware=chk.Hardware(g, cat.fabric(g.scale_up), cat.fabric("aws-efa-p5")),
                    placement=chk.Placement(nodes=2))
    levels = {f["what"]: f["level"] for f in out["findings"]}
    assert levels["all_reduce (run 1) on 16 ranks: bus bandwidth as expected"] == "ok"
    assert levels["all_reduce (run 2) on 16 ranks: bus bandwidth far below expectation"] == "alert"


def test_nics_from_nccl_ib_hca_scale_the_expectation():
    text = ("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3\n"
            + (DATA / "nccl_all_reduce_p5_h100_16.txt").read_text())
    r = nccl_tests.read(text)
    assert r.nics_per_node == 4
    from llmcost import catalog
    cat = catalog.default()
    g = cat.gpu("h100-sxm")
    f = cat.fabric("ib-ndr")
    hw = chk.Hardware(g, cat.fabric(g.scale_up), f)
    four = chk.check(chk.Measured(r), hardware=hw, placement=chk.Placement(nodes=2))
    eight = chk.check(chk.Measured(r), hardware=hw, placement=chk.Placement(nodes=2, nics_per_node=8))
    # at 16 GiB the NICs bound the tree: half the NICs, half the expected busbw
    assert four["collectives"][-1]["expected_busbw_gb_per_s"] == pytest.approx(
        eight["collectives"][-1]["expected_busbw_gb_per_s"] / 2, rel=0.02)


@pytest.mark.parametrize("text, match", [
    # a hand-made summary: 4 B at 230 GB/s is not size / time
    ("  4  1  float  sum  -1  12.0  230.0  230.0  0  12.0  230.0  230.0  0", "not size / time"),
    # 1000 floats are 4000 B, not 4096
    ("  4096  1000  float  sum  -1  10.0  0.41  0.41  0  10.0  0.41  0.41  0", "not a multiple"),
    ("hello\nworld\n", "expected nccl-tests text"),
])
def test_tables_that_are_not_nccl_tests_are_refused(text, match):
    with pytest.raises(InputError, match=match) as e:
        nccl_tests.read(text)
    assert e.value.param == "nccl_tests" and "-J JSON" in str(e.value)


def test_small_sizes_above_the_line_rate_are_refused(cat):
    # 512 B in 0.002 us: algbw = size / time holds, but 256 GB/s at 512 B is above the
    # line rate of an H100 PCIe's scale-up link and of an NDR NIC: not a measurement
    text = "  512  128  float  sum  -1  0.002  256.0  256.0  0  0.002  256.0  256.0  0"
    r = nccl_tests.read(text, op="all_reduce")
    g = cat.gpu("h100-pcie")
    with pytest.raises(InputError, match="above the fabric's line rate"):
        chk.check(chk.Measured(r), hardware=chk.Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")),
                  placement=chk.Placement(nodes=1))


def test_a_dip_and_a_mid_size_shortfall_are_found():
    sizes = np.array([2 ** k for k in range(20, 31)], float)
    exp = np.full(len(sizes), 100.0)
    busbw = np.full(len(sizes), 90.0)
    busbw[5] = 0.6 * 90          # a dip to 0.6 x at 32 MiB
    f = fnd.busbw_findings("all_reduce", sizes, busbw, exp, 0 * sizes, 8)
    assert ("warn", "all_reduce on 8 ranks: bandwidth dip at 32 MiB") in [
        (x["level"], x["what"]) for x in f]
    busbw = np.full(len(sizes), 90.0)
    busbw[3:6] = 90 / 20         # 20 x short at 8-32 MiB, the largest size fine
    f = fnd.busbw_findings("all_reduce", sizes, busbw, exp, 0 * sizes, 8)
    mid = [x for x in f if x["what"].endswith("far below expectation at mid sizes")]
    assert mid and mid[0]["level"] == "alert" and "3 size(s)" in mid[0]["evidence"]
    assert "0.045 x" in mid[0]["evidence"]


def test_nemo1_deepspeed_and_hf_trainer_steps():
    log = train_log.read((DATA / "nemo1_progress_bar_7b.log").read_text())
    assert log.step.tolist() == [9000] and log.step_time_s.tolist() == [0.615]
    ds = train_log.read((DATA / "deepspeed_samples_per_sec_bart.log").read_text())
    # 02:06:58.985 -> 02:07:14.130 over 10 steps
    assert ds.framework == "deepspeed" and ds.step.tolist() == [40, 50]
    assert ds.step_time_s[1] == pytest.approx(15.145 / 10, rel=1e-6)
    assert ds.samples_per_s.tolist() == [83.48609168106144, 83.73838805358588]
    ra = train_log.read((DATA / "deepspeed_running_avg_v077.log").read_text())
    # CurrSamplesPerSec (this step's), not the running average
    assert ra.samples_per_s[0] == 159.628891629629 and ra.step.tolist() == list(range(17, 23))
    assert ra.step_time_s[1] == pytest.approx(0.224, abs=1e-6)
    hf = train_log.read((DATA / "hf_trainer_train_results_pythia.json").read_text())
    # 6169.2421 s x 0.162 steps/s = 999 steps of 1 / 0.162 s
    assert hf.framework == "hf-trainer" and hf.step.tolist() == [999]
    assert hf.step_time_s[0] == pytest.approx(1 / 0.162, rel=1e-12)
    assert hf.samples_per_s[0] == 20.769


def test_a_log_without_a_model_gives_measured_figures_and_asks(cat):
    code, out, err = run_cli(["check", "--train-log",
                              str(DATA / "megatron_mixtral_8x7b_16xh100.log"), "--query",
                              "gpu=h100-sxm&gpus=16", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["steps"]["mfu"] is None and r["steps"]["model"] is None
    assert r["steps"]["median_step_s"] == pytest.approx(5.4707)
    assert r["steps"]["log_tflops_per_gpu"] == 238.7
    ask = r["findings"][0]
    assert ask["what"] == "MFU not judged" and "model=" in ask["evidence"] \
        and "--model-config" in ask["evidence"]
    # a model given: judged (Mixtral at its catalog length: above the peak, never shown)
    code, out, err = run_cli(["check", "--train-log",
                              str(DATA / "megatron_mixtral_8x7b_16xh100.log"), "--query",
                              "gpu=h100-sxm&gpus=16", "--model", "mixtral-8x7b", "--json"])
    r = json.loads(out)
    assert r["steps"]["model"] == "mixtral-8x7b" and r["steps"]["mfu"] is None


def test_the_model_from_megatrons_argument_dump(cat):
    # Megatron's argument dump prints "  name ......... value" (llama3-8b's shape)
    dump = "".join(f"  {k} {'.' * 20} {x}\n" for k, x in [
        ("num_layers", 32), ("hidden_size", 4096), ("num_attention_heads", 32),
        ("num_query_groups", 8), ("ffn_hidden_size", 14336), ("padded_vocab_size", 128256),
        ("seq_length", 8192), ("swiglu", True), ("group_query_attention", True)])
    text = dump + (DATA / "megatron_mixtral_8x7b_16xh100.log").read_text()
    log = train_log.read(text)
    assert "32 layers, hidden 4096" in log.model_from
    from llmcost.scenario import Scenario
    s, _ = Scenario.from_query("gpu=h100-sxm&gpus=16", cat, strict=True)
    out = chk.check(chk.Measured(log=log), scenario=s, query="gpu=h100-sxm&gpus=16", cat=cat)
    assert out["steps"]["mfu"] is not None and 0 < out["steps"]["mfu"] <= 1
    # the dump is Llama 3 8B's shape at 8,192 tokens: the catalog model's FLOPs per token
    assert out["steps"]["flops_per_token"] == pytest.approx(
        cat.model("llama3-8b").flops_per_token("none"), rel=1e-3)
    assert any("model from the log" in n for n in out["notes"])


def test_dcgmi_dmon_id_header_prompts_and_ranges():
    d = dcgm.read((DATA / "dcgmi_dmon_smact_na_prompt.txt").read_text())
    assert d.blank.all() and len(d.value) == 24 and len(set(d.gpu)) == 8
    assert d.notes and "3 prompt or command line(s) skipped" in d.notes[0]
    ok = dcgm.read("# Entity  SMACT\nID\nGPU 0  0.75\n")
    assert ok.value.tolist() == [0.75]
    with pytest.raises(InputError, match=r"DCGM_FI_PROF_SM_ACTIVE = 7.5 .* ratio in \[0, 1\]"):
        dcgm.read("# Entity  SMACT\nID\nGPU 0  7.5\n")
    with pytest.raises(InputError, match="ratio in"):
        dcgm.read('DCGM_FI_PROF_DRAM_ACTIVE{gpu="0"} 7.5\n')
    # a prompt line with dcgm-exporter text: skipped, not sent to the error
    p = dcgm.read('user@host:~$ curl localhost:9400/metrics\nDCGM_FI_PROF_DRAM_ACTIVE{gpu="0"} 0.5\n')
    assert p.value.tolist() == [0.5] and p.notes


def test_cli_placement_flags():
    code, out, err = run_cli(["check", "--nccl-tests", str(DATA / "nccl_all_reduce_p5_h100_16.txt"),
                              "--gpu", "h100-sxm", "--fabric", "aws-efa-p5", "--gpus-per-node", "8",
                              "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["findings"][0]["what"] == "all_reduce on 16 ranks: bus bandwidth as expected"
    assert "8 per node, 2 node(s) (--gpus-per-node)" in " ".join(r["notes"])


#: NeMo's example configuration (NVIDIA/NeMo examples/nlp/language_modeling/conf/
#: megatron_gpt_config.yaml: 12 layers, hidden 768, FFN 3,072, 12 heads, sequence 512, GPT-2
#: BPE), as megatron_gpt_pretraining prints it at start under srun (each line after the
#: rank's "0: ", the YAML indented by 4: the form of NVIDIA-NeMo/Speech#5819; trailing
#: blanks dropped), here with
#: 8 devices on 2 nodes; then the padded vocabulary NeMo's Megatron models log (50,257 GPT-2
#: tokens padded to a multiple of 128: 50,304); then the NeMo 1.x step line of
#: nemo1_progress_bar_7b.log. A composition to test the reading, not one run's log.
NEMO_CONFIG = """\
0: [NeMo I 2023-01-18 07:39:41 megatron_gpt_pretraining:36]
0:
0:     ************** Experiment configuration ***********
0: [NeMo I 2023-01-18 07:39:41 megatron_gpt_pretraining:37]
0:     name: megatron_gpt
0:     restore_from_path: null
0:     trainer:
0:       devices: 8
0:       num_nodes: 2
0:       accelerator: gpu
0:       precision: 16
0:     model:
0:       micro_batch_size: 4
0:       global_batch_size: 8
0:       tensor_model_parallel_size: 1
0:       pipeline_model_parallel_size: 1
0:       resume_from_checkpoint: null
0:       encoder_seq_length: 512
0:       max_position_embeddings: 512
0:       num_layers: 12
0:       hidden_size: 768
0:       ffn_hidden_size: 3072
0:       num_attention_heads: 12
0:       init_method_std: 0.02
0:       activations_checkpoint_num_layers: null
0: [NeMo I 2023-01-18 07:39:45 megatron_base_model:205] Padded vocab_size: 50304, \
original vocab_size: 50257, dummy tokens: 47.
"""


def test_the_model_from_nemos_configuration(cat):
    text = NEMO_CONFIG + (DATA / "nemo1_progress_bar_7b.log").read_text()
    log = train_log.read(text)
    assert log.framework == "nemo" and log.step.tolist() == [9000]
    assert log.model_from == "NeMo's configuration: 12 layers, hidden 768, 12 heads"
    cfg = json.loads(log.model_config)
    assert tuple(int(cfg[k]) for k in ("num_hidden_layers", "hidden_size",
                                       "intermediate_size", "vocab_size")) == (12, 768, 3072,
                                                                               50304)
    # 8 devices x 2 nodes; the sequence from encoder_seq_length; the nested
    # activations_checkpoint_num_layers is not the model's num_layers
    assert log.args["world_size"] == 16 and log.args["seq_length"] == 512
    assert log.args["num_layers"] == 12
    # the check reads it as the run's model: judged, with the note saying where it came from
    out = chk.check_texts(chk.Pasted(train_log=("nemo.log", text)), scenario=Scenario(gpu="a100-80gb"),
                          query="gpu=a100-80gb", cat=cat)
    assert any(n.startswith("model from the log: NeMo's configuration") for n in out["notes"])
    assert out["steps"]["model"] == "config" and out["steps"]["gpus"] == 16
