"""Readers of DCGM's two text outputs: dcgm-exporter's Prometheus text (``curl
host:9400/metrics``) and ``dcgmi dmon -e <field ids>``; :func:`read` tells them apart.

dcgm-exporter: each sample line is ``DCGM_FI_<FIELD>{gpu="0",UUID="...",GPU_I_ID="3",...} <value>``; ``#``
lines are help and type. Profiling gauges (``DCGM_FI_PROF_SM_ACTIVE``,
``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``, ``DCGM_FI_PROF_DRAM_ACTIVE``, ...) are ratios in [0, 1].
DCGM marks a value it could not read with a blank sentinel: 0x7ffffff0 (int32),
0x7ffffffffffffff0 (int64) or 2**47 (fp64), plus 1 not found, 2 not supported, 3 not
permitted; those are kept as "blank", never as a number.

``dcgmi dmon``: a header ``# Entity  GRACT  TENSO ...`` (the fields' short names), an ``Id``
line, then one row per entity and sample: ``GPU 0  0.969  0.928``, ``GPU-I 1 ...`` for a
MIG instance; ``N/A`` where a field could not be read. Short names are read as the field
names dcgm-exporter uses (:data:`DMON_FIELDS`), so both outputs meet the same findings.

References
----------
1. NVIDIA DCGM API reference, "Enums and Macros" (DCGM_INT32_BLANK, DCGM_INT64_BLANK,
   DCGM_FP64_BLANK and their NOT_FOUND / NOT_SUPPORTED / NOT_PERMISSIONED offsets).
2. Prometheus exposition format (text): ``metric_name{label="value",...} value``.
3. NVIDIA DCGM User Guide, "Feature Overview", Profiling Metrics: field ids 1001-1012, their
   ``dcgmi dmon`` short names and sample outputs; ``dcgmi dmon --list`` prints the mapping.
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

#: ``dcgmi dmon`` short column names of the profiling fields [3] -> the DCGM field names
#: dcgm-exporter prints (ids 1001-1012); other columns keep their short name
DMON_FIELDS = {"GRACT": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "SMACT": "DCGM_FI_PROF_SM_ACTIVE",
               "SMOCC": "DCGM_FI_PROF_SM_OCCUPANCY", "TENSO": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
               "DRAMA": "DCGM_FI_PROF_DRAM_ACTIVE", "FP64A": "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
               "FP32A": "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "FP16A": "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
               "PCITX": "DCGM_FI_PROF_PCIE_TX_BYTES", "PCIRX": "DCGM_FI_PROF_PCIE_RX_BYTES",
               "NVLTX": "DCGM_FI_PROF_NVLINK_TX_BYTES", "NVLRX": "DCGM_FI_PROF_NVLINK_RX_BYTES"}
#: entity kinds a ``dcgmi dmon`` row starts with (GPU, MIG GPU instance, compute instance,
#: NVSwitch, NVLink, CPU, CPU core)
_DMON_ENTITY = re.compile(r"^(GPU|GPU-I|GPU-CI|Switch|Link|CPU|Core)\s+(\d{1,6})\s+(.*)$")
_DMON_BLANK = {"N/A", "NA", "-"}
#: a shell prompt or a command pasted with the output (``[root@host dir]# dcgmi dmon ...``,
#: ``user@host:~$ curl ...``, ``$ dcgmi ...``): skipped with a note
_PROMPT = re.compile(r"^(?:\[[^\]]*\][#$]|\S+@\S+?[:\s][^#$]*[#$]|[#$>](?=\s|$))\s*(.*)$")
_COMMAND = re.compile(r"^(?:sudo\s+)?(?:dcgmi|curl|wget|kubectl|nv-hostengine)\b")
#: the fields that are ratios in [0, 1] (DCGM field documentation, ids 1001-1008): a value
#: outside is not a reading of them (a percentage pasted, or another field)
RATIO_FIELDS = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
                "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
                "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
                "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE",
                "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "DCGM_FI_PROF_PIPE_INT_ACTIVE")


def _skipped(s: str) -> bool:
    """A prompt or command line, not output."""
    m = _PROMPT.match(s)
    return bool(m and not s.startswith("# Entity") and not s.startswith("#Entity")
                and (not m.group(1) or _COMMAND.match(m.group(1)))) or bool(_COMMAND.match(s))


def _in_range(name: str, x: float, lineno: int, gpu: str) -> None:
    if name in RATIO_FIELDS and x > 1.0:
        raise v.InputError(PARAM, f"line {lineno}: {name} = {x:g} on {gpu or 'the GPU'}: this "
                                  "gauge is a ratio in [0, 1] (a share of time), not a "
                                  "percentage; expected dcgmi dmon or dcgm-exporter output")

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
    notes: tuple = ()       #: lines skipped (prompts, commands)


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


def _is_dmon(text: str) -> bool:
    """True when the first non-blank line is ``dcgmi dmon``'s ``# Entity ...`` header."""
    for _, line in _t.lines(text):
        s = line.strip()
        if s and not _skipped(s):
            return s.startswith("#") and s[1:].split()[:1] == ["Entity"]
    return False


def read(text) -> DcgmSamples:
    """Read DCGM text: ``dcgmi dmon`` output (:func:`read_dmon`) or dcgm-exporter's
    Prometheus text (:func:`read_exporter`), told apart by the first line.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    DcgmSamples
    """
    text = _t.as_text(text, PARAM)
    return read_dmon(text) if _is_dmon(text) else read_exporter(text)


