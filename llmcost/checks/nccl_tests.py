"""Reader of nccl-tests output: the text table every ``*_perf`` binary prints and its JSON.

Text (nccl-tests ``src/common.cu``, ``writeResultHeader`` / ``writeBenchmarkLineBody``): one
row per message size, ``size count type redop root time algbw busbw #wrong`` out of place
then ``time algbw busbw #wrong`` in place (older versions have no ``root`` column, the
oldest no ``redop``); ``#  Rank N Group G Pid P on HOST device D [BUS] NAME`` lines name the
ranks; ``# Collective test starting: all_reduce_perf`` names the test (2.14 and later).
Older versions print ``error`` (the largest numerical error, ``0e+00``, ``1e-07``) where later
ones print ``#wrong`` (a count of wrong elements): the header's word, or a value in
exponent or decimal notation, tells them apart.

Pastes as people make them: the header or the Rank lines left out, one Rank line of many,
several runs in one file (a new ``Collective test starting`` line, a ``*_perf`` command
after rows, or the message size falling back starts a run). A table that is not
nccl-tests' (algbw not the size over the time, a count that does not divide the size) is
refused rather than read as numbers.
Launcher prefixes are removed: Slurm's ``srun --label`` (``0: ``) and Open MPI's
``--tag-output`` (``[0]``, ``[1,0]<stdout>:``), which can also appear inside a row.

JSON: the ``-J FILE.json`` output of nccl-tests 2.17 (``src/util.cu``: ``results`` records
with ``out_of_place``/``in_place`` objects of ``time``, ``alg_bw``, ``bus_bw``, ``nwrong``)
and the earlier ``--json`` of nccl-tests PR 318 (``benchmark``: ``{size: {oop_busbw, ...}}``).

References
----------
1. NVIDIA, nccl-tests, doc/PERFORMANCE.md (algorithm and bus bandwidth; busbw = algbw x
   2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for
   send/receive, broadcast and reduce).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v
from . import text as _t

PARAM = "nccl_tests"
#: the collectives read, by the binary's name without ``_perf``
OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast",
       "reduce", "gather", "scatter", "hypercube")
#: rows kept from one file: 64 sizes x 10 collectives x in/out of place is far below
MAX_ROWS = 20_000
#: largest message size accepted [bytes]: 2**50 (nccl-tests sizes are size_t, 1 PiB is
#: beyond any GPU memory)
MAX_SIZE_BYTES = 2 ** 50
#: largest bandwidth accepted [GB/s]: 1e6 (a thousand times NVLink 5)
MAX_GB_PER_S = 1e6

_PREFIX = re.compile(r"^\s*(?:\d+:\s|\[\d+(?:,\d+)*\](?:<std(?:out|err)>:)?)")
_TAG = re.compile(r"\[\d+(?:,\d+)*\](?:<std(?:out|err)>:)?")
_START = re.compile(r"Collective test starting:\s*(\w+?)_perf\b")
_BINARY = re.compile(r"\b(" + "|".join(OPS) + r")_perf\b")
_FILE_OP = re.compile(r"(?:^|[^a-z])(" + "|".join(OPS) + r")(?:[^a-z]|$)")
_RANK = re.compile(r"^#\s*Rank\s+(\d{1,9})\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+"
                   r"device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$")
_INT = re.compile(r"^\d+$")
#: ``NCCL_IB_HCA=mlx5_0,mlx5_1`` (an exclusion list ``^...`` names no NIC in use)
_IB_HCA = re.compile(r"NCCL_IB_HCA\s*=\s*([=]?[A-Za-z0-9_:,\-]+)")
#: ``NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ... ; OOB eth0:...``
_NET_IB = re.compile(r"NET/IB\s*:\s*Using\s+((?:\[\d+\]\S+\s*)+)")
#: bytes per element of nccl-tests' type names
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8,
              "uint64": 8, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4,
              "double": 8, "float64": 8, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
#: the formats a file is read as, named in the refusal of anything else
FORMATS = ("nccl-tests text (rows 'size count type redop root time algbw busbw #wrong "
           "...', older 'size count type time algbw busbw error ...') or its -J JSON")


@dataclass(frozen=True)
class NcclTests:
    """One nccl-tests output: a row per collective and message size (out-of-place figures;
    in-place bus bandwidth beside them). GB/s are 1e9 bytes/s, as nccl-tests prints them."""

    op: np.ndarray                      #: collective per row ("all_reduce", ...; "" unknown)
    size_bytes: np.ndarray              #: message size [bytes]
    time_us: np.ndarray                 #: out-of-place time [us]
    algbw_gb_per_s: np.ndarray          #: out-of-place algorithm bandwidth [GB/s]
    busbw_gb_per_s: np.ndarray          #: out-of-place bus bandwidth [GB/s]
    busbw_in_place_gb_per_s: np.ndarray  #: in-place bus bandwidth [GB/s] (NaN if absent)
    wrong: np.ndarray                   #: wrong elements out of place (NaN: not checked)
    redop: np.ndarray                   #: reduction per row ("sum", "none", "" absent)
    ranks: int | None                   #: ranks of the test (Rank lines, else busbw/algbw)
    ranks_from: str                     #: how ``ranks`` was found
    op_from: str = ""                   #: where the collective's name came from
    hosts: tuple = ()                   #: host names of the Rank lines
    device: str | None = None           #: the GPU name the Rank lines print
    notes: tuple = field(default=())
    #: run per row (0, 1, ...): a file can hold several tests
    run: np.ndarray | None = None
    #: largest numerical error per row where the output has older nccl-tests' ``error``
    #: column instead of ``#wrong`` (NaN elsewhere)
    max_error: np.ndarray | None = None
    #: the Rank lines cover every rank (their hosts give the placement)
    ranks_complete: bool = False
    #: NICs per node named by NCCL_IB_HCA or NCCL's NET/IB line (None: not shown)
    nics_per_node: int | None = None

    @property
    def nodes(self) -> int | None:
        """Nodes from the Rank lines' hosts, when the Rank lines cover every rank."""
        return (len(self.hosts) or None) if self.ranks_complete else None

    def runs(self):
        """(run, op, row mask) per run and collective, in the file's order."""
        run = self.run if self.run is not None else np.zeros(len(self.op), int)
        for key in dict.fromkeys(zip(run.tolist(), self.op.tolist())):
            yield key[0], key[1], (run == key[0]) & (self.op == key[1])


