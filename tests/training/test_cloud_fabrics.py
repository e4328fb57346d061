"""The scale-out fabrics of the priced clouds (data/fabrics.csv) and a fabric given by its numbers
(the Scenario's ``fabric=custom``): per-GPU bandwidths from the providers' per-instance figures,
constants against the nccl-tests results the rows cite, the review with a custom fabric, its link.
"""

from dataclasses import replace

import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost.review import evaluate, scaling_series
from llmcost.scenario import Scenario
from llmcost.training import comm

#: published Gb/s per 8-GPU instance for GPU-to-GPU traffic, and the technology of the row
PER_INSTANCE_GBIT = {
    "aws-efa-p4d": (400, "efa"),              # AWS P4d deep dive (2020): 400 Gbps EFA
    "aws-efa-p5": (3200, "efa"),              # AWS EC2 user guide: P5, 32 cards, 3,200 Gbps
    "aws-efa-p5en": (3200, "efa"),            # NVIDIA Dynamo docs: p5en 3.2 Tbps EFA
    "aws-efa-p6-b200": (3200, "efa"),         # NVIDIA Dynamo docs: p6-b200 3.2 Tbps EFA
    "gcp-a3-tcpx": (800, "roce"),             # Google: A3 High, 4 GPU NICs x 200 Gbps
    "gcp-a3-mega-tcpxo": (1600, "roce"),      # Google: A3 Mega, 8 GPU NICs x 200 Gbps
    "gcp-a3-ultra-roce": (3200, "roce"),      # Google: A3 Ultra, 8 CX-7, 3,200 Gbps
    "azure-nd-h100-v5-ib": (3200, "infiniband"),  # Azure: 8 x 400 Gb/s NDR, 3.2 Tbps per VM
}

#: the offer -> fabric pairs the providers document (the rest default to the H100 reference
#: design's NDR InfiniBand)
OFFER_FABRIC = {"aws-p4d": "aws-efa-p4d", "aws-p5": "aws-efa-p5", "aws-p5en": "aws-efa-p5en",
                "gcp-a3-highgpu-8g": "gcp-a3-tcpx", "azure-nd96isr-h100-v5": "azure-nd-h100-v5-ib"}


@pytest.mark.parametrize("fid", sorted(PER_INSTANCE_GBIT))
def test_per_gpu_bandwidth_is_the_instance_figure_over_8_gpus_and_8_bits(fid):
    gbit, tech = PER_INSTANCE_GBIT[fid]
    f = catalog.fabric(fid)
    assert f.kind == "scale_out" and f.technology == tech
    assert f.bandwidth_gb_per_s_per_gpu == pytest.approx(gbit / 8 / 8, rel=1e-12)
    row = catalog.fabrics().set_index("id").loc[fid]
    assert row["link_gbit_per_s"] == pytest.approx(gbit / 8, rel=1e-12)
    assert 0 < f.efficiency <= 1 and f.latency_us > 0


def test_every_cloud_offer_names_a_scale_out_fabric():
    fabrics = catalog.fabrics().set_index("id")
    prices = catalog.prices().set_index("id")
    assert prices["fabric"].notna().all()
    assert (fabrics.loc[prices["fabric"], "kind"] == "scale_out").all()
    for offer, fid in OFFER_FABRIC.items():
        assert prices.loc[offer, "fabric"] == fid


def test_tcpxo_constants_reproduce_the_published_two_node_all_gather():
    # dstack examples/clusters/a3mega (2 x a3-megagpu-8g, all_gather_perf, out-of-place us);
    # efficiency is NCCL bus bandwidth / line rate (fabrics.csv notes): no congestion factor
    size = 2.0 ** np.arange(23, 34)
    measured_us = np.array([166.6, 204.6, 284.0, 447.4, 808.3, 1522.1, 2892.3, 5532.7, 10863,
                            21481, 42713])
    f = catalog.fabric("gcp-a3-mega-tcpxo")
    t = comm.hierarchical_allgather_time_s(size, 16, 8, comm.Links.of(
        450, f.bandwidth_gb_per_s_per_gpu, 1.0, f.latency_us, 1.0, f.efficiency), 1.0)
    np.testing.assert_allclose(t * 1e6, measured_us, rtol=0.05)
    # the plateau alone: busbw 188.54 GB/s at 8 GiB of 8 NICs x 25 GB/s
    assert f.efficiency == pytest.approx(188.54 / 200, abs=0.01)


def test_tcpx_efficiency_is_the_published_plateau():
    # dstack examples/clusters/a3high: busbw 49-50 GB/s from 128 MiB to 8 GiB, 4 NICs x 25 GB/s
    plateau_busbw = np.array([49.99, 49.67, 50.19, 49.27, 50.01, 49.77, 50.17])
    f = catalog.fabric("gcp-a3-tcpx")
    assert f.efficiency == pytest.approx(plateau_busbw.mean() / (8 * f.bandwidth_gb_per_s_per_gpu),
                                         abs=0.01)


def test_p4d_constants_from_the_published_two_node_all_reduce():
    # aws-samples/awsome-distributed-training nccl-tests README: 2 x p4de.24xlarge (16 ranks)
    busbw, node_gb_s, n = 78.33, 400 / 8, 16
    assert busbw > node_gb_s        # above the ring bound: NCCL's tree, S each way per node
    eta = busbw / (2 * (n - 1) / n) / node_gb_s
    f = catalog.fabric("aws-efa-p4d")
    assert f.efficiency == pytest.approx(eta, abs=0.01)
    # 8-byte all-reduce ~161 us = 2(n-1) alpha in the model's hierarchical all-reduce
    t8 = comm.hierarchical_allreduce_time_s(8, n, 8, comm.Links.of(
        300, f.bandwidth_gb_per_s_per_gpu, 1.0, f.latency_us, 1.0, f.efficiency), 1.0)
    assert t8 * 1e6 == pytest.approx(161, rel=0.05)


