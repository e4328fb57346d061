"""The command line: contract keys, values equal to the library, one-line errors, exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.training import memory as mem
from llmcost.training.layout import Layout


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert out.count("\n") == 1   # exactly one JSON object on one line
    return json.loads(out)


def test_flops_contract(capsys):
    r = run_json(capsys, "flops", "--model", "llama3-70b", "--tokens", "15e12")
    m = catalog.model("llama3-70b")
    assert r["params"] == m.params
    assert r["flops_per_token"] == pytest.approx(m.flops_per_token())
    assert r["total_flops"] == pytest.approx(m.flops_per_token() * 15e12)


def test_flops_from_architecture_and_6n(capsys):
    r = run_json(capsys, "flops", "--layers", "96", "--hidden", "12288", "--heads", "96",
                 "--vocab", "51200", "--seq-len", "2048", "--tokens", "300e9", "--method", "6n")
    assert r["flops_per_token"] == pytest.approx(6 * r["params"])
    assert r["params"] == pytest.approx(174.6e9, rel=1e-3)


def test_mfu_contract(capsys):
    r = run_json(capsys, "mfu", "--flops-per-token", "4.2e11", "--global-batch", "512",
                 "--seq-len", "4096", "--steps", "1000", "--gpus", "64", "--gpu", "h100-sxm",
                 "--wall-clock-s", "36000")
    assert r["effective_utilization"] == pytest.approx(
        4.2e11 * 512 * 4096 * 1000 / (989.4e12 * 64 * 36000))
    assert r["findings"] == []


def test_mfu_flags_the_seed_68_percent(capsys):
    r = run_json(capsys, "mfu", "--flops-per-token", "1e12", "--global-batch", "1", "--seq-len",
                 "1", "--steps", "68", "--gpus", "1", "--peak-tflops", "1", "--wall-clock-s", "100")
    assert r["effective_utilization"] == pytest.approx(0.68)
    assert r["findings"][0]["code"] == "rare"


def test_memory_contract(capsys):
    r = run_json(capsys, "memory", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp",
                 "4", "--recompute", "selective", "--sequence-parallel", "--gpu", "h100-sxm")
    b = mem.memory_per_gpu(catalog.model("llama3-70b"), Layout(gpus=64, tp=8, pp=4, recompute="selective",
                                                               sequence_parallel=True, global_batch=None))
    for k in ("weights_gb", "grads_gb", "optimizer_gb", "activations_gb", "total_gb"):
        assert r[k] == pytest.approx(float(b.to_gb()[k]))
    assert r["fits"] is True and r["capacity_gb"] == pytest.approx(80 * 2**30 / 1e9)


def test_memory_params_only(capsys):
    r = run_json(capsys, "memory", "--params", "70e9", "--gpus", "64", "--tp", "8", "--pp", "4",
                 "--zero", "1")
    # 2 + 2 bytes over t p = 32; 12 bytes over 32 and dp = 2
    assert r["weights_gb"] == pytest.approx(70e9 * 2 / 32 / 1e9)
    assert r["optimizer_gb"] == pytest.approx(70e9 * 12 / 64 / 1e9)
    assert r["seed_heuristic_gb"] == pytest.approx(96.25)


def test_readable_table(capsys):
    code, out, _ = run(capsys, "memory", "--model", "llama2-7b", "--gpus", "8", "--tp", "1",
                       "--pp", "1", "--zero", "3")
    assert code == 0 and "total_gb" in out and "{" not in out


@pytest.mark.parametrize("argv,param", [
    (["memory", "--model", "llama3-70b", "--gpus", "64", "--tp", "3", "--pp", "4"], "tp"),
    (["memory", "--model", "llama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--zero", "5"], "zero_stage"),
    (["memory", "--model", "lama3-70b", "--gpus", "64", "--tp", "8", "--pp", "4"], "model"),
    (["flops", "--model", "llama3-8b", "--tokens", "-1"], "tokens"),
    (["flops", "--model", "llama3-8b", "--tokens", "nan"], "tokens"),
    (["mfu", "--flops-per-token", "1e12", "--global-batch", "8", "--seq-len", "2048", "--steps",
      "1", "--gpus", "0", "--gpu", "h100", "--wall-clock-s", "10"], "gpus"),
    (["memory", "--gpus", "64", "--tp", "8"], "pp"),
    (["flops", "--layers", "4"], "hidden"),
])
def test_errors_are_one_line_exit_2(capsys, argv, param):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("llmcost: error:")
    assert param.replace("_", "-") in err or param in err


@pytest.mark.slow
def test_console_script_installed():
    # the script installed beside this interpreter, not whatever else PATH may hold
    exe = str(Path(sys.executable).parent / "llmcost")
    ok = subprocess.run([exe, "flops", "--model", "llama3-8b", "--json"], capture_output=True,
                        text=True)
    assert ok.returncode == 0 and json.loads(ok.stdout)["params"] == catalog.model("llama3-8b").params
    bad = subprocess.run([exe, "memory", "--model", "llama3-8b", "--gpus", "8", "--tp", "3",
                          "--pp", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    # `llmcost list gpus | head -1`: the reader stops after one line; Python's default is a
    # BrokenPipeError traceback on stderr. The pipe is closed before the command writes.
    exe = str(Path(sys.executable).parent / "llmcost")
    proc = subprocess.Popen([exe, "review", "--query", "model=llama3-8b&gpus=64"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 1


def test_review_names_the_size_of_the_model_it_read(capsys):
    # the parameters a reviewer checks first: DeepSeek-V3 671B total, 37.6B active by the
    # architecture (arXiv:2412.19437 §1: 671B total, 37B activated per token)
    m = catalog.model("deepseek-v3")
    r = run_json(capsys, "review", "--query", "model=deepseek-v3&gpu=h800&gpus=2048")
    assert (r["params"], r["active_params"]) == (m.params, m.active_params)
    assert r["params"] == pytest.approx(671e9, rel=0.01)
    code, out, _ = run(capsys, "review", "--query", "model=deepseek-v3&gpu=h800&gpus=2048")
    assert code == 0
    assert out.splitlines()[0].startswith("deepseek-v3 (671 B, 37.6 B active parameters) on 2,048")
    # a dense model gives one count
    code, out, _ = run(capsys, "review", "--query", "model=llama3-8b&gpus=64")
    assert out.splitlines()[0].startswith("llama3-8b (8.03 B parameters) on 64 x")



def test_review_text_names_the_price_and_offer_of_each_way_to_pay(capsys):
    """Each option is priced from the cheapest offer that sells it, often another provider's
    (a 3-year term can cost more per hour than another cloud's on-demand): the text shows the
    price and offer the JSON gives, and the cost is that price x the GPU-hours billed."""
    q = "model=llama3-70b&gpu=h100-sxm&gpus=1024&tokens=1.5e13"
    r = run_json(capsys, "review", "--query", q)
    code, out, _ = run(capsys, "review", "--query", q)
    assert code == 0
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("    ") and "$" in ln}
    prices, offers = r["prices_usd_per_gpu_hour"], r["price_offers"]
    assert {"on_demand", "reserved_3y"} <= set(prices)
    for k, price in prices.items():
        assert f"at ${price:,.2f}/GPU-h ({offers[k]})" in lines[k]
    # on-demand bills the run's GPU-hours at its price: days x 24 x billed GPUs x price
    assert r["costs_usd"]["on_demand"] == pytest.approx(
        r["days"] * 24 * r["billed_gpus"] * prices["on_demand"], rel=1e-9)
    assert "at $" not in lines["on_prem"]

GPT3 = ["--layers", "96", "--hidden", "12288", "--heads", "96", "--vocab", "51200", "--seq-len", "2048"]


def test_predict_contract(capsys):
    r = run_json(capsys, "predict", *GPT3, "--gpus", "1024", "--tp", "8", "--pp", "8",
                 "--global-batch", "1536", "--recompute", "full", "--interleave", "2")
    for k in ("step_time_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu",
              "memory_gb_per_gpu", "fits"):
        assert k in r
    assert r["hfu"] == pytest.approx(r["hardware_tflops_per_gpu"] / 312)
    assert sum(r["breakdown_s"].values()) == pytest.approx(r["step_time_s"])


def test_predict_not_fitting_is_a_finding(capsys):
    r = run_json(capsys, "predict", "--model", "gpt3-175b", "--gpus", "64", "--tp", "8", "--pp",
                 "1", "--global-batch", "64")
    assert r["fits"] is False and "GB" in r["fit_reason"]


def test_predict_table_explains_terms(capsys):
    code, out, _ = run(capsys, "predict", "--model", "llama2-70b", "--gpu", "h100-sxm", "--gpus",
                       "64", "--tp", "8", "--pp", "4", "--global-batch", "128")
    assert code == 0 and "pipeline fill and drain" in out and "tensor-parallel" in out


def test_plan_contract(capsys):
    r = run_json(capsys, "plan", "--model", "megatron-gpt-18.4b", "--gpus", "256",
                 "--global-batch", "1024", "--top", "3")
    assert r["evaluated"] >= r["feasible"] > 0 and len(r["layouts"]) == 3
    first = r["layouts"][0]
    for k in ("step_time_s", "mfu", "hfu", "memory_gb_per_gpu", "fits", "layout"):
        assert k in first
    assert r["why_runner_up_loses"]


@pytest.mark.parametrize("argv,param", [
    (["predict", "--model", "gpt3-175b", "--gpus", "1024", "--tp", "3", "--pp", "8",
      "--global-batch", "1536"], "tp"),
    (["predict", "--model", "gpt3-175b", "--gpus", "1024", "--tp", "8", "--pp", "7",
      "--global-batch", "1536"], "pp"),
    (["predict", "--model", "gpt3-175b", "--gpus", "1000", "--tp", "8", "--pp", "8",
      "--global-batch", "1536"], "gpus"),
    (["predict", "--model", "gpt3-175b", "--gpus", "1024", "--tp", "8", "--pp", "8",
      "--global-batch", "1000"], "global-batch"),
    (["plan", "--model", "gpt3-175b", "--gpus", "64", "--global-batch", "64", "--fabric", "nvlink4"], "fabric"),
])
def test_layout_errors(capsys, argv, param):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert param in err or param.replace("-", "_") in err


def test_breakeven_contract(capsys):
    r = run_json(capsys, "breakeven", "--cloud-usd-per-node-hour", "50",
                 "--onprem-capex-usd-per-node", "250000", "--utilization", "0.9")
    assert r["breakeven_months"] == pytest.approx(250000 / (50 * 730 * 0.9))
    never = run_json(capsys, "breakeven", "--cloud-usd-per-node-hour", "1",
                     "--onprem-capex-usd-per-node", "250000", "--utilization", "0.1",
                     "--onprem-opex-usd-per-node-month", "1000")
    assert never["breakeven_months"] is None and never["breaks_even"] is False


def test_spot_contract(capsys):
    r = run_json(capsys, "spot", "--discount", "0.6", "--preemptions-per-day", "2.4",
                 "--lost-hours-per-preemption", "1.5", "--observed-net-savings", "0.22")
    assert r["net_savings"] == pytest.approx(1 - 0.4 / (1 - 2.4 * 1.5 / 24))
    assert r["implied_lost_hours_per_preemption"] == pytest.approx(10 * (1 - 0.4 / 0.78))


def test_spot_reads_the_old_name_of_failures_per_day(capsys):
    base = ("spot", "--discount", "0.6", "--preemptions-per-day", "2.4", "--lost-hours-per-preemption", "1.5")
    new = run_json(capsys, *base, "--failures-per-day", "0.5")
    assert run_json(capsys, *base, "--on-demand-failures-per-day", "0.5") == new
    # the failures are read: they stretch both runs, so the saving moves
    assert new["net_savings"] != pytest.approx(run_json(capsys, *base)["net_savings"], rel=1e-6)


def test_checkpoint_contract(capsys):
    r = run_json(capsys, "checkpoint", "--checkpoint-s", "45", "--mtbf-h", str(4.7 * 24))
    assert r["young_interval_s"] == pytest.approx((2 * 45 * 4.7 * 86400) ** 0.5)
    assert 0 < r["goodput"] <= 1 and r["daly_interval_s"] < r["young_interval_s"]


@pytest.mark.slow
def test_size_contract(capsys):
    r = run_json(capsys, "size", "--model", "llama3-8b", "--tokens", "1e12", "--days", "20",
                 "--gpu", "h100-sxm")
    for k in ("gpus", "nodes", "days", "cost_usd"):
        assert k in r
    assert r["days"] <= 20 and r["gpus"] == 8 * r["nodes"]
    # the rule's H100 on-demand offer: RunPod, $21.52 per 8 GPUs
    assert r["cost_usd"] == pytest.approx(r["gpus"] * r["days"] * 24 * 21.52 / 8)


@pytest.mark.parametrize("argv,param", [
    (["breakeven", "--cloud-usd-per-node-hour", "-5", "--onprem-capex-usd-per-node", "1e5",
      "--utilization", "0.9"], "usd_per_node_hour"),
    (["breakeven", "--cloud-usd-per-node-hour", "50", "--onprem-capex-usd-per-node", "1e5",
      "--utilization", "1.5"], "utilization"),
    (["spot", "--discount", "1.0", "--preemptions-per-day", "2", "--lost-hours-per-preemption", "1"], "discount"),
    (["checkpoint", "--checkpoint-s", "45", "--mtbf-h", "0"], "mtbf_h"),
    (["size", "--model", "llama3-8b", "--days", "0"], "target_days"),
    (["size", "--model", "llama3-8b", "--days", "-3"], "target_days"),
])
def test_economics_errors(capsys, argv, param):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 2 and out == "" and err.count("\n") == 1 and param in err


def test_memory_and_predict_take_the_stack_and_the_loss(capsys):
    # memory --stack fsdp: torchtitan's 3D layout keeps the pipeline stage gathered and its
    # gradients unsharded (3 x the stage's 16-bit weights: 16 layers x 3,187,703,808 / 8 x 2
    # bytes each); the megatron stack keeps one layer's working set
    lay = ("--model", "llama3-405b", "--gpus", "512", "--tp", "8", "--pp", "8", "--zero", "3",
           "--global-batch", "256", "--recompute", "full", "--sequence-parallel")
    fs = run_json(capsys, "memory", *lay, "--stack", "fsdp")
    mg = run_json(capsys, "memory", *lay)
    w0 = 16 * 3_187_703_808 / 8 * 2
    assert fs["peak_stage_layers"] == 16
    assert fs["zero3_working_gb"] == pytest.approx(3 * w0 / 1e9, rel=1e-9)
    assert mg["zero3_working_gb"] < fs["zero3_working_gb"] / 10
    # predict --loss: the fsdp stack's FP32 loss against a fused one, 8 bytes per logit of
    # 2 x 8192 tokens x 128,256 on the one stage (+2% fragmentation)
    args = ("predict", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8",
            "--global-batch", "16", "--tp", "1", "--pp", "1", "--zero", "3",
            "--micro-batch", "2", "--stack", "fsdp", "--recompute-modules", "op_sac")
    fp32 = run_json(capsys, *args)
    fused = run_json(capsys, *args, "--loss", "fused")
    assert fp32["memory_gb_per_gpu"] - fused["memory_gb_per_gpu"] == pytest.approx(
        8 * 16384 * 128256 * 1.02 / 1e9, rel=1e-6)
    assert fp32["tokens_per_s"] == fused["tokens_per_s"]
    code, out, err = run(capsys, *args, "--loss", "chunked")
    assert code == 2 and "--loss" in err
