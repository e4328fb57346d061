"""Checkpoint on a spot preemption notice: the notice periods and whether a node's copy is
written out before the node goes away."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

#: spot notice periods [s]: AWS EC2 two-minute interruption notice; GCP Spot VM 30 s from
#: ACPI G2 soft off to G3 mechanical off.
AWS_SPOT_NOTICE_S = 120.0
GCP_SPOT_NOTICE_S = 30.0
#: AWS recommends polling for the notice every 5 s: the worst-case detection delay [s].
AWS_NOTICE_POLL_S = 5.0


# --------------------------------------------------------------------------- 8 spot notice

@dataclass(frozen=True)
class NoticeCheck:
    write_s: np.ndarray   # detection + write [s]
    slack_s: np.ndarray   # notice left over (negative: does not fit) [s]
    fits: np.ndarray


def checkpoint_on_notice(node_bytes: ArrayLike, write_gb_per_s: ArrayLike, notice_s: ArrayLike = AWS_SPOT_NOTICE_S,
                         detect_s: ArrayLike = AWS_NOTICE_POLL_S) -> NoticeCheck:

    r"""Does a checkpoint written after a preemption notice finish before the node goes away?

    .. math:: t = t_{detect} + \frac{s_{node}}{B},\qquad \text{fits} \iff t \le t_{notice}

    ``write_gb_per_s`` must be the bandwidth to where the copy survives: on a cloud spot
    instance local instance-store disks are deleted at termination, so a copy that must
    outlive the node has to leave it (peer memory, PFS, object store); a local NVMe write
    only helps if the disk outlives the preemption.

    Parameters
    ----------
    node_bytes : float or array
        s_node, checkpoint bytes the preempted node holds [bytes].
    write_gb_per_s : float or array
        B, bandwidth to the surviving copy [GB/s].
    notice_s : float or array
        t_notice [s]: :data:`AWS_SPOT_NOTICE_S` (120) or :data:`GCP_SPOT_NOTICE_S` (30).
    detect_s : float or array
        t_detect, delay before the notice is seen [s] (AWS recommends polling every 5 s).

    Returns
    -------
    NoticeCheck
        write_s t [s], slack_s = t_notice - t [s], fits [bool].

    References
    ----------
    .. [1] AWS EC2 User Guide, "Spot Instance interruption notices" (two minutes; check every
       5 seconds; best effort).
    .. [2] Google Compute Engine API, ``Scheduling.skipGuestOsShutdown`` (30 s from ACPI G2
       soft off to G3 mechanical off for Spot VMs).
    .. [3] AWS EC2 API, ``StopInstances`` (volumes attached at launch are deleted when an
       instance terminates).
    """
    sb = v.positive("node_bytes", node_bytes)
    B = v.positive("write_gb_per_s", write_gb_per_s)
    T = v.positive("notice_s", notice_s)
    det = v.nonnegative("detect_s", detect_s)
    t = det + sb / (B * 1e9)
    return NoticeCheck(v.result(t), v.result(T - t), v.result(t <= T))
