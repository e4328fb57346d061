"""Communication time of a step: tensor-, context- and expert-parallel collectives, the
pipeline's bubble and point-to-point transfers, and data-parallel (ZeRO, FSDP) traffic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from .. import comm
from ..comm import Links
from .resolve import _Resolved

if TYPE_CHECKING:
    from ..arch import ModelSpec


def pipeline_bubble_fraction(pp: ArrayLike, num_microbatches: ArrayLike,
                             interleave: ArrayLike = 1) -> float | np.ndarray:
    r"""Idle share of the pipeline relative to the ideal time.

    .. math:: \beta = \frac{p - 1}{v\, m}

    Parameters
    ----------
    pp : int or array
        p [-].
    num_microbatches : int or array
        m [-].
    interleave : int or array
        v, virtual stages per GPU [-].

    Returns
    -------
    fraction : float or array
        Bubble time / ideal time [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2.
    """
    p = v.integer("pp", pp)
    m = v.positive("num_microbatches", num_microbatches)
    vv = v.integer("interleave", interleave)
    return v.result((p - 1) / (vv * m))


def data_parallel_volume_bytes(params: ArrayLike, zero_stage: ArrayLike = 0,
                               grad_bytes: ArrayLike = 2.0) -> float | np.ndarray:
    r"""Bytes each GPU sends and receives per step for gradient synchronisation.

    .. math:: V = \begin{cases} 2\,\Psi\,g & \text{stages 0-2 (all-reduce, or reduce-scatter
              + all-gather)} \\ 3\,\Psi\,g & \text{stage 3 (+ one parameter all-gather)}
              \end{cases}

    (times (n-1)/n on a ring; Psi = parameters per model-parallel shard.)

    Parameters
    ----------
    params : float or array
        Psi [-].
    zero_stage : int or array
        0-3.
    grad_bytes : float
        g, bytes per element [bytes].

    Returns
    -------
    volume : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.1-7.2.2.
    """
    psi = v.nonnegative("params", params)
    z = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    g = v.positive("grad_bytes", grad_bytes)
    return v.result(np.where(z >= 3, 3.0, 2.0) * psi * g)


def zero3_exposed_comm_s(gather_s: ArrayLike, reduce_scatter_s: ArrayLike, forward_s: ArrayLike,
                         backward_s: ArrayLike, layers: ArrayLike, num_microbatches: ArrayLike) -> float | np.ndarray:
    r"""Exposed time of ZeRO-3 / FSDP parameter all-gathers and gradient reduce-scatters.

    Every micro-batch, each layer's parameters are all-gathered before its forward and
    again before its backward (freed after the forward: FSDP ``reshard_after_forward``,
    ZeRO-3), and its gradients are reduce-scattered after its backward: sharded gradients
    do not accumulate across micro-batches (the default of DeepSpeed ZeRO-3 and FSDP; a
    stack that keeps unsharded gradients through accumulation, e.g. FSDP ``no_sync``,
    trades this traffic for a full gradient copy in memory and is not modelled).
    Prefetching hides the next layer's collectives behind this layer's compute, up to
    that compute; the first gather and the last reduce-scatter have nothing to hide behind:

    .. math::
        T = m \left[T_{AG} + T_{RS} + n\left(\max(0, T_{AG} - t_f)
            + \max(0, T_{AG} + T_{RS} - t_b)\right)\right]

    with T_AG, T_RS the alpha-beta ring collectives of one layer over the sharding group
    (:func:`llmcost.training.comm.hierarchical_allgather_time_s`: (N-1) latency steps plus
    bytes over the bus bandwidth times the fabric efficiency), t_f and t_b one layer's
    forward and backward compute for one micro-batch. The exposed share grows as
    micro-batches shrink (t_f, t_b fall, T_AG does not) and as the group grows (latency
    (N-1) alpha, congestion).

    Parameters
    ----------
    gather_s, reduce_scatter_s : float or array
        T_AG, T_RS: one layer's parameter all-gather and gradient reduce-scatter [s].
    forward_s, backward_s : float or array
        t_f, t_b: one layer's forward and backward compute per micro-batch [s].
    layers : int or array
        n, layers on the pipeline stage [-].
    num_microbatches : int or array
        m, micro-batches per step [-].

    Returns
    -------
    time_s : float or array
        Exposed communication per step [s].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.2 (stage 3: parameters gathered
       in forward and backward, gradients reduce-scattered: 3 Psi per step).
    .. [2] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data
       Parallel", VLDB 2023, arXiv:2304.11277, §3.3-3.4 (backward/forward prefetch,
       reshard after forward, gradient accumulation with and without communication).
    """
    ag, rs, tf, tb, n = v.checked(
        v.nonnegative, gather_s=gather_s, reduce_scatter_s=reduce_scatter_s, forward_s=forward_s,
        backward_s=backward_s, layers=layers)
    m = v.positive("num_microbatches", num_microbatches)
    per_mb = ag + rs + n * (np.maximum(0.0, ag - tf) + np.maximum(0.0, ag + rs - tb))
    return v.result(m * per_mb)


def _p2p_s(size_bytes: ArrayLike, in_domain: ArrayLike, links: Links) -> np.ndarray:
    # one point-to-point send over NVLink inside the scale-up domain, else over the fabric
    up, out = links.scale_up, links.scale_out
    return np.where(in_domain,
                    comm.p2p_time_s(size_bytes, up.bandwidth_gb_per_s_per_gpu, up.latency_us,
                                    links.nvlink_efficiency),
                    comm.p2p_time_s(size_bytes, out.bandwidth_gb_per_s_per_gpu, out.latency_us,
                                    out.efficiency))


def tensor_parallel_comm_s(tokens: float | np.ndarray, hidden: float | np.ndarray, tp: float | np.ndarray,
                           recompute: str | np.ndarray, links: Links,
                           overlap: float | np.ndarray = 0.0) -> np.ndarray:
    r"""Exposed tensor-parallel collectives of one layer and one micro-batch.

    .. math:: T_{tp} = n_{tp}\, T_{AR}(2\, M h,\ t)\, (1 - \phi_{tp}),\qquad
              n_{tp} = 4 \text{ (6 with full recomputation)}

    Two all-reduces in the forward and two in the backward (with sequence parallelism an
    all-gather and a reduce-scatter each, the same bytes), two more for the recomputed
    forward; a ring over NVLink when t fits in the scale-up domain, else the hierarchical
    all-reduce over NVLink and the fabric
    (:func:`llmcost.training.comm.hierarchical_allreduce_time_s`).

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    hidden : int
        h [-].
    tp : int or array
        t [-].
    recompute : {"none", "selective", "full"} or array of these names
    links : Links
        NVLink inside the scale-up domain of ``domain_gpus`` GPUs at ``nvlink_efficiency``,
        the scale-out fabric beyond.
    overlap : float or array
        phi_tp, share hidden behind GEMMs (0 with TP communication overlap off) [-].

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3.3 (two all-reduces per layer in each
       direction).
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.2 (sequence parallelism: the same
       bytes as all-gather + reduce-scatter).
    """
    n_tp = 4.0 + 2.0 * (recompute == "full")
    tp_bytes = tokens * hidden * 2.0
    domain_gpus = links.domain_gpus
    t_ar_nvl = comm.ring_allreduce_time_s(tp_bytes, tp, links.scale_up.bandwidth_gb_per_s_per_gpu,
                                          links.scale_up.latency_us, links.nvlink_efficiency)
    t_ar_net = comm.hierarchical_allreduce_time_s(
        tp_bytes, tp, np.minimum(tp, domain_gpus), links,
        links.congestion(np.maximum(tp // domain_gpus, 1)))
    return n_tp * np.where(tp <= domain_gpus, t_ar_nvl, t_ar_net) * (1.0 - overlap)


def context_parallel_comm_s(tokens: float | np.ndarray, kv_heads: float | np.ndarray, head_dim: float | np.ndarray,
                            tp: float | np.ndarray, cp: float | np.ndarray, attention_s: float | np.ndarray,
                            links: Links) -> np.ndarray:
    r"""Context-parallel K/V ring not hidden behind the attention math, one layer and one
    micro-batch.

    .. math:: T_{cp} = \max\left(0,\ 3 (c - 1)\, T_{p2p}\!\left(2 \cdot 2 M
              \frac{n_{kv} d_h}{\min(t, n_{kv})}\right) - t_{attn}\right)

    Each of the c - 1 ring steps passes a block of K and V (BF16) to the next rank, once in
    the forward and twice in the backward (K/V and their gradients); NVLink while t c fits
    in the scale-up domain.

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    kv_heads, head_dim : int
        n_kv, d_h [-].
    tp, cp : int or array
        t, c [-].
    attention_s : float or array
        t_attn, the attention core's time that hides the ring [s].
    links : Links
        NVLink inside the scale-up domain of ``domain_gpus`` GPUs at ``nvlink_efficiency``,
        the scale-out fabric beyond.

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] H. Liu et al., "Ring Attention with Blockwise Transformers", arXiv:2310.01889,
       §3 (blocks passed around a ring, overlapped with blockwise attention).
    """
    kv_bytes = tokens * 2.0 * kv_heads * head_dim / np.minimum(tp, kv_heads) * 2.0
    t_link = _p2p_s(kv_bytes, tp * cp <= links.domain_gpus, links)
    return np.maximum(0.0, 3.0 * (cp - 1) * t_link - attention_s)


def expert_parallel_comm_s(rank_tokens: float | np.ndarray, model: ModelSpec, ep: float | np.ndarray,
                           etp: float | np.ndarray, recomputed: float | np.ndarray, links: Links,
                           imbalance: float | np.ndarray = 1.0,
                           overlap: float | np.ndarray = 0.0) -> float | np.ndarray:
    r"""Exposed MoE token dispatch and combine of one layer (mean over dense and MoE layers)
    and one micro-batch, on the busiest expert rank.

    .. math:: T_{ep} = \sigma\, n_{a2a}\, T_{A2A}\!\left(\frac{M}{t} k h \cdot 2\,\iota,\
              e\right)(1 - \phi_{a2a}),\qquad n_{a2a} = 4 \text{ (6 recomputed)}

    with sigma = l_m / l the share of MoE layers, iota the load imbalance and the all-to-all over the
    EP group on NVLink inside the scale-up domain (domain / t_e ranks of it), the fabric
    beyond (:func:`llmcost.training.comm.hierarchical_alltoall_time_s`).

    Parameters
    ----------
    rank_tokens : float or array
        M / t, the tokens one tensor-parallel rank routes per micro-batch (its
        sequence-parallel shard of b s / c) [-].
    model : ModelSpec
        A mixture-of-experts model: h, k (``moe_top_k``) and sigma (its MoE layers over all
        layers).
    ep, etp : int or array
        e, t_e [-].
    recomputed : bool or array
        The forward's all-to-alls run again (full recomputation or the "moe" module).
    links : Links
        NVLink inside the scale-up domain of ``domain_gpus`` GPUs at ``nvlink_efficiency``,
        the scale-out fabric beyond.
    imbalance : float
        iota, tokens of the busiest rank over the mean [-].
    overlap : float
        phi_a2a, share hidden behind computation [-].

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] D. Lepikhin et al., "GShard", arXiv:2006.16668, §2.2 (dispatch and combine
       all-to-alls); DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.2
       (overlapping them: DualPipe).
    """
    a2a_bytes = rank_tokens * model.moe_top_k * model.hidden * 2.0 * imbalance
    ep_in_domain = np.maximum(links.domain_gpus // etp, 1)
    t_a2a_one = comm.hierarchical_alltoall_time_s(
        a2a_bytes, ep, ep_in_domain, links, links.congestion(np.maximum(-(-ep // ep_in_domain), 1)))
    n_a2a = 4.0 + 2.0 * recomputed
    return model.moe_layers / model.layers * n_a2a * t_a2a_one * (1.0 - overlap)


def pipeline_p2p_s(tokens: float | np.ndarray, hidden: float | np.ndarray, tp: float | np.ndarray,
                   cp: float | np.ndarray, dp: float | np.ndarray, pp: float | np.ndarray,
                   interleave: float | np.ndarray, links: Links) -> np.ndarray:
    r"""Pipeline activation sends of one micro-batch on the critical path.

    .. math:: T_{pp} = 2 v\, T_{p2p}(2 M h / t)\quad (p > 1;\ 0 \text{ otherwise})

    One send forward and one backward per virtual stage; Megatron's scatter/gather sends
    1/t of the activations per NIC and all-gathers them after. Neighbouring stages sit
    d t c ranks apart: NVLink while that stays inside the scale-up domain.

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    hidden : int
    tp, cp, dp, pp, interleave : int or array
        t, c, d, p, v [-].
    links : Links
        NVLink inside the scale-up domain of ``domain_gpus`` GPUs at ``nvlink_efficiency``,
        the scale-out fabric beyond.

    Returns
    -------
    time_s : float or array
        [s] per micro-batch.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §4.1 (scatter/gather optimization).
    """
    p2p_bytes = tokens * hidden * 2.0 / tp
    t_one = _p2p_s(p2p_bytes, tp * cp * dp < links.domain_gpus, links)
    return np.where(pp > 1, 2.0 * interleave * t_one, 0.0)


def pipeline_bubble_s(pp: float | np.ndarray, interleave: float | np.ndarray,
                      microbatch_s: float | np.ndarray) -> float | np.ndarray:
    r"""Pipeline fill and drain per step.

    .. math:: T_{bubble} = \frac{p - 1}{v}\, t_{mb}
              \;=\; \beta\, m\, t_{mb},\qquad \beta = \frac{p - 1}{v m}

    (:func:`pipeline_bubble_fraction`), with t_mb the slowest stage's time per micro-batch.

    Parameters
    ----------
    pp, interleave : int or array
        p, v [-].
    microbatch_s : float or array
        t_mb [s].

    Returns
    -------
    time_s : float or array
        [s] per step.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2.
    """
    return (pp - 1) / interleave * microbatch_s


class DataParallelCollectives(NamedTuple):
    """The heaviest stage's data-parallel collectives [s]: the gradient all-reduce of a step
    (T_AR) and one layer's ZeRO-3 parameter all-gather (T_AG) and gradient reduce-scatter
    (T_RS)."""

    allreduce_s: float | np.ndarray
    gather_s: float | np.ndarray
    reduce_scatter_s: float | np.ndarray


def _dp_collectives_s(model: ModelSpec, R: _Resolved, links: Links, n_heavy: float | np.ndarray,
                      mid_heavier: ArrayLike) -> DataParallelCollectives:
    r"""The heaviest stage's data-parallel collectives: the gradient all-reduce of a step
    and one layer's ZeRO-3 parameter all-gather and gradient reduce-scatter.

    Hierarchical rings over the DP x CP group (NVLink inside the scale-up domain, the
    fabric with its congestion between nodes,
    :func:`llmcost.training.comm.hierarchical_allreduce_time_s`) for the dense parameters
    Psi / t (the embedding and LM head on their stages), and over the expert
    data-parallel group gpus / (p e t_e) for the routed experts, Psi_e / (e t_e), on the
    same links after the dense ones. Gradients move ``grad_bytes`` per parameter,
    gathered parameters 2 (BF16).

    Parameters
    ----------
    model : ModelSpec
    R : _Resolved
    links : Links
    n_heavy : int or array
        Layers on the stage with the most parameters [-].
    mid_heavier : bool or array
        That stage is a middle one (no LM head).

    Returns
    -------
    collectives : DataParallelCollectives
        T_AR per step; T_AG and T_RS of one layer [s].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2 (2 Psi per step; stage 3
       3 Psi).
    .. [2] Narayanan et al. 2021, arXiv:2104.04473, §3.2 (data-parallel all-reduce per
       pipeline stage).
    """
    opt, node, tp = R.opt, R.node, R.tp
    L, h = model.layers, model.hidden
    expert_layer = model.expert_layer_params
    stage_params = (n_heavy * (model.layer_params - expert_layer) + np.where(
        R.pp == 1, model.params - L * model.layer_params,
        np.where(mid_heavier, 0, model.vocab * h))) / tp
    group = R.dp * R.cp
    per_node = np.minimum(group, np.maximum(node // np.minimum(tp, node), 1))
    comm_args = (group, per_node, links, links.congestion(np.maximum(group // per_node, 1)))
    t_ar = comm.hierarchical_allreduce_time_s(stage_params * opt.grad_bytes, *comm_args)
    # one layer's share (embedding and LM head spread over the layers)
    unit_params = stage_params / n_heavy
    t_gather = comm.hierarchical_allgather_time_s(2.0 * unit_params, *comm_args)
    t_scatter = comm.hierarchical_allgather_time_s(opt.grad_bytes * unit_params, *comm_args)
    if model.is_moe:
        ep, etp, edp = R.ep, R.etp, R.edp
        e_node = np.minimum(edp, np.maximum(node // np.minimum(ep * etp, node), 1))
        e_args = (edp, e_node, links, links.congestion(np.maximum(edp // e_node, 1)))
        t_ar = t_ar + comm.hierarchical_allreduce_time_s(
            n_heavy * expert_layer / (ep * etp) * opt.grad_bytes, *e_args)
        e_unit = expert_layer / (ep * etp)
        t_gather = t_gather + comm.hierarchical_allgather_time_s(2.0 * e_unit, *e_args)
        t_scatter = t_scatter + comm.hierarchical_allgather_time_s(opt.grad_bytes * e_unit,
                                                                   *e_args)
    return DataParallelCollectives(t_ar, t_gather, t_scatter)


def data_parallel_comm_s(collectives: DataParallelCollectives, zero_stage: float | np.ndarray,
                         num_microbatches: float | np.ndarray,
                         stage_compute_s: float | np.ndarray, layer_compute_s: float | np.ndarray, layers: ArrayLike,
                         overlap: float | np.ndarray = 0.0, recompute_factor: float | np.ndarray = 1.0) -> np.ndarray:
    r"""Exposed data-parallel communication per step, by ZeRO stage.

    With phi the share that can overlap and W the compute it can hide behind,
    exposed(T, W) = (1 - phi) T + max(0, phi T - W):

    .. math::
        T_{dp} = \begin{cases}
        \mathrm{exposed}(T_{AR},\ t_b) & \text{ZeRO 0-1} \\
        \mathrm{exposed}(m T_{AR}/2,\ (m - 1) t_{mb} + t_b) + \mathrm{exposed}(T_{AR}/2,\ t_f)
            & \text{ZeRO-2} \\
        T_{z3} & \text{ZeRO-3 (:func:`zero3_exposed_comm_s`)}
        \end{cases}

    ZeRO 0-1 accumulate gradients locally and reduce once, behind the last backward
    t_b = 2/3 of the stage's micro-batch compute t_mb. ZeRO-2's sharded gradients cannot
    accumulate: each micro-batch reduce-scatters its own (half an all-reduce) on one
    communication stream, each hidden behind everything computed after its backward; the
    updated parameters are all-gathered behind the next forward t_f = t_mb / 3. ZeRO-3
    gathers and reduce-scatters per layer and micro-batch, each hidden behind one layer's
    forward or backward.

    Parameters
    ----------
    collectives : DataParallelCollectives
        T_AR, the stage's gradient all-reduce, and one layer's ZeRO-3 parameter all-gather
        and gradient reduce-scatter [s].
    zero_stage : int or array
        0-3.
    num_microbatches : int or array
        m [-].
    stage_compute_s : float or array
        t_mb, the stage's compute per micro-batch [s].
    layer_compute_s : float or array
        One layer's compute per micro-batch, forward and backward [s].
    layers : int or array
        Layers on the stage [-].
    overlap : float
        phi [-].
    recompute_factor : float or array
        4/3 with full recomputation (the forward runs twice), else 1 [-].

    Returns
    -------
    time_s : float or array
        [s] per step.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.
    .. [2] Zhao et al. 2023, arXiv:2304.11277, §3.3-3.4.
    """
    allreduce_s, gather_s, reduce_scatter_s = collectives
    m, phi = num_microbatches, overlap
    backward = stage_compute_s * 2.0 / 3.0   # one micro-batch's backward on this stage
    forward = stage_compute_s / 3.0

    def exposed(t: float | np.ndarray, window: float | np.ndarray) -> float | np.ndarray:
        return (1 - phi) * t + np.maximum(0.0, phi * t - window)

    half = allreduce_s / 2.0   # a reduce-scatter or an all-gather is half an all-reduce
    t_z01 = exposed(allreduce_s, backward)
    t_z2 = exposed(m * half, (m - 1) * stage_compute_s + backward) + exposed(half, forward)
    fwd_compute = layer_compute_s / (3.0 * recompute_factor)
    t_z3 = zero3_exposed_comm_s(gather_s, reduce_scatter_s, fwd_compute,
                                layer_compute_s - fwd_compute, layers, m)
    return np.where(zero_stage <= 1, t_z01, np.where(zero_stage == 2, t_z2, t_z3))
