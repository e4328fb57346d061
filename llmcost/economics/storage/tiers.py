"""Storage tiers: a tier's utilization under reads and writes, capacity to provision where
throughput scales with it, and the hot/warm/cold bill of materials."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

_TIB_PER_TB = 1e12 / 2 ** 40


# --------------------------------------------------------------------------- 7 tiers

def tier_utilization(read_gb_per_s: ArrayLike, write_gb_per_s: ArrayLike, tier_read_gb_per_s: ArrayLike,
                     tier_write_gb_per_s: ArrayLike) -> float | np.ndarray:
    r"""Share of a tier's time a read and a write load take together.

    .. math:: u = \frac{R}{B_r} + \frac{W}{B_w}

    A linear time-sharing model: a tier that reads at B_r and writes at B_w serves both
    loads only if u <= 1. So a checkpoint burst that fits alone can still stall the data
    reads sharing its tier.

    Parameters
    ----------
    read_gb_per_s, write_gb_per_s : float or array
        R, W, loads [GB/s] (>= 0).
    tier_read_gb_per_s, tier_write_gb_per_s : float or array
        B_r, B_w, the tier's bandwidths [GB/s].

    Returns
    -------
    utilization : float or array
        u [-] (> 1: the tier cannot keep up).

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud): "a
       storage tier that meets average throughput but cannot handle checkpoint bursts".
    .. [2] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (checkpoint writes saturate the
       storage fabric for short durations).
    """
    R = v.nonnegative("read_gb_per_s", read_gb_per_s)
    W = v.nonnegative("write_gb_per_s", write_gb_per_s)
    return v.result(R / v.positive("tier_read_gb_per_s", tier_read_gb_per_s) +
                    W / v.positive("tier_write_gb_per_s", tier_write_gb_per_s))


def per_tib_provisioned_tb(capacity_tb: ArrayLike, throughput_gb_per_s: ArrayLike,
                           gb_per_s_per_tib: ArrayLike) -> float | np.ndarray:
    r"""Capacity to provision on a tier whose throughput scales with capacity (FSx Lustre).

    .. math:: C = \max\left(C_{need},\; \frac{B_{need}}{\beta}\cdot\frac{2^{40}}{10^{12}}
              \right)

    Parameters
    ----------
    capacity_tb : float or array
        C_need [TB].
    throughput_gb_per_s : float or array
        B_need [GB/s].
    gb_per_s_per_tib : float or array
        beta, throughput per TiB provisioned [GB/s per TiB] (FSx for Lustre Persistent-2:
        0.125, 0.25, 0.5, 1.0).

    Returns
    -------
    capacity : float or array
        C [TB].

    References
    ----------
    .. [1] AWS FSx for Lustre API, ``PerUnitStorageThroughput``: throughput capacity = storage
       capacity (TiB) x per-unit throughput (MB/s/TiB); Persistent-2 SSD: 125, 250, 500, 1000.
    """
    C = v.nonnegative("capacity_tb", capacity_tb)
    Bn = v.nonnegative("throughput_gb_per_s", throughput_gb_per_s)
    beta = v.positive("gb_per_s_per_tib", gb_per_s_per_tib)
    return v.result(np.maximum(C, Bn / beta / _TIB_PER_TB))


@dataclass(frozen=True)
class TierNeed:
    capacity_needed_tb: np.ndarray        # per node for the hot tier
    read_gb_per_s: np.ndarray             # per node for the hot tier
    write_average_gb_per_s: np.ndarray
    write_burst_gb_per_s: np.ndarray
    utilization_average: np.ndarray
    utilization_burst: np.ndarray
    meets_capacity: np.ndarray
    meets_average: np.ndarray
    meets_burst: np.ndarray
    average_but_not_burst: np.ndarray     # the scaling article's failure
    burst_collides_with_reads: np.ndarray  # the burst alone fits, not beside the data reads
    usd_per_month: np.ndarray


@dataclass(frozen=True)
class TierBill:
    hot: TierNeed
    warm: TierNeed
    cold: TierNeed
    cold_put_per_s: np.ndarray            # requests the archive writes need
    cold_get_per_s: np.ndarray            # requests the data reads need (data on cold)
    usd_per_month: np.ndarray


def _need(cap_need: np.ndarray, cap: float | np.ndarray, R: np.ndarray, Wavg: np.ndarray, Wburst: np.ndarray,
          Br: float | np.ndarray, Bw: float | np.ndarray, usd: float | np.ndarray) -> TierNeed:
    ua = R / Br + Wavg / Bw
    ub = R / Br + Wburst / Bw
    ma, mb = ua <= 1, ub <= 1
    return TierNeed(capacity_needed_tb=v.result(cap_need), read_gb_per_s=v.result(R),
                    write_average_gb_per_s=v.result(Wavg), write_burst_gb_per_s=v.result(Wburst),
                    utilization_average=v.result(ua), utilization_burst=v.result(ub),
                    meets_capacity=v.result(cap_need <= cap), meets_average=v.result(ma),
                    meets_burst=v.result(mb), average_but_not_burst=v.result(ma & ~mb),
                    burst_collides_with_reads=v.result((R > 0) & (Wburst / Bw <= 1) & ~mb),
                    usd_per_month=v.result(usd))


@dataclass(frozen=True, eq=False)
class CheckpointWrites:
    """The checkpoints a run writes, each value checked once here (scalars or arrays that
    broadcast).

    Attributes
    ----------
    checkpoint_bytes : float or array
        S [bytes].
    nodes : float or array
        n [-].
    interval_s : float or array
        tau, time between checkpoints [s].
    burst_s : float or array
        t_b, window a checkpoint burst must fit in [s] (the sync stall target, or the local
        write target when async).
    mode : {"sync", "async"}
    """

    checkpoint_bytes: float | np.ndarray
    nodes: float | np.ndarray
    interval_s: float | np.ndarray
    burst_s: float | np.ndarray
    mode: str = "async"

    def __post_init__(self) -> None:
        v.choice("mode", self.mode, ("sync", "async"))
        v.check_fields(self, v.positive, ("checkpoint_bytes", "nodes", "interval_s", "burst_s"))


@dataclass(frozen=True, eq=False)
class DatasetReads:
    """The training data and where it is read from, each value checked once here.

    Attributes
    ----------
    dataset_tb : float or array
        V, tokenized training data [TB].
    data_read_gb_per_s : float or array
        D, aggregate data read rate [GB/s] (:func:`data_read_rate_gb_per_s`).
    data_tier : {"hot", "warm", "cold"}
        The tier the reads land on (per node on hot).
    hot_dataset_share : float or array
        h, share of the dataset each node keeps when ``data_tier`` is "hot" [-] (1: full
        replica, 1/n: sharded).
    """

    dataset_tb: float | np.ndarray
    data_read_gb_per_s: float | np.ndarray
    data_tier: str = "warm"
    hot_dataset_share: float | np.ndarray = 1.0

    def __post_init__(self) -> None:
        v.choice("data_tier", self.data_tier, ("hot", "warm", "cold"))
        v.check_fields(self, v.nonnegative, ("dataset_tb", "data_read_gb_per_s"))
        v.check_fields(self, v.fraction, ("hot_dataset_share",), allow_zero=True)


@dataclass(frozen=True, eq=False)
class StorageTier:
    """A file tier's capacity, bandwidths and price, each value checked once here: node-local
    NVMe (figures per node) or a parallel file system (aggregate; size a per-TiB tier with
    :func:`per_tib_provisioned_tb`).

    Attributes
    ----------
    capacity_tb : float or array
        [TB].
    read_gb_per_s, write_gb_per_s : float or array
        [GB/s].
    usd_per_gb_month : float or array
        [USD per GB-month] (0: owned, as local NVMe).
    """

    capacity_tb: float | np.ndarray
    read_gb_per_s: float | np.ndarray
    write_gb_per_s: float | np.ndarray
    usd_per_gb_month: float | np.ndarray = 0.0

    def __post_init__(self) -> None:
        v.check_fields(self, v.positive, ("capacity_tb", "read_gb_per_s", "write_gb_per_s"))
        v.check_fields(self, v.nonnegative, ("usd_per_gb_month",))


@dataclass(frozen=True, eq=False)
class ObjectTier:
    """An object store, its bandwidth set by its request limits, each value checked once here.

    Attributes
    ----------
    usd_per_gb_month : float or array
        [USD per GB-month].
    put_per_s, get_per_s : float or array
        Request limits [requests/s] (S3: 3,500 PUT and 5,500 GET per prefix, times the
        prefixes used).
    part_bytes, read_request_bytes : float or array
        Bytes per upload part and per read request [bytes].
    """

    usd_per_gb_month: float | np.ndarray
    put_per_s: float | np.ndarray
    get_per_s: float | np.ndarray
    part_bytes: float | np.ndarray
    read_request_bytes: float | np.ndarray

    def __post_init__(self) -> None:
        v.check_fields(self, v.nonnegative, ("usd_per_gb_month",))
        v.check_fields(self, v.positive, ("put_per_s", "get_per_s", "part_bytes", "read_request_bytes"))


@dataclass(frozen=True, eq=False)
class Retention:
    """How many checkpoints each tier keeps, each value checked once here.

    Attributes
    ----------
    keep_local, keep_warm : float or array
        K_l, K_w, checkpoints kept per tier [-] (local copies only when async).
    archived : float or array
        A, checkpoints archived on the cold tier [-].
    archive_every : float or array
        k, archive one checkpoint in k [-] (>= 1).
    """

    keep_local: float | np.ndarray = 1
    keep_warm: float | np.ndarray = 2
    archived: float | np.ndarray = 0
    archive_every: float | np.ndarray = 1

    def __post_init__(self) -> None:
        v.check_fields(self, v.in_range, ("archive_every",), low=1.0)
        v.check_fields(self, v.nonnegative, ("keep_local", "keep_warm", "archived"))


def tier_bill_of_materials(checkpoints: CheckpointWrites, data: DatasetReads, hot: StorageTier, warm: StorageTier,
                           cold: ObjectTier, retention: Retention | None = None) -> TierBill:
    r"""Capacity, bandwidth and monthly cost each storage tier needs, and whether it copes.

    Hot = node-local NVMe (per node), warm = parallel file system (aggregate), cold = object
    store (bandwidth set by its request limits). With S the checkpoint size, n nodes, tau
    the checkpoint interval, t_b the burst window (the sync stall target, or the local
    write target when async) and D the data read rate:

    .. math::
        \text{hot: } C &= K_l S/n + [\text{data on hot}]\, h\, V,\quad
            W_{burst} = [\text{async}]\, \frac{S/n}{t_b},\quad W_{avg} = [\text{async}]\,
            \frac{S/n}{\tau} \\
        \text{warm: } C &= K_w S + [\text{data not on cold}]\, V,\quad W_{avg} = S/\tau,\quad
            W_{burst} = S/t_b \text{ (sync) or } S/\tau \text{ (async: upload within } \tau) \\
        \text{cold: } C &= A\, S + V,\quad W = \frac{S}{k\tau},\quad
            B_w = Q_{put} r_{part},\quad B_r = Q_{get} r_{read}

    and the data reads D land on ``data_tier`` (per node on hot). Each tier is checked with
    :func:`tier_utilization` for the average and the burst; ``average_but_not_burst`` is the
    scaling article's failure [1] and ``burst_collides_with_reads`` flags a burst that fits alone but not
    beside the data reads on the same tier. Monthly cost: capacity needed x $/GB-month (hot
    defaults to 0, owned NVMe; cold request charges are not included).

    Parameters
    ----------
    checkpoints : CheckpointWrites
        S [bytes], n [-], tau [s], t_b [s] and the mode.
    data : DatasetReads
        V [TB], D [GB/s], ``data_tier`` and h [-].
    hot : StorageTier
        Local NVMe per node: capacity [TB], bandwidths [GB/s], price [USD per GB-month]
        (default 0, owned).
    warm : StorageTier
        The parallel file system, aggregate: capacity [TB], bandwidths [GB/s], price [USD per
        GB-month].
    cold : ObjectTier
        The object store: price [USD per GB-month], request limits [requests/s], part and
        read-request sizes [bytes].
    retention : Retention, optional
        K_l, K_w, A and k [-]; default one local copy, two on warm, none archived.

    Returns
    -------
    TierBill
        hot, warm, cold :class:`TierNeed` (capacities [TB], loads [GB/s], utilizations [-],
        flags, [USD/month]), the cold tier's needed request rates [requests/s] and the total
        [USD/month].

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud):
       storage must absorb checkpoint bursts as well as the average.
    .. [2] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): hot
       NVMe, warm parallel FS, cold object store.
    .. [3] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1.
    .. [4] AWS S3 performance guide (request limits per prefix).
    """
    ret = Retention() if retention is None else retention
    mode, data_tier = checkpoints.mode, data.data_tier
    S, n, tau, tb = checkpoints.checkpoint_bytes, checkpoints.nodes, checkpoints.interval_s, checkpoints.burst_s
    V, D, h = data.dataset_tb, data.data_read_gb_per_s, data.hot_dataset_share
    Kl, Kw, A, k = ret.keep_local, ret.keep_warm, ret.archived, ret.archive_every
    hot_cap, hot_r, hot_w, hot_usd = hot.capacity_tb, hot.read_gb_per_s, hot.write_gb_per_s, hot.usd_per_gb_month
    warm_cap, warm_r, warm_w, warm_usd = warm.capacity_tb, warm.read_gb_per_s, warm.write_gb_per_s, \
        warm.usd_per_gb_month
    cold_usd, put, get = cold.usd_per_gb_month, cold.put_per_s, cold.get_per_s
    part, rreq = cold.part_bytes, cold.read_request_bytes

    is_async = 1.0 if mode == "async" else 0.0
    on_hot, on_warm, on_cold = (float(data_tier == t) for t in ("hot", "warm", "cold"))
    zero = np.zeros(np.broadcast(S, n, tau, tb, V, D).shape)

    # hot, per node
    hot_need = is_async * Kl * S / n / 1e12 + on_hot * h * V + zero
    hot_bill = _need(hot_need, hot_cap, on_hot * D / n + zero, is_async * S / n / tau / 1e9 + zero,
                is_async * S / n / tb / 1e9 + zero, hot_r, hot_w,
                hot_usd * hot_need * 1e3 * n)
    # warm, aggregate
    warm_need = Kw * S / 1e12 + (1.0 - on_cold) * V + zero
    warm_burst = (S / tau if mode == "async" else S / tb) / 1e9 + zero
    warm_bill = _need(warm_need, warm_cap, on_warm * D + zero, S / tau / 1e9 + zero, warm_burst,
                 warm_r, warm_w, warm_usd * warm_need * 1e3)
    # cold: bandwidth is request-limited
    cold_need = A * S / 1e12 + V + zero
    cold_write = S / (k * tau) / 1e9 + zero
    cold_read = on_cold * D + zero
    cold_bill = _need(cold_need, np.inf, cold_read, cold_write, cold_write,
                 get * rreq / 1e9, put * part / 1e9, cold_usd * cold_need * 1e3)
    total = hot_bill.usd_per_month + warm_bill.usd_per_month + cold_bill.usd_per_month
    return TierBill(hot=hot_bill, warm=warm_bill, cold=cold_bill,
                    cold_put_per_s=v.result(cold_write * 1e9 / part),
                    cold_get_per_s=v.result(cold_read * 1e9 / rreq), usd_per_month=v.result(total))
