"""Storage and checkpoints as a sized layer: checkpoint bytes per stack, who writes them, the
data read rate, data stalls, sync/async/peer-memory checkpoint timing and goodput, the
slowest-writer tail, a hot/warm/cold tier bill of materials and checkpoint-on-notice.

Pure formulas: every function takes scalars or numpy arrays and broadcasts. Tier numbers
(``data/storage_tiers.csv``) are passed in as plain arguments, so the module needs no
catalog. Bandwidths are GB/s with GB = 1e9 bytes; capacities TB = 1e12 bytes unless a name
says TiB (2**40 bytes).

References
----------
1. S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
   Models", SC 2020, arXiv:1910.02054, Sec. 3.1 (mixed-precision Adam: 2 + 2 + 12 bytes per
   parameter; the 12 are fp32 master weights, momentum and variance).
2. Megatron-Core ``dist_checkpointing`` (torch_dist format; ``FullyParallelSaveStrategy``
   spreads the save over data-parallel ranks) and PyTorch Distributed Checkpoint (DCP).
3. Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.1 (Tectonic:
   240 PB on 7,500 SSD servers, 2 TB/s sustained, 7 TB/s peak; bursty checkpoint writes;
   1 MB to 4 GB of state per GPU), Table 4 (405B layouts on 16,384 H100).
4. Z. Wang et al., "GEMINI: Fast Failure Recovery in Distributed Training with In-Memory
   Checkpoints", SOSP 2023, pp. 364-381, doi:10.1145/3600006.3613145 (checkpoints in local
   and peer CPU memory; remote persistent storage as the last resort).
5. J. Daly, FGCS 22(3):303-312, 2006, Eq. 13-14 and 37; J. Young, CACM 17(9), 1974.
6. J. Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training", PVLDB 14(5),
   2021 (with prefetching, fetch and compute overlap: a step takes the longer of the two).
7. AWS, "Best practices design patterns: optimizing Amazon S3 performance": at least
   3,500 PUT/COPY/POST/DELETE or 5,500 GET/HEAD requests per second per partitioned prefix.
8. AWS EC2 User Guide, "Spot Instance interruption notices" (two minutes; check every
   5 s); Google Compute Engine ``Scheduling.skipGuestOsShutdown`` (30 s between ACPI G2 soft
   off and G3 mechanical off for Spot VMs).
9. "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud) and
   N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): tiers; "500
   checkpoints x 30-60 s = 5-8 h"; "3-5 s local write for 70B"; "watch the p99".
"""

from .checkpoint_size import (
    OPTIMIZER_STATE_BYTES,
    SAVE_STRATEGIES,
    STACK_WEIGHT_BYTES,
    CheckpointWriters,
    bytes_per_writer,
    checkpoint_bytes_per_param,
    checkpoint_size_bytes,
    checkpoint_writers,
)
from .checkpoint_timing import (
    MODES,
    Z_99,
    PeerCopies,
    checkpoint_goodput,
    durable_interval_s,
    expected_slowest_writer_s,
    local_stall_s,
    recommended_interval_s,
    rework_s,
    slowest_writer_quantile_s,
    sync_stall_s,
    upload_s,
)
from .data_loading import (
    S3_GET_PER_PREFIX_PER_S,
    S3_PUT_PER_PREFIX_PER_S,
    DataReadRate,
    data_read_rate_gb_per_s,
    data_stall_share,
    prefixes_needed,
    read_requests_per_s,
    token_bytes,
)
from .notice import (
    AWS_NOTICE_POLL_S,
    AWS_SPOT_NOTICE_S,
    GCP_SPOT_NOTICE_S,
    NoticeCheck,
    checkpoint_on_notice,
)
from .tiers import (
    CheckpointWrites,
    DatasetReads,
    ObjectTier,
    Retention,
    StorageTier,
    TierBill,
    TierNeed,
    per_tib_provisioned_tb,
    tier_bill_of_materials,
    tier_utilization,
)

__all__ = ["STACK_WEIGHT_BYTES", "OPTIMIZER_STATE_BYTES", "SAVE_STRATEGIES", "checkpoint_bytes_per_param",
           "checkpoint_size_bytes", "CheckpointWriters", "checkpoint_writers", "bytes_per_writer",
           "S3_GET_PER_PREFIX_PER_S", "S3_PUT_PER_PREFIX_PER_S", "token_bytes", "DataReadRate",
           "data_read_rate_gb_per_s", "read_requests_per_s", "prefixes_needed", "data_stall_share",
           "MODES", "Z_99", "sync_stall_s", "local_stall_s", "upload_s", "durable_interval_s",
           "recommended_interval_s", "rework_s", "PeerCopies", "checkpoint_goodput", "slowest_writer_quantile_s",
           "expected_slowest_writer_s", "tier_utilization", "per_tib_provisioned_tb", "TierNeed",
           "TierBill", "CheckpointWrites", "DatasetReads", "StorageTier", "ObjectTier", "Retention",
           "tier_bill_of_materials", "AWS_SPOT_NOTICE_S", "GCP_SPOT_NOTICE_S",
           "AWS_NOTICE_POLL_S", "NoticeCheck", "checkpoint_on_notice"]