def _number(tok: str, lineno: int, what: str, line: str, allow_na=False) -> float:
    if allow_na and tok == "N/A":
        return float("nan")
    x = _t.nonnegative_number(tok)
    if x is None:
        raise v.InputError(PARAM, f"line {lineno}: expected a non-negative number "
                                  f"for {what}, got {tok[:30]!r} in {_t.short(line)}")
    return x


def _is_error_value(tok: str) -> bool:
    """An older ``error`` value (``0e+00``, ``1e-07``, ``0.0002``), not a ``#wrong`` count."""
    return tok not in ("N/A",) and not tok.isdigit() and _is_num(tok)


def _row(tokens: list, lineno: int, line: str, error_column: bool = False):
    """(size, redop, time, algbw, busbw, wrong, busbw in place, max error, count, type) of
    one table row; ``error_column``: the header says ``error`` (older nccl-tests)."""
    n = len(tokens)
    # 13: size count type redop root | 12: no root | 11: no redop (nccl-tests before 2.0);
    # in-place columns may be missing (trace replay prints out-of-place blank)
    if not _is_num(tokens[3]):
        head = 5 if n in (9, 13) else 4
    else:
        head = 3
    body = tokens[head:]
    if len(body) not in (4, 8):
        raise v.InputError(PARAM, f"line {lineno}: expected a result row 'size count "
                                  "type redop root time algbw busbw #wrong time algbw busbw "
                                  f"#wrong', got {n} fields in {_t.short(line)}")
    size = _number(tokens[0], lineno, "size (B)", line)
    if size > MAX_SIZE_BYTES:
        raise v.InputError(PARAM, f"line {lineno}: size {tokens[0][:30]} bytes is "
                                  f"above {MAX_SIZE_BYTES:,} (1 PiB)")
    t = _number(body[0], lineno, "time (us)", line)
    alg = _number(body[1], lineno, "algbw (GB/s)", line)
    bus = _number(body[2], lineno, "busbw (GB/s)", line)
    as_error = error_column or _is_error_value(body[3])
    wrong = _number(body[3], lineno, "error" if as_error else "#wrong", line, allow_na=True)
    max_err = wrong if as_error else float("nan")
    if as_error:
        wrong = float("nan")
    bus_ip = _number(body[6], lineno, "in-place busbw (GB/s)", line) if len(body) == 8 \
        else float("nan")
    for x, what in ((alg, "algbw"), (bus, "busbw"), (bus_ip, "in-place busbw")):
        if x > MAX_GB_PER_S:
            raise v.InputError(PARAM, f"line {lineno}: {what} {x:g} GB/s is above "
                                      f"{MAX_GB_PER_S:g}")
    redop = tokens[3] if head >= 4 else ""
    return (size, redop, t, alg, bus, wrong, bus_ip, max_err,
            _number(tokens[1], lineno, "count (elements)", line), tokens[2].lower())


