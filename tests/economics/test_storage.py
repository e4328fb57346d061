"""Storage and checkpoints as a sized layer: each formula against a derivation
written here, a Monte Carlo, a published number, or the seeds' claims (numbers copied in)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from llmcost import InputError, catalog
from llmcost.economics import reliability as rel
from llmcost.economics import storage as sto

TIERS = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "storage_tiers.csv")
TIER = TIERS.set_index("id")

P_70B = catalog.model("llama3-70b").published_params      # 70.55e9 (Llama 3 Table 3)
P_405B = catalog.model("llama3-405b").published_params    # 405e9

# PCIe link ceilings per x4 NVMe drive, from the PCIe specs: 4 lanes x 16 GT/s (Gen4) or
# 32 GT/s (Gen5) x 128/130 encoding / 8 bits -> 7.877 and 15.75 GB/s.
GEN4_X4_GB_PER_S = 4 * 16 * 128 / 130 / 8
GEN5_X4_GB_PER_S = 4 * 32 * 128 / 130 / 8


# ------------------------------------------------------------------ 1-2 checkpoint size

def test_bytes_per_param_by_stack():
    # Megatron dist. optimizer: bf16 2 + fp32 main 4 + Adam m 4 + v 4 = 14
    # FSDP: fp32 params 4 + m 4 + v 4 = 12 (no bf16 copy saved)
    # DeepSpeed ZeRO: bf16 2 + fp32 master 4 + m 4 + v 4 = 14 (gradients not saved)
    got = sto.checkpoint_bytes_per_param(["megatron-dist-opt", "fsdp", "deepspeed-zero"])
    assert got.tolist() == [14.0, 12.0, 14.0]
    # the same 14 (and 8 for 8-bit Adam: 6 + 1 + 1) as reliability's Megatron-style table
    assert sto.checkpoint_bytes_per_param("megatron-dist-opt", "adam") == \
        rel.CHECKPOINT_BYTES_PER_PARAM["adam"]
    assert sto.checkpoint_bytes_per_param("megatron-dist-opt", "adam-8bit") == \
        rel.CHECKPOINT_BYTES_PER_PARAM["adam-8bit"]
    assert sto.checkpoint_bytes_per_param("fsdp", "sgd-momentum") == 8.0   # 4 + 4


def test_review_target_llama3_70b_is_12_to_18_bytes_per_param():
    # The review's target range for a Llama 3 70B training checkpoint: 12-18 bytes/param.
    stacks = np.array(["megatron-dist-opt", "fsdp", "deepspeed-zero"])
    size = sto.checkpoint_size_bytes(P_70B, stacks)
    per_param = size / P_70B
    assert ((per_param >= 12) & (per_param <= 18)).all()
    # 70.55e9 x 14 = 987.7 GB; x 12 = 846.6 GB
    assert size[0] == pytest.approx(987.7e9, rel=1e-4)
    assert size[1] == pytest.approx(846.6e9, rel=1e-4)


def test_size_broadcasts_params_against_stacks():
    size = sto.checkpoint_size_bytes(np.array([[7e9], [70e9]]),
                                     np.array(["fsdp", "deepspeed-zero"]))
    assert size.shape == (2, 2)
    assert size[1].tolist() == [70e9 * 12, 70e9 * 14]


def test_writers_for_llama3_405b_layout():
    # Llama 3 Table 4: 16,384 GPUs with TP 8, CP 1, PP 16, DP 128 -> model-parallel group 128.
    full = sto.checkpoint_writers(16384, 128, 8, "fully-parallel")
    one = sto.checkpoint_writers(16384, 128, 8, "one-replica")
    assert (full.writers, full.writer_nodes) == (16384, 2048)
    assert (one.writers, one.writer_nodes) == (128, 16)          # 128 ranks packed on 16 nodes


def test_llama3_per_gpu_state_range_rules_out_one_replica_saves():
    # Llama 3 Sec. 3.3.1: each GPU saves 1 MB to 4 GB. 405B x 14 = 5.67 TB:
    # over 16,384 writers 346 MB per GPU (inside the range); over one replica's 128 ranks
    # 44.3 GB per GPU (10x over the top), so the published range implies sharded saves.
    S = sto.checkpoint_size_bytes(P_405B)
    assert S == pytest.approx(5.67e12)
    sharded = sto.bytes_per_writer(S, sto.checkpoint_writers(16384, 128).writers)
    one = sto.checkpoint_writers(16384, 128, save="one-replica")
    replica = sto.bytes_per_writer(S, one.writers)
    assert sharded == pytest.approx(5.67e12 / 16384) and 1e6 <= sharded <= 4e9
    assert replica == pytest.approx(5.67e12 / 128) and replica > 4e9


def test_checkpoint_size_bad_inputs_name_the_parameter():
    with pytest.raises(InputError) as e:
        sto.checkpoint_bytes_per_param("zero-3")
    assert e.value.param == "stack"
    with pytest.raises(InputError) as e:
        sto.checkpoint_size_bytes(-1)
    assert e.value.param == "params"
    with pytest.raises(InputError) as e:
        sto.checkpoint_writers(16384, 100)             # 100 does not divide 16,384
    assert e.value.param == "model_parallel_size"


# ------------------------------------------------------------------ 3-4 data reads

def test_token_bytes_by_vocab():
    # uint16 holds ids 0..65535, i.e. a vocabulary of up to 65,536; Llama 3's 128,256 needs 4.
    assert sto.token_bytes([32000, 65536, 65537, 128256]).tolist() == [2.0, 2.0, 4.0, 4.0]


# Llama 3 405B, Table 4: 16,384 GPUs at 400 TFLOP/s each; at 6 N FLOPs per token (attention
# left out) that is 16384 x 400e12 / (6 x 405e9) = 2.697e6 tokens/s.
LLAMA3_405B_TOKENS_PER_S = 16384 * 400e12 / (6 * 405e9)


def test_text_pretraining_reads_are_tiny():
    b = sto.token_bytes(catalog.model("llama3-405b").vocab)               # 4 bytes
    r = sto.data_read_rate_gb_per_s(LLAMA3_405B_TOKENS_PER_S, nodes=2048, bytes_per_token=b)
    # 2.697e6 x 4 = 10.79 MB/s for the whole cluster, 5.27 kB/s per node
    assert r.aggregate_gb_per_s == pytest.approx(2.6969e6 * 4 / 1e9, rel=1e-4)
    assert r.per_node_gb_per_s == pytest.approx(r.aggregate_gb_per_s / 2048)
    cached = sto.data_read_rate_gb_per_s(LLAMA3_405B_TOKENS_PER_S, 2048, b, epochs=4,
                                         local_cache=True)
    assert cached.average_gb_per_s == pytest.approx(r.aggregate_gb_per_s / 4)
    assert cached.aggregate_gb_per_s == r.aggregate_gb_per_s       # the first epoch still reads


def test_seed_s3_rate_limit_story_needs_tiny_requests():
    # Seed 001: a data loader "hit S3 rate limits mid-training". At the 405B run's 10.79 MB/s
    # and 1 MB reads that is ~10.8 GET/s, 500x under one prefix's 5,500. Reaching 5,500 GET/s
    # on token ids takes requests of 10.79e6 / 5500 = 1,962 bytes or less (or per-sample GETs
    # of many small objects, or far more bytes than token ids).
    D = sto.data_read_rate_gb_per_s(LLAMA3_405B_TOKENS_PER_S, 2048, 4).aggregate_gb_per_s
    q = sto.read_requests_per_s(D, 1e6)
    assert q == pytest.approx(10.79, rel=1e-3)
    assert sto.prefixes_needed(q) == 1
    small = D * 1e9 / TIER.loc["s3-standard", "requests_per_s"]
    assert small == pytest.approx(1962, rel=1e-3)
    assert sto.read_requests_per_s(D, small) == pytest.approx(5500)
    assert sto.prefixes_needed(sto.read_requests_per_s(D, 1000)) == 2    # 10,790 GET/s


def test_data_stall_share():
    # prefetching: 0 while the tier keeps up, 1 - B/D when it does not
    assert sto.data_stall_share(2.0, 5.0) == 0.0
    assert sto.data_stall_share(2.0, 1.0) == pytest.approx(0.5)
    # no prefetching: reads and compute alternate, D / (D + B): 2 / (2 + 6) = 0.25
    assert sto.data_stall_share(2.0, 6.0, prefetch=False) == pytest.approx(0.25)
    # request-limited: 5,500 GET/s x 1 MB = 5.5 GB/s against 11 GB/s demand -> half stalled
    # even though the tier's bandwidth (100 GB/s) would do
    assert sto.data_stall_share(11.0, 100.0, 5500, 1e6) == pytest.approx(0.5)
    assert sto.data_stall_share(0.0, 1.0) == 0.0
    with pytest.raises(InputError) as e:
        sto.data_stall_share(1.0, 1.0, tier_requests_per_s=5500)
    assert e.value.param == "request_bytes"


# ------------------------------------------------------------------ 5 checkpoint timing

def test_sync_stall_reuses_reliability_and_takes_the_narrower_pipe():
    S = 987.7e9
    # tier-bound: 32 nodes x 50 GB/s > 20 GB/s -> 987.7 / 20 = 49.4 s
    assert sto.sync_stall_s(S, 32, 20.0, 50.0) == pytest.approx(49.385)
    assert sto.sync_stall_s(S, 32, 20.0, 50.0) == rel.checkpoint_stall_s(
        S, "sync", 32, rel.CheckpointStorage(20.0, node_network_gb_per_s=50.0))
    # node-bound: one writer node at 12.5 GB/s -> 79.0 s
    assert sto.sync_stall_s(S, 1, 100.0, 12.5) == pytest.approx(79.016)
    assert sto.upload_s(S, 1, 100.0, 12.5) == sto.sync_stall_s(S, 1, 100.0, 12.5)


def test_local_stall_host_memory_or_nvme():
    S = 987.7e9
    # host staging: 987.7e9 / (32 nodes x 8 GPUs x 25 GB/s) = 0.1543 s
    assert sto.local_stall_s(S, 32, 25.0) == pytest.approx(987.7 / (32 * 8 * 25))
    # to NVMe at 5 GB/s per node: 987.7 / (32 x 5) = 6.17 s, reliability's async model
    assert sto.local_stall_s(S, 32, 25.0, 8, 5.0) == pytest.approx(987.7 / 160)
    assert sto.local_stall_s(S, 32, 25.0, 8, 5.0) == rel.checkpoint_stall_s(
        S, "async", 32, rel.CheckpointStorage(local_write_gb_per_s=5.0))


def test_async_rework_monte_carlo():
    # Snapshots end their stall every P = tau + delta; each becomes durable U later. A failure
    # at a uniform time loses the time since the end of the stall of the last durable one.
    rng = np.random.default_rng(11)
    cases = [(600.0, 5.0, 0.0), (600.0, 5.0, 90.0), (600.0, 5.0, 600.0), (60.0, 1.0, 45.0)]
    for tau, d, U in cases:
        P = tau + d
        t = rng.uniform(10 * P, 1000 * P, 400_000)
        k = np.floor(t / P)                                  # last stall end at k P
        lost = np.where(t - k * P >= U, t - k * P, t - (k - 1) * P)
        w = sto.rework_s("async", tau, d, U)
        assert lost.mean() == pytest.approx(w, rel=0.01)
        assert w == pytest.approx(P / 2 + U)


def test_rework_modes_reduce_to_each_other():
    tau, d = 1800.0, 4.0
    sync = sto.rework_s("sync", tau, d)
    assert sync == pytest.approx(rel.lost_hours_per_interruption(tau, d) * 3600)   # (tau+d)/2
    assert sto.rework_s("async", tau, d, 0.0) == pytest.approx(sync)
    # an upload slower than the interval raises the interval to it: (300 + 4)/2 + 300
    assert sto.rework_s("async", 100.0, d, 300.0) == pytest.approx(304 / 2 + 300)
    # peer-memory: every failure survivable, instant peer copy -> same as sync
    assert sto.rework_s("peer-memory", tau, d, 600.0, sto.PeerCopies(0.0, 1.0)) == pytest.approx(sync)
    # no failure survivable -> the durable copy, uploaded every tau_r = 3 tau
    assert sto.rework_s("peer-memory", tau, d, 600.0, sto.PeerCopies(2.0, 0.0, 3 * tau)) == \
        pytest.approx((3 * tau + d) / 2 + 600.0)
    # 90% single-node failures, 2 s peer copy, 600 s upload every interval
    mix = 0.9 * ((tau + d) / 2 + 2.0) + 0.1 * ((tau + d) / 2 + 600.0)
    assert sto.rework_s("peer-memory", tau, d, 600.0, sto.PeerCopies(2.0, 0.9)) == pytest.approx(mix)


def test_goodput_sync_and_zero_upload_are_daly():
    tau, M, R = 3000.0, 11_000.0, 600.0
    assert sto.checkpoint_goodput("sync", tau, 45.0, M, R) == rel.goodput(tau, 45.0, M, R)
    # async with an instant upload: w = (tau + delta)/2, so F(2w) is Daly's F exactly
    assert sto.checkpoint_goodput("async", tau, 2.0, M, R, 0.0) == \
        pytest.approx(rel.goodput(tau, 2.0, M, R), rel=1e-12)


def test_goodput_first_order_and_ordering():
    tau, d, M, R, U = 3000.0, 2.0, 11_000.0, 600.0, 400.0
    g = sto.checkpoint_goodput("async", tau, d, M, R, U)
    w = (tau + d) / 2 + U
    first = tau / (tau + d) * (1 - (w + R) / M)
    # exact to first order in 1/M: the gap is of order ((w + R)/M)^2 = 0.047
    assert abs(g - first) < ((w + R) / M) ** 2
    # the copy in flight costs goodput: async with an upload < async without < peer copies
    assert g < sto.checkpoint_goodput("async", tau, d, M, R, 0.0)
    assert sto.checkpoint_goodput("peer-memory", tau, d, M, R, U, sto.PeerCopies(1.0, 1.0)) > g
    # the seed's point: a 3-5 s local stall beats a 30-60 s synchronous one at the same tau
    assert sto.checkpoint_goodput("async", tau, 4.0, M, R, 60.0) > \
        sto.checkpoint_goodput("sync", tau, 45.0, M, R)


def test_timing_bad_inputs():
    with pytest.raises(InputError) as e:
        sto.rework_s("lazy", 100, 1)
    assert e.value.param == "mode"
    with pytest.raises(InputError) as e:
        sto.rework_s("peer-memory", 100, 1, 10, sto.PeerCopies(1, 1.5))
    assert e.value.param == "peer_share"
    with pytest.raises(InputError) as e:
        sto.durable_interval_s(0, 10)
    assert e.value.param == "interval_s"


# ------------------------------------------------------------------ seed claims

def test_seed_500_checkpoints_of_30_to_60_s():
    # Seed 001: "Over 18 days of training with 500 checkpoints, that's 5-8 hours."
    n = 500
    hours = n * np.array([30.0, 60.0]) / 3600
    assert hours == pytest.approx([4.167, 8.333], abs=1e-3)       # 4.2-8.3 h, not quite 5-8
    # 5-8 h is 36-57.6 s per checkpoint
    assert np.array([5.0, 8.0]) * 3600 / n == pytest.approx([36.0, 57.6])
    # one checkpoint every 18 x 86400 / 500 = 3,110 s; the idle share 0.96-1.9%
    every = 18 * 86400 / n
    assert every == pytest.approx(3110.4)
    # which storage gives 30-60 s for a 70B Megatron checkpoint (987.7 GB) from the seed's
    # 256 GPUs (32 nodes, node links not binding): 987.7 / 60 = 16.5 to 987.7 / 30 = 32.9 GB/s
    S = sto.checkpoint_size_bytes(P_70B)
    assert sto.sync_stall_s(S, 32, S / 30 / 1e9, 50.0) == pytest.approx(30.0)
    assert sto.sync_stall_s(S, 32, S / 60 / 1e9, 50.0) == pytest.approx(60.0)
    # Daly at 45 s and the seed's MTBF of 4.7 days: 6,015 s, about twice the seed's cadence
    assert rel.daly_interval_s(45.0, 4.7 * 86400) == pytest.approx(6015.4, rel=1e-3)


def test_seed_3_to_5_s_local_write_of_70b():
    # Seed 001: local checkpoints "to NVMe on node 0" take 3-5 s for a 70B model.
    full = sto.checkpoint_size_bytes(P_70B)                      # 987.7 GB at 14 B/param
    need = full / np.array([5.0, 3.0]) / 1e9                     # 197.5-329.2 GB/s
    assert need == pytest.approx([197.5, 329.2], abs=0.1)
    # (a) not reproducible: the full state on one node beats even 8 drives at the PCIe Gen5 x4
    #     link ceiling (8 x 15.75 = 126 GB/s)
    assert need[0] > 8 * GEN5_X4_GB_PER_S
    # (b) reproducible if only the bf16 weights are written (2 B/param, 141.1 GB): 28.2-47.0
    #     GB/s, under 8 drives at the Gen4 x4 ceiling (63 GB/s)
    weights = P_70B * 2 / np.array([5.0, 3.0]) / 1e9
    assert weights == pytest.approx([28.2, 47.0], abs=0.1) and weights[1] < 8 * GEN4_X4_GB_PER_S
    # (c) reproducible if the full state is sharded over the job's 32 nodes (256 GPUs):
    #     30.9 GB per node, 6.2-10.3 GB/s per node (one to two drives' links); at 7.7 GB/s
    #     per node the NVMe stall is 4.0 s
    per_node = full / 32
    assert per_node / np.array([5.0, 3.0]) / 1e9 == pytest.approx([6.17, 10.29], abs=0.01)
    assert 3 <= sto.local_stall_s(full, 32, 25.0, 8, 7.7) <= 5
    # a host-memory copy alone is far shorter: 30.9 GB over 8 GPUs x 25 GB/s = 0.15 s
    assert sto.local_stall_s(full, 32, 25.0) < 0.2


def test_llama3_405b_durable_interval_never_shorter_than_upload():
    # Llama 3.1 405B on 16,384 H100 (2,048 nodes), sharded saves of 5.67 TB.
    S = sto.checkpoint_size_bytes(P_405B)
    nodes = 2048
    tier = TIER.loc["meta-tectonic-llama3"]
    # upload to Tectonic at its sustained 2 TB/s; node links (100 GB/s, a DGX-like 2 x 400
    # Gbit/s assumption) are not binding: 2048 x 100 GB/s >> 2 TB/s -> 5.67e12 / 2e12 = 2.835 s
    U = sto.upload_s(S, nodes, tier["write_gb_per_s"], 100.0)
    assert U == pytest.approx(2.835)
    # host staging stall: 5.67e12 / (2048 x 8 x 25 GB/s) = 13.8 ms
    d = sto.local_stall_s(S, nodes, 25.0)
    assert d == pytest.approx(5.67e12 / (2048 * 8 * 25e9))
    # job MTBF from data/failure_rates.csv (Llama 3: 0.4736 per 1000 GPU-days) -> 3.09 h
    rate = catalog.failure_rate("llama3-h100-jobs").failures_per_1000_gpu_days
    M = rel.mtbf_h(rel.job_failures_per_day(16384, rate)) * 3600
    assert M / 3600 == pytest.approx(3.093, abs=1e-3)
    tau = sto.recommended_interval_s(d, M, U)
    assert tau == pytest.approx(rel.daly_interval_s(d, M))          # ~17.5 s > U here
    assert tau >= U
    # sweep the tier from 7 TB/s (Tectonic's peak) down to 10 GB/s: the upload grows to
    # 567 s and the recommended durable interval follows it, never below it
    bw = np.geomspace(7000.0, 10.0, 40)
    U_all = sto.upload_s(S, nodes, bw, 100.0)
    tau_all = sto.recommended_interval_s(d, M, U_all)
    assert (tau_all >= U_all).all()
    slow = U_all > rel.daly_interval_s(d, M)
    assert slow.any() and (tau_all[slow] == U_all[slow]).all()
    assert U_all[-1] == pytest.approx(567.0)


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-3, 600), st.floats(60, 1e7), st.floats(0, 1e4))
def test_recommended_interval_covers_upload(stall, mtbf, upload):
    tau = sto.recommended_interval_s(stall, mtbf, upload)
    assert tau >= upload
    assert tau >= rel.daly_interval_s(stall, mtbf)


# ------------------------------------------------------------------ 6 slowest writer

def _sigma(ratio):
    return np.log(ratio) / stats.norm.ppf(0.99)


@pytest.mark.parametrize("N,ratio", [(8, 1.5), (100, 2.0), (1024, 3.0)])
def test_slowest_writer_quantiles_monte_carlo(N, ratio):
    rng = np.random.default_rng(N)
    t50 = 10.0
    mx = t50 * np.exp(_sigma(ratio) * rng.standard_normal((4000, N))).max(axis=1)
    for q in (0.5, 0.9):
        assert sto.slowest_writer_quantile_s(t50, ratio, N, q) == \
            pytest.approx(np.quantile(mx, q), rel=0.015)


@pytest.mark.parametrize("N,ratio,tol", [(8, 2.0, 0.05), (64, 2.0, 0.03), (64, 4.0, 0.05),
                                         (1024, 3.0, 0.03), (4096, 1.5, 0.01)])
def test_expected_slowest_writer_monte_carlo(N, ratio, tol):
    rng = np.random.default_rng(7 * N)
    t50 = 10.0
    mx = t50 * np.exp(_sigma(ratio) * rng.standard_normal((3000, N))).max(axis=1)
    assert sto.expected_slowest_writer_s(t50, ratio, N) == pytest.approx(mx.mean(), rel=tol)


def test_seed_watch_the_p99():
    # Seed 001: "Watch the p99, not the p50. A single slow disk can stall the entire run."
    # With 100 writers the median checkpoint waits for one disk's 0.5^(1/100) = 99.31st
    # percentile: between its p99 and p99.5.
    t = sto.slowest_writer_quantile_s(1.0, 3.0, 100)
    assert 3.0 < t < np.exp(_sigma(3.0) * stats.norm.ppf(0.995))
    assert t == pytest.approx(np.exp(_sigma(3.0) * stats.norm.ppf(0.5 ** 0.01)), rel=1e-12)
    # no spread, no tail
    assert sto.slowest_writer_quantile_s(4.0, 1.0, 16384) == 4.0
    assert sto.expected_slowest_writer_s(4.0, 1.0, 16384) == pytest.approx(4.0)


def test_one_writer_is_one_lognormal_in_both_tails():
    # one writer: the q-quantile is one lognormal's, precise in both tails
    q = np.array([1e-9, 0.01, 0.3, 0.5, 0.9, 0.999999])
    got = sto.slowest_writer_quantile_s(1.0, 2.0, 1, q)
    assert got == pytest.approx(np.exp(_sigma(2.0) * stats.norm.ppf(q)), rel=1e-12)


def test_heavy_tail_refused_for_extreme_value_form():
    with pytest.raises(InputError) as e:
        sto.expected_slowest_writer_s(1.0, 1e6, 2)
    assert e.value.param == "p99_over_p50"
    with pytest.raises(InputError) as e:
        sto.slowest_writer_quantile_s(1.0, 0.5, 8)
    assert e.value.param == "p99_over_p50"


# ------------------------------------------------------------------ 7 tiers

def _bill(**kw):
    S3 = TIER.loc["s3-standard"]
    base = dict(checkpoint_bytes=5.67e12, nodes=2048, interval_s=3600.0, burst_s=30.0,
                dataset_tb=60.0, data_read_gb_per_s=0.0108)
    base.update(kw)
    groups = {"checkpoints": (sto.CheckpointWrites, ("checkpoint_bytes", "nodes", "interval_s", "burst_s", "mode")),
              "data": (sto.DatasetReads, ("dataset_tb", "data_read_gb_per_s", "data_tier", "hot_dataset_share")),
              "retention": (sto.Retention, ("keep_local", "keep_warm", "archived", "archive_every"))}
    # a keyword no group takes would run the bill on its defaults: refuse it here
    assert set(kw) <= {k for _, keys in groups.values() for k in keys}, kw
    made = {name: cls(**{k: base[k] for k in keys if k in base}) for name, (cls, keys) in groups.items()}
    hot = sto.StorageTier(TIER.loc["dgx-h100-local-nvme", "capacity_tb"], 20.0, 10.0)
    warm = sto.StorageTier(2000.0, 100.0, 50.0, usd_per_gb_month=0.1)
    cold = sto.ObjectTier(S3["usd_per_gb_month"], put_per_s=sto.S3_PUT_PER_PREFIX_PER_S,
                          get_per_s=S3["requests_per_s"], part_bytes=64e6, read_request_bytes=1e6)
    return sto.tier_bill_of_materials(made["checkpoints"], made["data"], hot, warm, cold, made["retention"])


def test_bill_sync_meets_average_not_burst():
    # Seed 000's failure. Sync 405B saves (5.67 TB) hourly to a 50 GB/s-write PFS with a 30 s
    # stall target: average 5.67e12 / 3600 = 1.575 GB/s (3% of the tier), burst 189 GB/s
    # (3.8x the tier).
    b = _bill(mode="sync")
    assert b.warm.write_average_gb_per_s == pytest.approx(1.575)
    assert b.warm.write_burst_gb_per_s == pytest.approx(189.0)
    assert b.warm.meets_average and not b.warm.meets_burst and b.warm.average_but_not_burst
    assert not b.warm.burst_collides_with_reads    # the burst alone is too big: no collision
    assert b.hot.write_burst_gb_per_s == 0.0             # sync writes nothing locally
    # FSx-style sizing for the burst: 189 GB/s at 1 GB/s per TiB -> 189 TiB = 207.8 TB
    beta = TIER.loc["fsx-lustre-p2-1000", "write_gb_per_s"]
    assert sto.per_tib_provisioned_tb(b.warm.capacity_needed_tb, 189.0, beta) == \
        pytest.approx(189 * 2 ** 40 / 1e12)


def test_bill_async_moves_the_burst_to_local_nvme():
    b = _bill(mode="async", keep_local=2)
    # per node: 5.67e12 / 2048 = 2.77 GB in 30 s -> 0.092 GB/s burst; 2 copies = 5.5 GB
    assert b.hot.write_burst_gb_per_s == pytest.approx(5.67e12 / 2048 / 30 / 1e9)
    assert b.hot.capacity_needed_tb == pytest.approx(2 * 5.67e12 / 2048 / 1e12)
    assert b.hot.meets_capacity and b.hot.meets_burst
    # the upload spreads over the interval: the warm burst is the average
    assert b.warm.write_burst_gb_per_s == b.warm.write_average_gb_per_s
    assert b.warm.meets_burst and not b.warm.average_but_not_burst


def test_bill_burst_collides_with_data_reads_on_the_same_tier():
    # 40 GB/s of data reads on warm (0.4 of 100 GB/s) and a 2.268 TB sync burst in 60 s
    # (37.8 GB/s = 0.756 of 50): each fits, together 1.156 > 1
    kw = dict(checkpoint_bytes=2.268e12, burst_s=60.0, data_read_gb_per_s=40.0, mode="sync")
    b = _bill(data_tier="warm", **kw)
    assert b.warm.utilization_burst == pytest.approx(0.4 + 0.756)
    assert b.warm.burst_collides_with_reads and not b.warm.meets_burst
    # serve the data from local NVMe instead: no collision on warm
    b2 = _bill(data_tier="hot", **kw)
    assert not b2.warm.burst_collides_with_reads and b2.warm.meets_burst
    assert b2.hot.read_gb_per_s == pytest.approx(40.0 / 2048)


def test_bill_capacity_requests_and_cost():
    b = _bill(mode="async", keep_local=1, keep_warm=3, archived=10, archive_every=4)
    # warm: 3 x 5.67 TB + 60 TB dataset = 77.01 TB at $0.1/GB-month = $7,701
    assert b.warm.capacity_needed_tb == pytest.approx(77.01)
    assert b.warm.usd_per_month == pytest.approx(77.01e3 * 0.1)
    # cold: 10 archived x 5.67 + 60 = 116.7 TB at S3's $0.023 = $2,684.1
    assert b.cold.capacity_needed_tb == pytest.approx(116.7)
    assert b.cold.usd_per_month == pytest.approx(116.7e3 * 0.023)
    # archive every 4th hourly checkpoint: 5.67e12 / 14400 s / 64 MB = 6.15 PUT/s
    assert b.cold_put_per_s == pytest.approx(5.67e12 / 14400 / 64e6)
    assert b.hot.usd_per_month == 0.0                     # owned NVMe
    assert b.usd_per_month == pytest.approx(7701.0 + 2684.1)
    # data read straight from S3 at 11 GB/s in 1 MB GETs: 11,000 GET/s > one prefix's 5,500
    s3 = _bill(data_tier="cold", data_read_gb_per_s=11.0)
    assert s3.cold_get_per_s == pytest.approx(11_000)
    # utilization: reads 11 / (5,500 x 1 MB = 5.5 GB/s) = 2 plus the archive writes
    # 1.575 / (3,500 x 64 MB = 224 GB/s) = 0.007
    assert s3.cold.utilization_average == pytest.approx(11 / 5.5 + 1.575 / 224)
    assert not s3.cold.meets_average


def test_bill_bad_tier_name():
    with pytest.raises(InputError) as e:
        _bill(data_tier="lukewarm")
    assert e.value.param == "data_tier"


# ------------------------------------------------------------------ 8 spot notice

def test_checkpoint_on_notice_aws_and_gcp():
    assert (sto.AWS_SPOT_NOTICE_S, sto.GCP_SPOT_NOTICE_S, sto.AWS_NOTICE_POLL_S) == (120, 30, 5)
    full = sto.checkpoint_size_bytes(P_70B)
    # sharded over 32 nodes: 30.9 GB leaves a node at 100 GB/s (2 x 400 Gbit/s) in 0.31 s
    ok = sto.checkpoint_on_notice(full / 32, 100.0, sto.GCP_SPOT_NOTICE_S)
    assert ok.fits and ok.write_s == pytest.approx(5 + 0.3087, rel=1e-3)
    # all 987.7 GB on one node over 100 Gbit/s (12.5 GB/s): 5 + 79.0 = 84.0 s ->
    # inside AWS's 120 s, not GCP's 30 s
    one = sto.checkpoint_on_notice(full, 12.5, [sto.AWS_SPOT_NOTICE_S, sto.GCP_SPOT_NOTICE_S])
    assert one.fits.tolist() == [True, False]
    assert one.slack_s == pytest.approx([120 - 84.016, 30 - 84.016], abs=1e-2)


# ------------------------------------------------------------------ data file and docstrings

def test_storage_tiers_csv_rows_are_sourced():
    df = TIERS
    for col in ("id", "source", "as_of"):
        assert df[col].notna().all() and (df[col].astype(str).str.strip() != "").all()
    assert df["as_of"].astype(str).str.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?").all()
    assert not df["id"].str.lower().duplicated().any()
    assert set(df["tier"]) <= {"hot", "warm", "cold"}
    assert set(df["per"]) <= {"node", "aggregate", "per_TiB"}
    num = df[["read_gb_per_s", "write_gb_per_s", "capacity_tb", "usd_per_gb_month",
              "requests_per_s"]]
    assert (num.fillna(0) >= 0).all().all()
    # the cited numbers
    assert TIER.loc["dgx-h100-local-nvme", "capacity_tb"] == pytest.approx(8 * 3.84)
    assert TIER.loc[["fsx-lustre-p2-125", "fsx-lustre-p2-250", "fsx-lustre-p2-500",
                     "fsx-lustre-p2-1000"], "read_gb_per_s"].tolist() == [0.125, 0.25, 0.5, 1.0]
    assert TIER.loc["s3-standard", "requests_per_s"] == sto.S3_GET_PER_PREFIX_PER_S
    assert TIER.loc["meta-tectonic-llama3", "capacity_tb"] == 240_000
