"""Data loading: bytes per token, the read rate training needs, the requests and object-store
prefixes it takes, and the share of time the step waits for data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

#: S3 request limits per partitioned prefix [requests/s] (AWS S3 performance guide).
S3_GET_PER_PREFIX_PER_S = 5500.0
S3_PUT_PER_PREFIX_PER_S = 3500.0


# --------------------------------------------------------------------------- 3-4 data reads

def token_bytes(vocab_size: ArrayLike) -> float | np.ndarray:
    r"""Bytes per pre-tokenized token: the smallest unsigned integer that holds every id.

    .. math:: b = 2 \text{ if } V \le 2^{16} \text{ else } 4

    Megatron's indexed dataset switches to int32 a little earlier, at V >= 65,500.

    Parameters
    ----------
    vocab_size : int or array
        V, vocabulary size [-] (ids 0 .. V-1).

    Returns
    -------
    bytes : float or array
        b [bytes/token].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       ``np.memmap(..., dtype=np.uint16)`` pre-tokenized data.
    .. [2] Megatron-Core ``datasets/indexed_dataset.py``, ``DType.optimal_dtype`` (uint16
       below 65,500, else int32).
    """
    V = v.integer("vocab_size", vocab_size)
    return v.result(np.where(V <= 2 ** 16, 2.0, 4.0))


@dataclass(frozen=True)
class DataReadRate:
    aggregate_gb_per_s: np.ndarray   # from the data tier while training runs
    per_node_gb_per_s: np.ndarray
    average_gb_per_s: np.ndarray     # over the run (lower when later epochs hit a local cache)


def data_read_rate_gb_per_s(tokens_per_s: ArrayLike, nodes: ArrayLike = 1, bytes_per_token: ArrayLike = 2.0,
                            read_amplification: ArrayLike = 1.0, epochs: ArrayLike = 1.0,
                            local_cache: ArrayLike = False) -> DataReadRate:
    r"""Read rate the training data puts on its storage tier.

    .. math::
        D = \frac{T\, b\, a}{10^9},\qquad D_{node} = D / n,\qquad
        \bar D = D / e \text{ (local cache) else } D

    T tokens/s consumed, b bytes per token (2 for uint16 ids, 4 above 65,536 ids: see
    :func:`token_bytes`), a read amplification (whole blocks read for partial samples,
    shuffled small reads, raw text rather than ids). With a node-local cache (e.g. the DGX
    NFS cache) only the first of e epochs reads the shared tier.

    Parameters
    ----------
    tokens_per_s : float or array
        T, training throughput [tokens/s] (>= 0).
    nodes : float or array
        n [-].
    bytes_per_token : float or array
        b [bytes/token].
    read_amplification : float or array
        a, bytes read per byte used [-] (>= 1).
    epochs : float or array
        e, passes over the data [-].
    local_cache : bool
        Later epochs read a node-local copy.

    Returns
    -------
    DataReadRate
        aggregate_gb_per_s D [GB/s], per_node_gb_per_s [GB/s], average_gb_per_s [GB/s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       pre-tokenize and memory-map; data loading under 10% of a step.
    .. [2] NVIDIA DGX best practices, "Internal Storage (NFS Cache)": later epochs read the
       local SSD cache.
    """
    T = v.nonnegative("tokens_per_s", tokens_per_s)
    n = v.positive("nodes", nodes)
    b = v.positive("bytes_per_token", bytes_per_token)
    a = v.in_range("read_amplification", read_amplification, 1.0, None)
    e = v.in_range("epochs", epochs, 0.0, None, low_inclusive=False)
    cache = v.boolean("local_cache", local_cache)
    D = T * b * a / 1e9
    avg = np.where(cache, D / np.maximum(e, 1.0), D)
    return DataReadRate(v.result(D), v.result(D / n), v.result(avg))


def read_requests_per_s(read_rate_gb_per_s: ArrayLike, request_bytes: ArrayLike) -> float | np.ndarray:
    r"""Requests per second a read rate needs at a given read (block, object, range) size.

    .. math:: Q = D \cdot 10^9 / r

    Compare with the tier's request limit, e.g. S3's 5,500 GET/s per partitioned prefix
    (:data:`S3_GET_PER_PREFIX_PER_S`) times the prefixes the data is spread over.

    Parameters
    ----------
    read_rate_gb_per_s : float or array
        D [GB/s].
    request_bytes : float or array
        r, bytes per request [bytes].

    Returns
    -------
    requests : float or array
        Q [requests/s].

    References
    ----------
    .. [1] AWS, "Best practices design patterns: optimizing Amazon S3 performance" (5,500
       GET/HEAD per second per partitioned prefix).
    """
    D = v.nonnegative("read_rate_gb_per_s", read_rate_gb_per_s)
    return v.result(D * 1e9 / v.positive("request_bytes", request_bytes))


def prefixes_needed(requests_per_s: ArrayLike,
                    requests_per_prefix_per_s: ArrayLike = S3_GET_PER_PREFIX_PER_S) -> float | np.ndarray:
    r"""Prefixes (partitions) a request rate must be spread over to stay under the limit.

    .. math:: k = \max(1, \lceil Q / Q_{prefix} \rceil)

    Parameters
    ----------
    requests_per_s : float or array
        Q [requests/s].
    requests_per_prefix_per_s : float or array
        Q_prefix [requests/s per prefix] (S3: 5,500 GET, 3,500 PUT).

    Returns
    -------
    prefixes : float or array
        k [-].

    References
    ----------
    .. [1] AWS, "Best practices design patterns: optimizing Amazon S3 performance" (request
       rates scale with the number of partitioned prefixes).
    """
    Q = v.nonnegative("requests_per_s", requests_per_s)
    lim = v.positive("requests_per_prefix_per_s", requests_per_prefix_per_s)
    return v.result(np.maximum(1.0, np.ceil(Q / lim)))


def data_stall_share(read_rate_gb_per_s: ArrayLike, tier_read_gb_per_s: ArrayLike,
                     tier_requests_per_s: ArrayLike | None = None, request_bytes: ArrayLike | None = None,
                     prefetch: ArrayLike = True) -> float | np.ndarray:

    r"""Share of step time spent waiting for data when the tier cannot keep up.

    The tier delivers B_eff = min(B, Q r / 1e9) GB/s (bandwidth or request limit). With
    prefetching, reads overlap compute and a step lasts the longer of the two, so

    .. math:: s = \max\left(0,\; 1 - \frac{B_{eff}}{D}\right)

    is 0 whenever the tier keeps up. Without prefetching reads and compute alternate and
    s = D / (D + B_eff).

    Parameters
    ----------
    read_rate_gb_per_s : float or array
        D, rate training consumes data [GB/s] (:func:`data_read_rate_gb_per_s`).
    tier_read_gb_per_s : float or array
        B, the tier's read bandwidth available to the job [GB/s].
    tier_requests_per_s : float or array, optional
        Q, the tier's request limit [requests/s] (S3: 5,500 x prefixes); None: unlimited.
    request_bytes : float or array, optional
        r, bytes per read request [bytes]; required with ``tier_requests_per_s``.
    prefetch : bool
        Reads overlap compute.

    Returns
    -------
    share : float or array
        s, stalled share of step time [-] in [0, 1).

    References
    ----------
    .. [1] Mohan et al., PVLDB 14(5), 2021 ("fetch stalls": with prefetching the epoch time
       is the maximum of fetch, pre-processing and compute times).
    .. [2] AWS S3 performance guide (request limits per prefix).
    """
    D = v.nonnegative("read_rate_gb_per_s", read_rate_gb_per_s)
    B = v.positive("tier_read_gb_per_s", tier_read_gb_per_s)
    if tier_requests_per_s is not None:
        if request_bytes is None:
            raise v.InputError("request_bytes", "request_bytes is required with "
                                                "tier_requests_per_s (bytes per read request)")
        Q = v.positive("tier_requests_per_s", tier_requests_per_s)
        B = np.minimum(B, Q * v.positive("request_bytes", request_bytes) / 1e9)
    pf = v.boolean("prefetch", prefetch)
    overlapped = np.where(D > 0, np.maximum(0.0, 1.0 - B / np.where(D > 0, D, 1.0)), 0.0)
    serial = D / (D + B)
    return v.result(np.where(pf, overlapped, serial))