def read_dmon(text) -> DcgmSamples:
    """Read ``dcgmi dmon -e <field ids>`` output: one sample per entity row and column.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    DcgmSamples
        ``metric`` is the dcgm-exporter field name for a profiling column
        (:data:`DMON_FIELDS`), else the column's short name; ``gpu`` is ``"0"`` for GPU 0
        and ``"GPU-I 1"`` (the entity) for other kinds; ``N/A`` is a blank.
    """
    text = _t.as_text(text, PARAM)
    names, rows, skipped = None, [], []
    for lineno, line in _t.lines(text):
        s = line.strip()
        if not s or s.upper() == "ID":
            continue
        if _skipped(s):
            skipped.append(lineno)
            continue
        if s.startswith("#"):
            head = s[1:].split()
            if head[:1] != ["Entity"] or len(head) < 2:
                raise v.InputError(PARAM, f"line {lineno}: expected the header '# Entity "
                                          f"<field> ...', got {_t.short(s)}")
            names = [DMON_FIELDS.get(h, h[:40]) for h in head[1:]]
            continue
        m = _DMON_ENTITY.match(s)
        if names is None or not m:
            raise v.InputError(PARAM, f"line {lineno}: expected a row 'GPU <id> <value> ...' "
                                      f"after a '# Entity' header, got {_t.short(s)}")
        kind, ent, vals = m.group(1), m.group(2), m.group(3).split()
        if len(vals) != len(names):
            raise v.InputError(PARAM, f"line {lineno}: {len(vals)} value(s) for the "
                                      f"{len(names)} column(s) of the header")
        gpu = ent if kind == "GPU" else f"{kind} {ent}"
        for name, tok in zip(names, vals):
            blank = tok in _DMON_BLANK
            number = None if blank else _t.nonnegative_number(tok)
            if not blank and number is None:
                raise v.InputError(PARAM, f"line {lineno}: expected a non-negative number or "
                                          f"N/A, got {tok[:30]!r}")
            x = float("nan") if number is None else number
            if not (blank or is_blank(x)):
                _in_range(name, x, lineno, f"{kind} {ent}")
            rows.append((name, gpu, x, blank or is_blank(x)))
        if len(rows) > MAX_SAMPLES:
            raise v.InputError(PARAM, f"line {lineno}: more than {MAX_SAMPLES:,} samples")
    if not rows:
        raise v.InputError(PARAM, "no DCGM sample found: expected 'dcgmi dmon' rows "
                                  "('GPU 0  0.969 ...') under a '# Entity ...' header")
    return _samples(rows, model=None, notes=_skip_note(skipped))


def _skip_note(skipped) -> tuple:
    if not skipped:
        return ()
    return (f"{len(skipped)} prompt or command line(s) skipped (line "
            + ", ".join(str(x) for x in skipped[:5]) + ("..." if len(skipped) > 5 else "") + ")",)


def _samples(rows, model, notes=()) -> DcgmSamples:
    """(metric, gpu, value, blank) rows as DcgmSamples; a blank's value is NaN."""
    metric, gpu, value, blank = (np.array(c) for c in zip(*rows))
    value, blank = value.astype(float), blank.astype(bool)
    return DcgmSamples(metric=metric.astype(str), gpu=gpu.astype(str),
                       value=np.where(blank, np.nan, value), blank=blank, model=model,
                       notes=tuple(notes))


def read_exporter(text) -> DcgmSamples:
    """Read dcgm-exporter's Prometheus text.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    DcgmSamples
    """
    text = _t.as_text(text, PARAM)
    rows, models, skipped = [], [], []
    for lineno, line in _t.lines(text):
        s = line.strip()
        if not s:
            continue
        if _skipped(s):
            skipped.append(lineno)
            continue
        if s.startswith("#"):
            continue
        if not s.startswith("DCGM_"):
            raise v.InputError(PARAM, f"line {lineno}: expected a DCGM_... sample line, got "
                                      f"{_t.short(s)}; the formats read: 'dcgmi dmon' output "
                                      "(a '# Entity ...' header, then 'GPU 0 ...' rows) or "
                                      "dcgm-exporter's /metrics text")
        m = _LINE.match(s)
        if not m:
            raise v.InputError(PARAM, f"line {lineno}: expected 'DCGM_NAME{{labels}} value' in "
                                      f"{_t.short(s)}")
        labels = _labels(m.group(2) or "", lineno, s)
        tok = m.group(3)
        # integers compared exactly: DCGM's int64 blanks sit just below 2**63, where floats
        # are 2048 apart
        exact = int(tok) if tok.isdigit() and len(tok) <= 20 else None
        x = _t.nonnegative_number(tok)
        if x is None:
            raise v.InputError(PARAM, f"line {lineno}: expected a non-negative number, got "
                                      f"{m.group(3)[:30]!r}")
        gpu = labels.get("gpu", "")
        if "GPU_I_ID" in labels:
            gpu += "/" + labels["GPU_I_ID"]
        if "modelName" in labels:
            models.append(labels["modelName"])
        blank = is_blank(exact if exact is not None else x)
        if not blank:
            _in_range(m.group(1), x, lineno, gpu)
        rows.append((m.group(1), gpu, x, blank))
        if len(rows) > MAX_SAMPLES:
            raise v.InputError(PARAM, f"line {lineno}: more than {MAX_SAMPLES:,} samples")
    if not rows:
        raise v.InputError(PARAM, "no DCGM sample found: expected dcgm-exporter /metrics text "
                                  "('DCGM_FI_...{gpu=\"0\",...} value')")
    return _samples(rows, model=max(set(models), key=models.count) if models else None,
                    notes=_skip_note(skipped))


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