def _consistent(size, count, typ, t, alg, lineno, line):
    """Refuse a row nccl-tests cannot have printed: algbw is size / time (printed to 2
    decimals, the time to 4 significant digits), and count x the type's bytes divides the
    size (all-gather and all-to-all print the per-rank count)."""
    b = TYPE_BYTES.get(typ)
    if t > 0 and alg >= 0.05:
        want = size / t / 1e3
        # older versions printed the size of all of a process's GPUs (-g) and the algbw of
        # one: count x the type's bytes / time
        alt = count * b / t / 1e3 if b else want
        if min(abs(alg - want) - 0.02 * want, abs(alg - alt) - 0.02 * alt) > 0.011:
            raise v.InputError(PARAM, f"line {lineno}: algbw {alg:g} GB/s is not size / time "
                                      f"= {size:g} B / {t:g} us = {want:.3g} GB/s: not a "
                                      f"nccl-tests row ({_t.short(line)}); expected {FORMATS}")
    if b and count > 0 and size % (count * b) != 0:
        raise v.InputError(PARAM, f"line {lineno}: size {size:g} B is not a multiple of count "
                                  f"{count:g} x {b} B ({typ}): not a nccl-tests row "
                                  f"({_t.short(line)}); expected {FORMATS}")


def _is_num(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _op_of_name(name: str | None) -> str:
    m = _BINARY.search(name or "")
    return m.group(1) if m else ""


def _op_of_file(name: str | None) -> str:
    """The collective a file's name carries (``all_gather_perf.log``, ``nccl_alltoall.json``)."""
    m = _FILE_OP.search(re.split(r"[/\\]", name or "")[-1])
    return m.group(1) if m else ""


def _nics(s: str) -> int | None:
    """NICs an NCCL_IB_HCA setting or a NET/IB line names (None: neither in the line)."""
    m = _IB_HCA.search(s)
    if m and not m.group(1).startswith("^"):
        names = {x.split(":")[0] for x in m.group(1).lstrip("=").split(",") if x}
        return len(names) or None
    m = _NET_IB.search(s)
    if m:
        return len(re.findall(r"\[\d+\]", m.group(1))) or None
    return None


def read_text(text, name: str | None = None, op: str | None = None) -> NcclTests:
    """Read nccl-tests text output.

    Parameters
    ----------
    text : str or bytes
        The output (any launcher prefixes, NCCL INFO lines and other text interleaved).
    name : str, optional
        The file's name: ``all_gather_perf.txt`` names the collective when the text does not.
    op : str, optional
        The collective, overriding what the text says (one of :data:`OPS`).

    Returns
    -------
    NcclTests
    """
    text = _t.as_text(text, PARAM)
    if op is not None:
        op = v.choice("nccl_op", op, OPS)
    current = op or _op_of_file(name)
    op_from = "given" if op else ("the file name" if current else "")
    rows, ranks, hosts, devices, rank_host = [], {}, [], [], {}
    run, run_rows, error_column, nics, notes = 0, 0, False, None, []
    last_size = -1.0
    for lineno, raw in _t.lines(text):
        line = _PREFIX.sub("", raw, count=1)
        s = line.strip()
        if not s:
            continue
        if "NCCL_IB_HCA" in s or "NET/IB" in s:
            nics = _nics(s) or nics
        if s.startswith("#"):
            m = _START.search(s)
            if m:
                if run_rows:
                    run, run_rows, last_size = run + 1, 0, -1.0
                if op is None and m.group(1) in OPS:
                    current, op_from = m.group(1), "the output's test name"
            m = _RANK.match(s)
            if m:
                ranks[int(m.group(1))] = True
                rank_host[int(m.group(1))] = m.group(2)
                if m.group(2) not in hosts:
                    hosts.append(m.group(2))
                devices.append(m.group(3))
            words = s[1:].split()
            if "size" in words and ("busbw" in words or "algbw" in words):
                error_column = "error" in words and "#wrong" not in words
            continue
        b = _op_of_name(s)
        if b and not _INT.match(s.split()[0]):
            # a command echoed before a table names the binary; after rows it starts a run
            if run_rows:
                run, run_rows, last_size = run + 1, 0, -1.0
            if op is None:
                current, op_from = b, "the command in the output"
            continue
        tokens = _TAG.sub(" ", s).split()
        if not tokens or not _INT.match(tokens[0]) or len(tokens) < 5:
            continue
        if len(rows) >= MAX_ROWS:
            raise v.InputError(PARAM, f"line {lineno}: more than {MAX_ROWS:,} result "
                                      "rows")
        r = _row(tokens, lineno, s, error_column)
        _consistent(r[0], r[8], r[9], r[2], r[3], lineno, s)
        if r[0] < last_size:
            # the size falls back: a second test pasted after the first
            run, run_rows = run + 1, 0
        last_size = r[0]
        rows.append((current,) + r[:8] + (run,))
        run_rows += 1
    if not rows:
        raise v.InputError(PARAM, f"no result row found: expected {FORMATS}")
    used = sorted({r[-1] for r in rows})
    if len(used) > 1:
        notes.append(f"{len(used)} runs in the file, each checked on its own")
    rows = [r[:-1] + (used.index(r[-1]),) for r in rows]
    return _result(rows, sorted(ranks), hosts, devices, op_from, notes, nics, rank_host)


def _result(rows, rank_ids, hosts, devices, op_from, notes=(), nics=None,
            rank_host=None) -> NcclTests:
    cols = list(zip(*rows))
    redop = np.array(cols[2], dtype=object)
    ops = np.array(cols[0], dtype=object)
    alg = np.array(cols[4], dtype=float)
    bus = np.array(cols[5], dtype=float)
    max_err = np.array(cols[8], dtype=float) if len(cols) > 8 else np.full(len(alg), np.nan)
    run = np.array(cols[9], dtype=int) if len(cols) > 9 else np.zeros(len(alg), int)
    notes = list(notes)
    if not all(ops):
        guess = _infer_op(redop, alg, bus)
        ops = np.where(ops == "", guess, ops)
        op_from = op_from or "busbw/algbw and the reduction"
        notes.append(f"collective inferred as {guess} from busbw/algbw and the reduction "
                     "(the output does not name it)")
    # ranks: the larger of the highest Rank id + 1 (a paste may hold some Rank lines only)
    # and the count busbw/algbw implies
    last = ops == ops[-1]
    implied = infer_ranks(str(ops[-1]), alg[last], bus[last])
    by_lines = (max(rank_ids) + 1) if rank_ids else None
    if by_lines and implied and implied > by_lines:
        ranks, how = implied, "busbw/algbw at the largest size (more than the Rank lines show)"
    elif by_lines and (by_lines >= 2 or not implied):
        ranks, how = by_lines, "Rank lines"
    elif implied:
        ranks, how = implied, "busbw/algbw at the largest size"
    else:
        ranks, how = by_lines, ("Rank lines" if by_lines else "unknown")
    complete = bool(rank_ids) and ranks is not None and len(rank_ids) == ranks
    if rank_ids and not complete:
        notes.append(f"{len(rank_ids)} Rank line(s) of {ranks} ranks: the placement is not "
                     "read from them")
    if np.isfinite(max_err).any():
        notes.append("older nccl-tests 'error' column: the largest numerical error "
                     f"({np.nanmax(max_err):g}), not a count of wrong elements")
    # the device most ranks print; at a tie the first printed (a set would order by hash)
    device = max(dict.fromkeys(devices), key=devices.count) if devices else None
    return NcclTests(op=ops.astype(str), size_bytes=np.array(cols[1], dtype=float),
                     time_us=np.array(cols[3], dtype=float), algbw_gb_per_s=alg,
                     busbw_gb_per_s=bus, busbw_in_place_gb_per_s=np.array(cols[7], dtype=float),
                     wrong=np.array(cols[6], dtype=float), redop=redop.astype(str),
                     ranks=ranks, ranks_from=how, op_from=op_from, hosts=tuple(hosts),
                     device=device, notes=tuple(notes), run=run, max_error=max_err,
                     ranks_complete=complete, nics_per_node=nics)


def _ratio(alg, bus) -> float:
    """busbw/algbw at the row of largest algbw (the most printed digits)."""
    i = int(np.argmax(alg))
    return float(bus[i] / alg[i]) if alg[i] > 0 else float("nan")


def _infer_op(redop, alg, bus) -> str:
    r = _ratio(alg, bus)
    reduces = any(x not in ("none", "") for x in redop)
    if r > 1.0 + 1e-3:
        return "all_reduce"
    if r < 1.0 - 1e-3:
        # all-gather and all-to-all share the (n-1)/n factor; all-gather is the commoner test
        return "reduce_scatter" if reduces else "all_gather"
    return "sendrecv"


def infer_ranks(op: str, algbw, busbw) -> int | None:
    r"""Ranks of a test from its bus-to-algorithm bandwidth ratio r ([1]).

    .. math:: n = \frac{2}{2 - r}\ \text{(all-reduce)},\qquad n = \frac{1}{1 - r}
              \ \text{(all-gather, reduce-scatter, all-to-all)}

    Parameters
    ----------
    op : str
        Collective (:data:`OPS`).
    algbw, busbw : array
        Algorithm and bus bandwidth per row [GB/s]; the row of largest algbw is used.

    Returns
    -------
    ranks : int or None
        None when the factor is 1 (send/receive, broadcast) or the ratio is not usable.

    References
    ----------
    .. [1] nccl-tests doc/PERFORMANCE.md (bus bandwidth factors).
    """
    r = _ratio(np.asarray(algbw, float), np.asarray(busbw, float))
    if not np.isfinite(r):
        return None
    if op == "all_reduce" and 1.0 - 1e-3 <= r < 1.99:
        n = 2.0 / (2.0 - r)
    elif op in ("all_gather", "reduce_scatter", "alltoall") and 0.0 < r < 0.995:
        n = 1.0 / (1.0 - r)
    else:
        return None
    return int(round(n)) if round(n) >= 2 else None


def _num_field(obj, key, where):
    x = obj.get(key) if isinstance(obj, dict) else None
    if x is None or x == "N/A":
        return float("nan")
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not np.isfinite(x) or x < 0:
        raise v.InputError(PARAM, f"{where}: expected a non-negative number for "
                                  f"{key!r}, got {str(x)[:30]!r}")
    return float(x)


def read_json(text, name: str | None = None, op: str | None = None) -> NcclTests:
    """Read nccl-tests JSON output (``-J``, or PR 318's ``--json``); see the module docstring.

    Parameters
    ----------
    text, name, op
        As :func:`read_text`.
    """
    doc = _load_json(_t.as_text(text, PARAM))
    if op is not None:
        op = v.choice("nccl_op", op, OPS)
    current = op or _op_of_file(name)
    op_from = "given" if op else ("the file name" if current else "")
    rank_ids, hosts, devices = [], [], []
    if isinstance(doc.get("results"), list):                      # nccl-tests -J (2.17+)
        args = doc.get("args")
        if not current and isinstance(args, list) and args and isinstance(args[0], str):
            current = _op_of_name(args[0])
            op_from = "the command in the output" if current else ""
        rank_ids, hosts, devices = _json_devices(doc)
        rows = _results_rows(doc, current)
    elif isinstance(doc.get("benchmark"), list):                  # nccl-tests PR 318
        rows = _benchmark_rows(doc, current)
    else:
        raise v.InputError(PARAM, "expected nccl-tests JSON with a 'results' list "
                                  "(-J) or a 'benchmark' list")
    if not rows:
        raise v.InputError(PARAM, "the JSON holds no result")
    if len(rows) > MAX_ROWS:
        raise v.InputError(PARAM, f"more than {MAX_ROWS:,} results")
    rank_ids = [r for r in rank_ids if isinstance(r, int) and not isinstance(r, bool)]
    return _result(rows, sorted(set(rank_ids)), hosts, devices, op_from)


def _load_json(text: str) -> dict:
    """The JSON object the text holds from its first ``{``; input errors name the line."""
    start = text.find("{")
    if start < 0:
        raise v.InputError(PARAM, "no JSON object found: expected nccl-tests -J output")
    lead = text.count("\n", 0, start)
    try:
        doc = json.loads(text[start:], parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise v.InputError(PARAM, f"line {e.lineno + lead} column {e.colno}: not "
                                  f"valid JSON ({e.msg})") from None
    except (RecursionError, ValueError) as e:
        raise v.InputError(PARAM, f"not readable JSON ({str(e)[:80]})") from None
    if not isinstance(doc, dict):
        raise v.InputError(PARAM, f"expected a JSON object, got {type(doc).__name__}")
    return doc


def _json_devices(doc: dict) -> tuple[list, list, list]:
    """Rank ids, host names (first seen, each once) and device names of ``-J``'s devices."""
    rank_ids: list = []
    hosts: list = []
    devices: list = []
    for d in doc.get("devices") or []:
        if isinstance(d, dict):
            rank_ids.append(d.get("rank"))
            h = d.get("hostname")
            if isinstance(h, str) and h not in hosts:
                hosts.append(h[:100])
            if isinstance(d.get("device_info"), str):
                devices.append(d["device_info"][:100])
    return rank_ids, hosts, devices


def _results_rows(doc: dict, op: str | None) -> list:
    """Rows of ``-J``'s results list (nccl-tests 2.17+)."""
    rows = []
    for i, rec in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(rec, dict):
            raise v.InputError(PARAM, f"{where}: expected an object")
        oop, ip = rec.get("out_of_place") or {}, rec.get("in_place") or {}
        rows.append(_json_row(op, rec.get("size"), rec.get("redop"),
                              _num_field(oop, "time", where), _num_field(oop, "alg_bw", where),
                              _num_field(oop, "bus_bw", where), _num_field(oop, "nwrong", where),
                              _num_field(ip, "bus_bw", where), where))
    return rows


def _benchmark_rows(doc: dict, op: str | None) -> list:
    """Rows of PR 318's benchmark list (one object per block, keyed by size)."""
    rows = []
    for j, block in enumerate(doc["benchmark"]):
        if not isinstance(block, dict):
            raise v.InputError(PARAM, f"benchmark[{j}]: expected an object")
        for size, rec in block.items():
            where = f"benchmark[{j}][{size[:20]!r}]"
            if not isinstance(rec, dict):
                raise v.InputError(PARAM, f"{where}: expected an object")
            rows.append(_json_row(op, size, rec.get("redop"),
                                  _num_field(rec, "oop_time", where),
                                  _num_field(rec, "oop_algbw", where),
                                  _num_field(rec, "oop_busbw", where),
                                  _num_field(rec, "oop_error", where),
                                  _num_field(rec, "ip_busbw", where), where))
    return rows


def _refuse_constant(name):
    raise ValueError(f"{name} is not a number nccl-tests writes")


def _json_row(op, size, redop, t, alg, bus, wrong, bus_ip, where):
    try:
        s = float(size) if not isinstance(size, bool) else float("nan")
    except (TypeError, ValueError, OverflowError):
        s = float("nan")
    if not np.isfinite(s) or s < 0 or s > MAX_SIZE_BYTES or s != int(s):
        raise v.InputError(PARAM, f"{where}: expected a size in bytes (0 to 2**50), "
                                  f"got {str(size)[:30]!r}")
    if not np.isfinite(bus):
        raise v.InputError(PARAM, f"{where}: no out-of-place bus bandwidth")
    for x, what in ((alg, "algbw"), (bus, "busbw"), (bus_ip, "in-place busbw")):
        if x > MAX_GB_PER_S:
            raise v.InputError(PARAM, f"{where}: {what} {x:g} GB/s is above "
                                      f"{MAX_GB_PER_S:g}")
    return (op, s, redop if isinstance(redop, str) else "", t, alg, bus, wrong, bus_ip)


def read(text, name: str | None = None, op: str | None = None) -> NcclTests:
    """Text or JSON, whichever the content is (JSON when it starts with ``{``)."""
    text = _t.as_text(text, PARAM)
    return (read_json if text.lstrip().startswith("{") else read_text)(text, name, op)
