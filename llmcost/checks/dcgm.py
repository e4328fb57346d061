"""Reader of dcgm-exporter's Prometheus text (``curl host:9400/metrics``).

Each sample line is ``DCGM_FI_<FIELD>{gpu="0",UUID="...",GPU_I_ID="3",...} <value>``; ``#``
lines are help and type. Profiling gauges (``DCGM_FI_PROF_SM_ACTIVE``,
``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``, ``DCGM_FI_PROF_DRAM_ACTIVE``, ...) are ratios in [0, 1].
DCGM marks a value it could not read with a blank sentinel: 0x7ffffff0 (int32),
0x7ffffffffffffff0 (int64) or 2**47 (fp64), plus 1 not found, 2 not supported, 3 not
permitted; those are kept as "blank", never as a number.

References
----------
1. NVIDIA DCGM API reference, "Enums and Macros" (DCGM_INT32_BLANK, DCGM_INT64_BLANK,
   DCGM_FP64_BLANK and their NOT_FOUND / NOT_SUPPORTED / NOT_PERMISSIONED offsets).
2. Prometheus exposition format (text): ``metric_name{label="value",...} value``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from . import text as _t

PARAM = "dcgm"
MAX_SAMPLES = 1_000_000
INT32_BLANK = 0x7FFFFFF0
INT64_BLANK = 0x7FFFFFFFFFFFFFF0
FP64_BLANK = 2.0 ** 47
#: the profiling ratios a training check reads
PROFILING = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
             "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE")

_LINE = re.compile(r"^(DCGM_[A-Z0-9_]+)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass(frozen=True)
class DcgmSamples:
    """One scrape: a row per sample."""

    metric: np.ndarray      #: field name ("DCGM_FI_PROF_SM_ACTIVE", ...)
    gpu: np.ndarray         #: the ``gpu`` label, with ``/GPU_I_ID`` for a MIG instance
    value: np.ndarray       #: the value (NaN for a DCGM blank)
    blank: np.ndarray       #: True where DCGM reported a blank sentinel
    model: str | None       #: the ``modelName`` label, if any


def is_blank(x: float) -> bool:
    """A DCGM blank sentinel ([1]): int32, int64 or fp64 blank plus 0-15."""
    return any(b <= x < b + 16 for b in (INT32_BLANK, INT64_BLANK, FP64_BLANK))


def _labels(body: str, lineno: int, line: str) -> dict:
    out, pos = {}, 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if not m or m.end() == pos:
            raise v.InputError(PARAM, f"line {lineno}: expected labels name=\"value\", ... in "
                                      f"{_t.short(line)}")
        out[m.group(1)] = m.group(2)[:200]
        pos = m.end()
    return out


def read(text) -> DcgmSamples:
    """Read dcgm-exporter's Prometheus text.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    DcgmSamples
    """
    text = _t.as_text(text, PARAM)
    rows, models = [], []
    for lineno, line in _t.lines(text):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not s.startswith("DCGM_"):
            raise v.InputError(PARAM, f"line {lineno}: expected a DCGM_... sample line, got "
                                      f"{_t.short(s)}")
        m = _LINE.match(s)
        if not m:
            raise v.InputError(PARAM, f"line {lineno}: expected 'DCGM_NAME{{labels}} value' in "
                                      f"{_t.short(s)}")
        labels = _labels(m.group(2) or "", lineno, s)
        tok = m.group(3)
        # integers compared exactly: DCGM's int64 blanks sit just below 2**63, where floats
        # are 2048 apart
        exact = int(tok) if tok.isdigit() and len(tok) <= 20 else None
        try:
            x = float(tok)
        except ValueError:
            x = float("nan")
        if not np.isfinite(x) or x < 0:
            raise v.InputError(PARAM, f"line {lineno}: expected a non-negative number, got "
                                      f"{m.group(3)[:30]!r}")
        gpu = labels.get("gpu", "")
        if "GPU_I_ID" in labels:
            gpu += "/" + labels["GPU_I_ID"]
        if "modelName" in labels:
            models.append(labels["modelName"])
        rows.append((m.group(1), gpu, x, is_blank(exact if exact is not None else x)))
        if len(rows) > MAX_SAMPLES:
            raise v.InputError(PARAM, f"line {lineno}: more than {MAX_SAMPLES:,} samples")
    if not rows:
        raise v.InputError(PARAM, "no DCGM sample found: expected dcgm-exporter /metrics text "
                                  "('DCGM_FI_...{gpu=\"0\",...} value')")
    metric, gpu, value, blank = (np.array(c) for c in zip(*rows))
    value, blank = value.astype(float), blank.astype(bool)
    return DcgmSamples(metric=metric.astype(str), gpu=gpu.astype(str),
                       value=np.where(blank, np.nan, value), blank=blank,
                       model=max(set(models), key=models.count) if models else None)


def summary(d: DcgmSamples) -> dict:
    """Per metric: samples, GPUs, blanks, and mean/min/max of the readable values."""
    out = {}
    for name in dict.fromkeys(d.metric.tolist()):
        m = d.metric == name
        x = d.value[m & ~d.blank]
        out[name] = {"samples": int(m.sum()), "gpus": len(set(d.gpu[m].tolist())),
                     "blank": int(d.blank[m].sum()),
                     "mean": float(x.mean()) if len(x) else None,
                     "min": float(x.min()) if len(x) else None,
                     "max": float(x.max()) if len(x) else None}
    return out
