"""Collectives against their closed forms (Thakur et al. 2005; Patarasuk and Yuan 2009)."""

import numpy as np
import pytest

from llmcost import InputError
from llmcost.training import comm


def test_ring_allreduce_closed_form():
    # 1 GB over 8 ranks at 100 GB/s, 5 us per step: 2*7*5e-6 + 2*7/8 * 1e9/1e11 = 0.01757 s
    t = comm.ring_allreduce_time_s(1e9, 8, 100, 5)
    assert t == pytest.approx(2 * 7 * 5e-6 + 2 * 7 / 8 * 1e9 / 100e9)
    assert t == pytest.approx(0.01757)
    assert comm.ring_allreduce_time_s(1e9, 1, 100, 5) == 0


def test_allreduce_is_reduce_scatter_plus_allgather():
    rs = comm.reduce_scatter_time_s(4e8, 16, 50, 2, 0.9)
    ag = comm.allgather_time_s(4e8, 16, 50, 2, 0.9)
    assert rs + ag == pytest.approx(comm.ring_allreduce_time_s(4e8, 16, 50, 2, 0.9))


def test_tree_latency_is_logarithmic():
    small = np.array([1024, 1024])
    n = np.array([8, 1024])
    t = comm.tree_allreduce_time_s(small * 0, n, 50, 10)
    assert t[1] / t[0] == pytest.approx(np.log2(1024) / np.log2(8))
    ring = comm.ring_allreduce_time_s(0, 1024, 50, 10)
    assert t[1] < ring / 50   # 2*10 steps vs 2*1023 steps


def test_hierarchical_is_nic_bound_across_nodes():
    # 8 GPUs per node, 16 nodes: each NIC carries S/8 around the inter-node ring.
    S, N, k = 8e9, 128, 8
    t = comm.hierarchical_allreduce_time_s(S, N, k, comm.Links.of(intra_gb_per_s=300,
                                                                  inter_gb_per_s=25))
    assert t == pytest.approx(2 * (N - 1) / N * S / (k * 25e9))
    # within one node the ring runs at NVLink speed
    assert comm.hierarchical_allreduce_time_s(S, 8, 8, comm.Links.of(300, 25)) == pytest.approx(
        comm.ring_allreduce_time_s(S, 8, 300))


def test_congestion_grows_per_doubling():
    f = comm.congestion_factor(np.array([1, 2, 16]), per_doubling=0.5, oversubscription=2)
    np.testing.assert_allclose(f, [2.0, 2 * 1.5, 2 * 3.0])


def test_bad_input():
    with pytest.raises(InputError) as e:
        comm.ring_allreduce_time_s(1e9, 8, 0)
    assert e.value.param == "bandwidth_gb_per_s"
    with pytest.raises(InputError) as e:
        comm.ring_allreduce_time_s(1e9, 8, 10, efficiency=1.5)
    assert e.value.param == "efficiency"