def test_p5_efficiency_is_not_below_what_the_published_all_reduce_needs():
    # 2 x p5.48xlarge: busbw 487 GB/s at 16 GiB through NVLink SHARP needs 487 / 1.875 GB/s of
    # EFA per node (NVIDIA/nccl#1017); the row's assumed 0.9 must not fall below that
    f = catalog.fabric("aws-efa-p5")
    assert f.efficiency >= 487.09 / (2 * 15 / 16) / (8 * f.bandwidth_gb_per_s_per_gpu)


@pytest.mark.parametrize("tech", sorted(catalog.FABRIC_TECHNOLOGIES))
def test_custom_fabric_takes_the_reference_row_constants(tech):
    family, ref_id = catalog.FABRIC_TECHNOLOGIES[tech]
    ref = catalog.fabric(ref_id)
    assert ref.technology == family
    f = catalog.custom_fabric(7.5, tech)
    assert f.id == "custom" and f.bandwidth_gb_per_s_per_gpu == 7.5 and f.technology == family
    assert replace(f, id=ref.id, name=ref.name, bandwidth_gb_per_s_per_gpu=ref.bandwidth_gb_per_s_per_gpu) == ref


def test_custom_fabric_with_ib_ndr_numbers_gives_ib_ndr_days_and_a_slower_one_more():
    base = Scenario(model="llama3-70b", gpus=1024, fabric="ib-ndr")
    ib = evaluate(base)
    same = evaluate(replace(base, fabric="custom", fabric_gb_per_s_per_gpu=50.0,
                            fabric_technology="ib"))
    slow = evaluate(replace(base, fabric="custom", fabric_gb_per_s_per_gpu=5.0,
                            fabric_technology="ib"))
    assert same.inputs.scale_out.id == "custom"
    assert same.economics.days == pytest.approx(ib.economics.days, rel=1e-12)
    # a tenth of the bandwidth: the data-parallel gradient traffic is exposed
    assert slow.economics.days > 1.05 * ib.economics.days
    assert ib.inputs.resolved["fabric_gb_per_s_per_gpu"] == 50.0
    assert same.to_json()["fabric"] == "custom"


def test_a_custom_fabric_is_drawn_in_the_scaling_series():
    res = evaluate(Scenario(model="llama3-70b", gpus=1024, fabric="custom",
                            fabric_gb_per_s_per_gpu=12.5, fabric_technology="efa"))
    assert "custom" in set(scaling_series(res)["fabric"])


def test_link_and_json_round_trip():
    s = Scenario(fabric="custom", fabric_gb_per_s_per_gpu=12.5, fabric_technology="efa")
    q = s.to_query()
    for part in ("fabric=custom", "fabric_gb_per_s_per_gpu=12.5", "fabric_technology=efa"):
        assert part in q.split("&")
    assert Scenario.from_query(q, strict=True) == (s, [])
    assert Scenario.from_json(s.to_json(), strict=True) == (s, [])
    # the bandwidth alone means a custom fabric, as a price alone means custom prices
    alone, warnings = Scenario.from_query("fabric_gb_per_s_per_gpu=25&fabric_technology=roce",
                                          strict=True)
    assert (alone.fabric, alone.fabric_gb_per_s_per_gpu, alone.fabric_technology) == (
        "custom", 25.0, "roce") and warnings == []
    # a catalog fabric given with it stays the catalog fabric
    assert Scenario.from_query("fabric=aws-efa-p5&fabric_gb_per_s_per_gpu=25")[0].fabric == "aws-efa-p5"


@pytest.mark.parametrize("query,key", [
    ("fabric=custom&fabric_gb_per_s_per_gpu=-50", "fabric_gb_per_s_per_gpu"),
    ("fabric_gb_per_s_per_gpu=0", "fabric_gb_per_s_per_gpu"),
    ("fabric_gb_per_s_per_gpu=1e6", "fabric_gb_per_s_per_gpu"),
    ("fabric=custom&fabric_technology=foo", "fabric_technology"),
    ("fabric=cusom", "fabric"),
])
def test_bad_values_name_their_key(query, key):
    with pytest.raises(InputError) as e:
        Scenario.from_query(query, strict=True)
    assert e.value.param == key and key in str(e.value)
    # a lenient link keeps the default and says which key it dropped
    s, warnings = Scenario.from_query(query)
    assert any(w.startswith(key) for w in warnings)
    assert s.fabric_technology == "ib" and s.fabric_gb_per_s_per_gpu == 50.0


def test_bad_values_refused_by_the_scenario_and_the_catalog():
    with pytest.raises(InputError) as e:
        Scenario(fabric="custom", fabric_gb_per_s_per_gpu=-1.0)
    assert e.value.param == "fabric_gb_per_s_per_gpu"
    with pytest.raises(InputError) as e:
        Scenario(fabric="custom", fabric_technology="foo")
    assert e.value.param == "fabric_technology"
    with pytest.raises(InputError) as e:
        catalog.custom_fabric(-1.0, "ib")
    assert e.value.param == "fabric_gb_per_s_per_gpu" and "-1" in str(e.value)
    with pytest.raises(InputError) as e:
        catalog.custom_fabric(10.0, "foo")
    assert e.value.param == "fabric_technology" and "'foo'" in str(e.value)
