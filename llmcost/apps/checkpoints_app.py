"""Storage and checkpoints: checkpoint size, stalls, intervals, goodput, storage tiers."""

from __future__ import annotations

from .. import plots
from .base import ReviewPanel


class CheckpointApp(ReviewPanel):
    name = "checkpoints"
    title = "Storage and checkpoints"
    question = ("What storage does the run need, and what do checkpoints and failures cost "
                "it?")
    order = 40
    card_keys = ("goodput", "interval")
    intro = ("What storage does this run need, and what do checkpoints and failures cost it? "
             "The checkpoint's size (weights and Adam state), what a "
             "synchronous save to the shared tier stalls, what an asynchronous one stalls "
             "locally and how long its background upload takes (a snapshot is durable only "
             "once uploaded, so async never checkpoints faster than the upload), the interval "
             "(Daly's unless you set one) and the goodput of each mode; the data read rate; "
             "what the local NVMe and shared tiers must carry; whether a node's share fits in "
             "a spot notice. A job fails when any of its GPUs does, at a rate per GPU that "
             "reproduces the published job-level measurement for the GPU's generation (H100: "
             "Llama 3, one interruption per 3.1 h on 16,384 GPUs; A100: Kokolis et al. 2025), "
             "or a preset, or a given MTBF (the cluster guide, “GPU Clusters for LLM "
             "Training: A Builder’s Guide”, 2026, reports 4.7 days).")
    fields = ("model", "gpu", "gpus", "checkpoint_mode", "shared_storage_gb_per_s", "local_write_gb_per_s",
              "failure_rate", "failures_per_1000_gpu_days", "mtbf_h", "restart_s",
              "checkpoint_interval_s", "data_stall", "data_tier_read_gb_per_s",
              "data_read_amplification", "data_stall_share")
    sliders = ("data_stall_share",)

    @staticmethod
    def _rate(gb_per_s: float) -> str:
        """A data rate in the unit that reads best (GB = 1e9 bytes)."""
        if gb_per_s >= 0.1:
            return f"{gb_per_s:,.2f} GB/s"
        if gb_per_s >= 1e-4:
            return f"{gb_per_s * 1e3:,.2f} MB/s"
        return f"{gb_per_s * 1e6:,.2f} kB/s"

    def _storage(self, res) -> dict:
        from ..review.series import storage_figures
        return storage_figures(res)

    def headline(self, res):
        from ..review.series import notice_checks
        f, r, s = self._storage(res), res.reliability, res.scenario
        mode = s.checkpoint_mode
        stalls = {"sync": f"sync: {f['sync_stall_s']:,.1f} s",
                  "async": f"async local: {f['async_stall_s']:,.2f} s"}
        other = "async" if mode == "sync" else "sync"
        tau, up = f["interval_s"], f["upload_s"]
        how = "set" if s.checkpoint_interval_s > 0 else "Daly"
        shown = f"{tau:,.1f} s = {tau / 60:,.1f} min"
        if mode == "sync":
            interval = f"{shown} ({how}, sync)"
        elif f["durable_interval_s"] > tau:       # set below the upload
            interval = (f"{tau:,.1f} s set (async): snapshots every "
                        f"{f['durable_interval_s']:,.1f} s, never faster than the upload")
        elif how == "Daly" and up > r.daly_interval_s:
            interval = f"{shown} (async: Daly's {r.daly_interval_s:,.0f} s raised to the upload)"
        else:
            interval = f"{shown} ({how}, async; not shorter than the {up:,.1f} s upload)"
        warm = f["tiers"]["warm"]
        burst = ("sync stall under 10 s" if mode == "sync" else "upload within the interval")
        notice = notice_checks(res)
        local = notice[notice["target"] == "local NVMe"]
        fits = " / ".join(f"{c} {n:,.0f} s: {'yes' if ok else 'no'} ({w:,.1f} s)"
                          for c, n, ok, w in zip(local["cloud"], local["notice_s"], local["fits"],
                                                 local["write_s"]))
        out = {"size": ("Checkpoint", f"{f['checkpoint_gb']:,.0f} GB "
                                      f"({f['checkpoint_bytes_per_param']:.0f} bytes/param)", None),
               "stall": ("Checkpoint stall (chosen mode first)",
                         f"{stalls[mode]} ({stalls[other]})", None),
               "upload": ("Async upload (background)", f"{f['upload_s']:,.1f} s", None),
               "interval": ("Chosen interval", interval, None),
               "goodput": ("Goodput (chosen mode)", f"{f['goodput']:.2%} ({mode})", None),
               "mtbf": ("Job MTBF", f"{r.job_mtbf_h:,.1f} h ({r.failures_per_1000_gpu_days:.3g} "
                                    f"failures per 1000 GPU-days, {r.failure_source})", None),
               "read": ("Data read rate",
                        f"{self._rate(f['read_gb_per_s'])} total, "
                        f"{self._rate(f['read_gb_per_s_per_node'])} per node", None),
               "shared": ("Shared tier: burst needed / offered",
                          f"{warm['write_burst_gb_per_s']:,.3g} / "
                          f"{warm['offered_write_gb_per_s']:,.3g} GB/s: "
                          f"{'meets it' if warm['meets_burst'] else 'does NOT meet it'} ({burst})",
                          None),
               "notice": ("Local write within a spot notice", fits, None)}
        if res.economics is not None:
            out["useful"] = ("Goodput x (1 - data stalls)", f"{res.economics.useful_share:.2%}", None)
        return out

    def note_lines(self, res):
        from ..review.series import guide_storage_claims, notice_checks
        f, c = self._storage(res), guide_storage_claims(res)
        node_gb = float(notice_checks(res)["node_gb"].iloc[0])
        s = res.scenario
        lo, hi = c["guide_hours"]
        b60, b30 = c["shared_gb_per_s_for_guide_stall"][::-1]
        lines = [f"The cluster guide: \"500 checkpoints x 30-60 s = 5-8 h\": the arithmetic gives "
                 f"{lo:.1f}-{hi:.1f} h (5-8 h is {c['guide_stall_for_hours_s'][0]:.0f}-"
                 f"{c['guide_stall_for_hours_s'][1]:.0f} s each). A 30-60 s sync stall of this "
                 f"{f['checkpoint_gb']:,.0f} GB checkpoint needs {b60:,.1f}-{b30:,.1f} GB/s of "
                 f"shared write; here it stalls {f['sync_stall_s']:,.1f} s at "
                 f"{res.reliability.storage_gb_per_s:,.3g} GB/s, so 500 sync checkpoints would cost "
                 f"{c['run_hours_for_500']:,.1f} h."]
        if "full_gb" in c:
            n5, n3 = c["nodes_for_guide"]
            shard = (f"sharded over {n5:,}-{n3:,} nodes at this scenario's "
                     f"{s.local_write_gb_per_s:,.3g} GB/s per node" if n5 and n3 else
                     "sharded over many nodes")
            w_lo, w_hi = c["weights_gb_per_s_for_guide"]
            o_lo, o_hi = c["one_node_gb_per_s_for_guide"]
            lines.append(f"The cluster guide: \"3-5 s local write of a 70B checkpoint\": the full "
                         f"{c['full_gb']:,.0f} GB state ({c['model']}, "
                         f"{c['full_bytes_per_param']:.0f} bytes/param) on one "
                         f"node would need {o_lo:,.0f}-{o_hi:,.0f} GB/s. It holds only for the "
                         f"bf16 weights ({c['weights_gb']:,.0f} GB: {w_lo:,.1f}-{w_hi:,.1f} GB/s) "
                         f"or for the full state {shard}. This run writes "
                         f"{node_gb:,.1f} GB per node in "
                         f"{f['async_stall_s']:,.2f} s on {f['nodes']:,} nodes.")
        return lines + [w for w in res.warnings if "failure" in w or "checkpoint" in w]

    figures_from = (("goodput", plots.goodput_curve), ("tiers", plots.storage_tiers_table),
                    ("notice", plots.notice_table))
