"""The serving input groups (llmcost.serving.deployment): each bad value raises an InputError
naming its parameter when the group is built, and the groups broadcast as predict reads them."""

import numpy as np
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.serving import scheduler as sc
from llmcost.serving import serve
from llmcost.serving.deployment import Deployment, Search, Workload

CAT = catalog.default()
H100 = CAT.gpu("h100-sxm")
NVLINK = CAT.fabric(H100.scale_up)


@pytest.mark.parametrize("model, kw, param", [
    ("llama3-8b", dict(tp=3), "tp"),              # 32 heads
    ("llama3-8b", dict(tp=16), "tp"),             # beyond the 8-GPU NVLink domain
    ("llama3-8b", dict(ep=2, tp=2), "ep"),        # dense
    ("qwen3-30b-a3b", dict(tp=2, ep=4), "ep"),    # ep does not divide tp
    ("llama3-8b", dict(weights="int3"), "weights"),
    ("llama3-8b", dict(expert_weights="int3"), "expert_weights"),
    ("llama3-8b", dict(kv="int2"), "kv"),
    ("llama3-8b", dict(engine="tgi"), "engine"),
])
def test_bad_deployment_names_its_parameter(model, kw, param):
    with pytest.raises(InputError) as e:
        Deployment(CAT.model(model), H100, NVLINK, **kw)
    assert e.value.param == param


@pytest.mark.parametrize("kw, param", [
    (dict(isl=0, osl=10), "isl"),
    (dict(isl=10, osl=1.5), "osl"),
    (dict(isl=10, osl=10, concurrency=0), "concurrency"),
    (dict(isl=10, osl=10, requests=200_000), "num_prompts"),
    (dict(isl=10, osl=10, request_rate=0.0), "request_rate"),
    (dict(isl=10, osl=10, length_spread=1.5), "length_spread"),
])
def test_bad_workload_names_its_parameter(kw, param):
    with pytest.raises(InputError) as e:
        Workload(**kw)
    assert e.value.param == param


def test_bad_search_and_batching_name_their_parameter():
    for kw, param in ((dict(ttft_ms_max=0.0), "ttft_ms_max"),
                      (dict(tpot_ms_max=-1.0), "tpot_ms_max"), (dict(top=-1), "top")):
        with pytest.raises(InputError) as e:
            Search(**kw)
        assert e.value.param == param
    with pytest.raises(InputError) as e:
        sc.Batching(max_running=0, token_budget=10, kv_capacity_tokens=100)
    assert e.value.param == "max_num_seqs"
    with pytest.raises(InputError) as e:
        sc.Batching(max_running=1, token_budget=10, kv_capacity_tokens=-1)
    assert e.value.param == "kv_capacity_tokens"


def test_plan_chooses_the_layout_itself():
    d = Deployment(CAT.model("llama3-8b"), H100, NVLINK, tp=2)
    with pytest.raises(InputError) as e:
        serve.plan(d, Workload(isl=100, osl=100))
    assert e.value.param == "tp"


def test_groups_keep_arrays_that_broadcast_and_name_the_load():
    d = Deployment(CAT.model("llama3-70b"), H100, NVLINK, tp=np.array([[2], [4], [8]]))
    assert d.tp.shape == (3, 1) and d.ep.shape == ()
    assert d.weight_format == "bf16" and d.expert_weight_format == "bf16"
    assert not d.attention_dp_on()
    w = Workload(isl=1000, osl=100, concurrency=np.array([1, 8, 64]))
    assert w.concurrency.shape == (3,) and w.load_shape == "steady" and not w.simulated
    assert Workload(isl=10, osl=10, requests=5).load_shape == "burst"
    assert Workload(isl=10, osl=10, requests=5, concurrency=2).load_shape == "concurrency"
    assert Workload(isl=10, osl=10, request_rate=2.0).load_shape == "rate"


def test_most_running_is_the_concurrency_predict_serves_when_none_is_given():
    """The planner's candidate concurrencies come from the memory stage alone; it must be the
    concurrency the whole prediction serves, layout by layout, and a full instance at it."""
    from llmcost.serving.predict import most_running, predict
    d = Deployment(CAT.model("llama3-70b"), H100, NVLINK, tp=np.array([2, 4, 8]))
    w = Workload(isl=1000, osl=200)
    most = most_running(d, w)
    r = predict(d, w)
    np.testing.assert_array_equal(most, r.concurrency)
    # more TP leaves more memory per GPU for the KV cache: more sequences in flight
    assert most[0] < most[1] < most[2] and r.fits.all()
    # one more sequence than the memory holds does not fit
    beyond = predict(d, Workload(isl=1000, osl=200, concurrency=np.asarray(r.max_concurrency) + 1))
    assert not beyond.fits.any()
