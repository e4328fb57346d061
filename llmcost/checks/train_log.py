"""Reader of training logs: Megatron-LM (also Megatron-Bridge, whose ``training_log`` is
Megatron-Core's) iteration lines, NeMo 2's Lightning step lines and torchtitan step lines.

Megatron-LM (``megatron/training/training.py``, ``training_log``)::

    [2024-04-06 03:02:12] iteration       71/     100 | consumed samples: 9088 |
    elapsed time per iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 |
    learning rate: ... | global batch size:   128 | lm loss: ... |

``elapsed time per iteration`` is the mean over the log interval; the timestamp is printed
by recent versions (``--log-timers-to-tensorboard`` not needed). The argument dump at start
(``  seq_length ........ 4096``) gives the sequence length and layout where the log has it.

NeMo 2 (``nemo/lightning``, ``train_step_timing`` in seconds per step)::

    Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 |
    global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 |
    train_step_timing in s: 0.03146

torchtitan (``torchtitan/components/metrics.py``)::

    [rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384
    memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%

``tps`` is tokens per second per GPU; the step time is the time between logged steps over
the steps between them.

NeMo 1.x (the NeMo-Megatron launcher's Lightning progress bar, ``train_step_timing`` in
seconds per step)::

    Epoch 0: :   3%|▎  | 9000/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss=nan.0,
    global_step=9e+3, consumed_samples=6.3e+5, train_step_timing in s=0.615, val_loss=7.040]

DeepSpeed (``deepspeed/utils/timer.py``, ThroughputTimer, every ``steps_per_print``;
samples/s of the global batch)::

    [2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48, ...
    [2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=34/global_step=34,
    RunningAvgSamplesPerSec=7.86, CurrSamplesPerSec=8.01, MemAllocated=59.65GB, ...

Hugging Face Trainer / Accelerate (``Trainer.train``'s speed metrics, printed as a dict and
saved as ``train_results.json``): ``train_runtime``, ``train_samples_per_second``,
``train_steps_per_second``: the mean step is 1 / steps per second.

The model, where the log prints it: Megatron's argument dump (``num_layers``,
``hidden_size``, ``num_attention_heads``, ``num_query_groups``, ``ffn_hidden_size``,
``padded_vocab_size``/``vocab_size``, ``seq_length``) as a config model; torchtitan's
``Building <name> <flavor> with ...`` as a catalog id (``llama3`` ``8B`` -> ``llama3-8b``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from .. import _validate as v
from . import text as _t

PARAM = "train_log"
#: logged steps kept (a line per step of a 1M-step run)
MAX_STEPS = 2_000_000

_NUM = r"([0-9][0-9.,]*(?:[eE][+-]?\d+)?)"
_MEG_ITER = re.compile(r"\biteration\s+(\d{1,12})\s*/\s*(\d{1,12})\b")
_MEG_ELAPSED = re.compile(r"elapsed time per iteration \(ms\):\s*(\S+)")
_MEG_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*(\S+)")
_MEG_GBS = re.compile(r"global batch size:\s*(\S+)")
_MEG_TIME = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?\]")
#: the Megatron argument names a log's configuration is read from, printed by Megatron-LM as
#: ``name ........ value`` and by NeMo 1.x and Megatron-Bridge as YAML keys
_LAYOUT_ARGS = ("seq_length", "global_batch_size", "micro_batch_size", "tensor_model_parallel_size",
                "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
                "num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "ffn_hidden_size")
_MEG_ARG = re.compile(r"^\s*(" + "|".join(_LAYOUT_ARGS + ("world_size", "padded_vocab_size", "vocab_size",
                                                         "max_position_embeddings"))
                      + r")\s*\.{3,}\s*(\d+)\s*$")
#: Megatron's ``swiglu .... True`` and ``group_query_attention .... True``
_MEG_FLAG = re.compile(r"^\s*(swiglu|group_query_attention)\s*\.{3,}\s*(True|False)\s*$")
#: NeMo 1.x prints its Hydra configuration at start as YAML (``    num_layers: 32``; under
#: srun each line after a ``0: `` rank prefix); Megatron-Bridge prints its non-default values
#: the same way (``  hidden_size: 4096  (Mcore default: 0)``)
_NEMO_CFG = re.compile(r"^(?:\d+:)?\s+(" + "|".join(_LAYOUT_ARGS + ("encoder_seq_length", "devices", "num_nodes",
                                                                     "activation"))
                       + r"):\s+'?([\w-]+)'?\s*(?:\(.*\))?\s*$")
#: NeMo's megatron models log the padded vocabulary
_NEMO_VOCAB = re.compile(r"Padded vocab_size:\s*(\d+)")
#: NeMo configuration keys -> Megatron's argument names
_NEMO_ARGS = {"encoder_seq_length": "seq_length"}
_NEMO1_TIME = re.compile(r"train_step_timing in s=\s*([0-9.eE+-]+)")
_NEMO1_STEP = re.compile(r"\bglobal_step=\s*([0-9.eE+]+)")
_NEMO1_BAR = re.compile(r"\|\s*(\d{1,12})/(?:\d+|\?)\s*\[")
_DS_TIMER = re.compile(r"(?:epoch=)?(\d{1,9})/(?:micro_step=\d+/global_step=)?(\d{1,12}),\s*"
                       r"(?:RunningAvg)?SamplesPerSec=([0-9.eE+-]+)"
                       r"(?:,\s*CurrSamplesPerSec=([0-9.eE+-]+))?")
_DS_TIME = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]")
_HF_KEY = re.compile(r"""['"](train_runtime|train_samples_per_second|train_steps_per_second|"""
                     r"""train_samples|epoch)['"]\s*:\s*([0-9.eE+-]+)""")
_TT_BUILD = re.compile(r"\bBuilding\s+([A-Za-z][\w.]*)\s+(\w+)\s+with\b")
_NEMO_TIME = re.compile(r"train_step_timing in s:\s*(\S+)")
_NEMO_STEP = re.compile(r"\bglobal_step:\s*(\d{1,12})\b")
_NEMO_GBS = re.compile(r"\bglobal_batch_size:\s*(\S+)")
_TT_STEP = re.compile(r"\bstep:\s*(\d{1,12})\s.*?\btps:\s*" + _NUM)
_TT_TFLOPS = re.compile(r"\btflops:\s*" + _NUM)
_TT_MFU = re.compile(r"\bmfu:\s*" + _NUM + "%")
_TT_MEM = re.compile(r"\bmemory:\s*" + _NUM + r"GiB")
_TT_TIME = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
_TT_RANK = re.compile(r"^\s*\[rank(\d+)\]:")
_TT_CKPT = re.compile(r"Finished saving the checkpoint.*?\bin\s*(\S+)\s*seconds")
#: Megatron's timers (``--timing-log-level``): "batch-generator: 15.86" in the "time (ms)"
#: line, or "batch-generator ....: (min, max)" across ranks with ``--timing-log-option minmax``
_MEG_DATA = re.compile(r"batch-generator[ .]*:\s*\(?\s*([0-9.eE+-]+)(?:\s*,\s*([0-9.eE+-]+))?")


@dataclass(frozen=True)
class TrainLog:
    """Steps of one training log, in the order logged."""

    framework: str                 #: "megatron", "nemo" or "torchtitan"
    step: np.ndarray               #: step (iteration) number [-]
    step_time_s: np.ndarray        #: time per step [s] (NaN where the log does not give it)
    time_s: np.ndarray             #: timestamp of the line from the first one [s] (NaN: none)
    global_batch: np.ndarray       #: sequences per step (NaN: not logged)
    tokens_per_s_per_gpu: np.ndarray  #: the log's own tokens/s per GPU (torchtitan tps)
    log_tflops_per_gpu: np.ndarray    #: the log's own model TFLOP/s per GPU
    log_mfu: np.ndarray               #: the log's own MFU [-] (torchtitan)
    memory_gib: np.ndarray            #: torchtitan's peak memory per GPU [GiB]
    args: dict = field(default_factory=dict)  #: Megatron arguments found (seq_length, ...)
    #: blocking time of each checkpoint save the log reports [s] (torchtitan: "Finished
    #: saving the checkpoint ... in X seconds"; with async saving, the staging only)
    checkpoint_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: Megatron's "batch-generator" timer per logged step: the time the step waited for
    #: its data [s] (the slowest rank's with min/max timers; NaN where not logged)
    data_loading_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: samples per second of the global batch (DeepSpeed, Hugging Face Trainer; else NaN)
    samples_per_s: np.ndarray | None = None
    #: the model as a catalog id the log names (torchtitan's flavor), else None
    model_id: str | None = None
    #: the model as the Scenario's ``model_config`` text (Megatron's argument dump), else ""
    model_config: str = ""
    #: where the model came from ("Megatron's argument dump", ...)
    model_from: str = ""


def _num(tok: str, lineno: int, what: str, line: str) -> float:
    x = _t.nonnegative_number(tok.replace(",", "").rstrip("|"))
    if x is None or x > 1e15:
        raise v.InputError(PARAM, f"line {lineno}: expected a number for {what}, got "
                                  f"{tok[:30]!r} in {_t.short(line)}")
    return x


def _stamp(text: str, fmt="%Y-%m-%d %H:%M:%S") -> float:
    try:
        return datetime.strptime(text, fmt).timestamp()
    except ValueError:
        return float("nan")


def read(text) -> TrainLog:
    """Read a Megatron-LM or torchtitan log (whichever has more step lines).

    Parameters
    ----------
    text : str or bytes
        The log (other lines, ranks' duplicates and tracebacks in between are skipped).

    Returns
    -------
    TrainLog
    """
    text = _t.as_text(text, PARAM)
    got = _Lines()
    for lineno, line in _t.lines(text):
        _read_line(got, lineno, line)
        if max(len(got.meg), len(got.nemo)) > MAX_STEPS or len(got.tt) > 2 * MAX_STEPS:
            raise v.InputError(PARAM, f"line {lineno}: more than {MAX_STEPS:,} steps")
    out = _most_steps(got)
    out = replace(out, checkpoint_s=np.array(got.ckpt, dtype=float))
    if out.samples_per_s is None:
        out = replace(out, samples_per_s=np.full(len(out.step), np.nan))
    if got.nemo_cfg and not got.args.get("num_layers"):
        return _with_nemo_config(out, got)
    return _with_model(out, got.args, got.flags, got.built)


@dataclass
class _Lines:
    """What a log's lines give, per format, while :func:`read` goes through them."""

    meg: list = field(default_factory=list)     #: Megatron rows
    nemo: list = field(default_factory=list)    #: NeMo 2 and NeMo 1.x rows
    tt: list = field(default_factory=list)      #: torchtitan rows, rank first
    ds: list = field(default_factory=list)      #: DeepSpeed rows, samples/s last
    args: dict = field(default_factory=dict)    #: Megatron's argument dump
    flags: dict = field(default_factory=dict)   #: Megatron's (or NeMo's) swiglu and GQA flags
    nemo_cfg: dict = field(default_factory=dict)  #: NeMo's configuration
    ckpt: list = field(default_factory=list)    #: checkpoint save times [s]
    data: dict = field(default_factory=dict)    #: Megatron row index -> batch-generator time [s]
    hf: dict = field(default_factory=dict)      #: Hugging Face Trainer metrics
    hf_open: bool = False                       #: inside a metrics dict spread over lines
    built: tuple | None = None                  #: torchtitan's (model, flavor)


def _read_line(got: _Lines, lineno: int, line: str) -> None:
    """Add what one line gives to ``got``, by the format the line is in."""
    if "batch-generator" in line and got.meg:
        _megatron_timers(got, lineno, line)
        if "elapsed time per iteration (ms)" not in line:
            return
    if "elapsed time per iteration (ms)" in line:
        got.meg.append(_megatron_row(lineno, line))
    elif "train_step_timing in s:" in line:
        got.nemo.append(_nemo2_row(lineno, line))
    elif "train_step_timing in s=" in line:
        got.nemo.append(_nemo1_row(lineno, line))
    elif "SamplesPerSec=" in line:
        got.ds.append(_deepspeed_row(lineno, line))
    elif "train_runtime" in line or got.hf_open:
        for k, x in _HF_KEY.findall(line):
            got.hf[k] = _num(x, lineno, k, line)
        got.hf_open = "train_runtime" in line and "}" not in line or (got.hf_open and "}" not in line)
    elif "tps:" in line and "step:" in line:
        got.tt.append(_torchtitan_row(lineno, line))
    elif "Finished saving the checkpoint" in line:
        c = _TT_CKPT.search(line)
        r = _TT_RANK.match(line)
        if c and (r is None or r.group(1) == "0"):
            got.ckpt.append(_num(c.group(1), lineno, "checkpoint seconds", line))
    else:
        _config_line(got, line)


def _megatron_timers(got: _Lines, lineno: int, line: str) -> None:
    """Megatron's batch-generator timer, as the data wait of the last iteration line."""
    d = _MEG_DATA.search(line)
    if d:
        # the timers after an iteration line are that interval's; with min/max the
        # slowest rank's, which the whole data-parallel group waits for
        got.data[len(got.meg) - 1] = _num(d.group(2) or d.group(1), lineno,
                                          "batch-generator (ms)", line) / 1e3


def _expected(lineno: int, line: str, what: str) -> v.InputError:
    """The error for a step line without the fields its format has."""
    return v.InputError(PARAM, f"line {lineno}: expected {what} in {_t.short(line)}")


def _megatron_row(lineno: int, line: str) -> tuple:
    """The row of a Megatron iteration line."""
    m, e = _MEG_ITER.search(line), _MEG_ELAPSED.search(line)
    if not m or not e:
        raise _expected(lineno, line, "'iteration N/ TOTAL' and 'elapsed time per iteration (ms): X'")
    ms = _num(e.group(1), lineno,
              "elapsed time per iteration (ms)", line)
    tf = _MEG_TFLOPS.search(line)
    gb = _MEG_GBS.search(line)
    ts = _MEG_TIME.search(line)
    return (int(m.group(1)), ms / 1e3,
            _stamp(ts.group(1)) if ts else np.nan,
            _num(gb.group(1), lineno, "global batch size", line) if gb else np.nan,
            np.nan,
            _num(tf.group(1), lineno, "throughput per GPU", line) if tf else np.nan,
            np.nan, np.nan)


def _nemo2_row(lineno: int, line: str) -> tuple:
    """The row of a NeMo 2 step line (``train_step_timing in s: X``)."""
    m, e = _NEMO_STEP.search(line) or _MEG_ITER.search(line), _NEMO_TIME.search(line)
    if not m or not e:
        raise _expected(lineno, line, "'global_step: N' or 'iteration N/M' and 'train_step_timing in s: X'")
    sec = _num(e.group(1), lineno, "train_step_timing in s", line)
    gb = _NEMO_GBS.search(line)
    return (int(m.group(1)), sec, np.nan,
            _num(gb.group(1), lineno, "global_batch_size", line) if gb else np.nan,
            np.nan, np.nan, np.nan, np.nan)


def _nemo1_row(lineno: int, line: str) -> tuple:
    """The row of a NeMo 1.x progress bar (``train_step_timing in s=X``)."""
    e = _NEMO1_TIME.search(line)
    m = _NEMO1_STEP.search(line) or _NEMO1_BAR.search(line)
    if not e or not m:
        raise _expected(lineno, line, "'global_step=N' and 'train_step_timing in s=X'")
    step = int(_num(m.group(1), lineno, "global_step", line))
    return (step, _num(e.group(1), lineno, "train_step_timing in s", line),
            np.nan, np.nan, np.nan, np.nan, np.nan, np.nan)


def _deepspeed_row(lineno: int, line: str) -> tuple:
    """The row of a DeepSpeed ThroughputTimer line, samples per second last."""
    m = _DS_TIMER.search(line)
    if not m:
        raise _expected(lineno, line, "DeepSpeed's 'E/STEP, SamplesPerSec=X'")
    ts = _DS_TIME.search(line)
    sps = _num(m.group(4) or m.group(3), lineno, "samples per second", line)
    return (int(m.group(2)), np.nan,
            _stamp(ts.group(1)) + int(ts.group(2)) / 1e3 if ts else np.nan,
            np.nan, np.nan, np.nan, np.nan, np.nan, sps)


def _torchtitan_row(lineno: int, line: str) -> tuple:
    """The row of a torchtitan step line, the rank that printed it first."""
    m = _TT_STEP.search(line)
    if not m:
        raise _expected(lineno, line, "'step: N ... tps: X'")
    r = _TT_RANK.match(line)
    rank = int(r.group(1)) if r else 0
    step = int(m.group(1))
    ts = _TT_TIME.search(line)
    tf, mfu, mem = (_TT_TFLOPS.search(line), _TT_MFU.search(line), _TT_MEM.search(line))
    row = (step, np.nan,
           _stamp(ts.group(1)) + int(ts.group(2)) / 1e3 if ts else np.nan, np.nan,
           _num(m.group(2), lineno, "tps", line),
           _num(tf.group(1), lineno, "tflops", line) if tf else np.nan,
           _num(mfu.group(1), lineno, "mfu", line) / 100 if mfu else np.nan,
           _num(mem.group(1), lineno, "memory", line) if mem else np.nan)
    return (rank,) + row


def _config_line(got: _Lines, line: str) -> None:
    """The model and layout a line gives: Megatron's argument dump, torchtitan's
    ``Building``, NeMo's configuration and padded vocabulary."""
    a = _MEG_ARG.match(line)
    if a:
        got.args[a.group(1)] = int(a.group(2)[:12])
    f = _MEG_FLAG.match(line)
    if f:
        got.flags[f.group(1)] = f.group(2) == "True"
    b = _TT_BUILD.search(line)
    if b and got.built is None:
        got.built = (b.group(1), b.group(2))
    c = _NEMO_CFG.match(line) if a is None and f is None else None
    if c:
        # the first value of a key: the model's, before any nested section repeats it
        key, val = _NEMO_ARGS.get(c.group(1), c.group(1)), c.group(2)
        if key == "activation":
            got.flags.setdefault("swiglu", val in ("swiglu", "fast-swiglu"))
        elif val.isdigit():
            got.nemo_cfg.setdefault(key, int(val[:12]))
    pv = _NEMO_VOCAB.search(line)
    if pv:
        got.nemo_cfg.setdefault("padded_vocab_size", int(pv.group(1)[:12]))


def _most_steps(got: _Lines) -> TrainLog:
    """The log of the format with the most step rows (the first format on a tie)."""
    tt_rows = _one_rank(got.tt)
    hf, hf_rows = got.hf, []
    if "train_runtime" in hf and hf.get("train_steps_per_second", 0) > 0:
        steps = hf["train_runtime"] * hf["train_steps_per_second"]
        hf_rows = [(int(round(steps)), 1.0 / hf["train_steps_per_second"], np.nan, np.nan,
                    np.nan, np.nan, np.nan, np.nan, hf.get("train_samples_per_second", np.nan))]
    meg, nemo, ds, args = got.meg, got.nemo, got.ds, got.args
    if not meg and not nemo and not tt_rows and not ds and not hf_rows:
        raise v.InputError(PARAM, "no step line found: expected Megatron lines "
                                  "('iteration N/ M | ... elapsed time per iteration (ms): X'), "
                                  "NeMo 2 lines ('... train_step_timing in s: X'), NeMo 1.x "
                                  "progress bars ('... train_step_timing in s=X'), torchtitan "
                                  "lines ('step: N ... tps: X'), DeepSpeed lines ('E/STEP, "
                                  "SamplesPerSec=X') or Hugging Face Trainer metrics "
                                  "('train_runtime', 'train_steps_per_second')")
    most = max(len(meg), len(nemo), len(tt_rows), len(ds), len(hf_rows))
    if len(meg) == most:
        out = _log("megatron", meg, args)
        loading = np.full(len(meg), np.nan)
        for i, x in got.data.items():
            loading[i] = x
        return replace(out, data_loading_s=loading)
    if len(nemo) == most:
        return _log("nemo", nemo, args)
    if len(tt_rows) == most:
        return _torchtitan(tt_rows, args)
    if len(ds) == most:
        out = _timed(_log("deepspeed", [r[:8] for r in ds], args))
        return replace(out, samples_per_s=np.array([r[8] for r in ds], dtype=float))
    return replace(_log("hf-trainer", [r[:8] for r in hf_rows], args),
                   samples_per_s=np.array([r[8] for r in hf_rows], dtype=float))


def _with_nemo_config(out: TrainLog, got: _Lines) -> TrainLog:
    """The log with NeMo's configuration as its arguments and model, where Megatron's
    argument dump is absent."""
    nemo_cfg, flags = got.nemo_cfg, got.flags
    if nemo_cfg.get("devices") and nemo_cfg.get("num_nodes"):
        nemo_cfg["world_size"] = nemo_cfg["devices"] * nemo_cfg["num_nodes"]
    if nemo_cfg.get("num_query_groups"):
        flags.setdefault("group_query_attention", True)
    keep = {k: x for k, x in nemo_cfg.items() if k not in ("devices", "num_nodes")}
    out = replace(out, args={**out.args, **keep})
    return _with_model(out, {**got.args, **keep}, flags, got.built, "NeMo's configuration")


def _with_model(log: TrainLog, args: dict, flags: dict, built,
                source: str = "Megatron's argument dump") -> TrainLog:
    """The model the log prints: Megatron's argument dump (or NeMo's configuration) as
    config fields, or torchtitan's flavor as a catalog id (when the catalog has it)."""
    need = ("num_layers", "hidden_size", "num_attention_heads")
    if all(args.get(k) for k in need):
        from ..scenario import config_text
        from ..training import hf_config
        heads = args["num_attention_heads"]
        kv = args.get("num_query_groups") if flags.get("group_query_attention") else heads
        hidden = args["hidden_size"]
        ffn = args.get("ffn_hidden_size") or 4 * hidden
        vocab = args.get("padded_vocab_size") or args.get("vocab_size")
        if not vocab:
            return log
        cfg = {"model_type": "llama" if flags.get("swiglu") else "gpt_neox",
               "num_hidden_layers": args["num_layers"], "hidden_size": hidden,
               "num_attention_heads": heads, "num_key_value_heads": kv or heads,
               "intermediate_size": ffn, "vocab_size": vocab,
               "max_position_embeddings": args.get("seq_length")
               or args.get("max_position_embeddings") or 4096}
        if not flags.get("swiglu"):
            cfg.update(model_type="gpt_neox", num_attention_heads=heads)
            cfg.pop("num_key_value_heads")
        try:
            text = config_text(hf_config.config_fields(cfg))
        except ValueError:
            return log
        return replace(log, model_config=text, model_from=(
            f"{source}: {args['num_layers']} layers, hidden {hidden}, {heads} heads"))
    if built is not None:
        from .. import catalog
        want = f"{built[0]}-{built[1]}".lower()
        try:
            catalog.default().model(want)
        except (KeyError, ValueError):
            return log
        return replace(log, model_id=want, model_from=f"torchtitan's 'Building {built[0]} "
                                                      f"{built[1]}'")
    return log


def _timed(log: TrainLog) -> TrainLog:
    """Step time from the timestamps of logged steps over the steps between them."""
    step, t = log.step.astype(float), log.time_s
    dstep, dt = np.diff(step), np.diff(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(dstep > 0, dt / np.where(dstep > 0, dstep, 1), np.nan)
    return replace(log, step_time_s=np.concatenate([[np.nan], per]))


def _one_rank(rows) -> list:
    """torchtitan rows of the lowest rank, without the copies other ranks print of a step
    (same step, same second); a step logged again later (a restart) is kept."""
    if not rows:
        return []
    low = min(r[0] for r in rows)
    out = []
    for r in rows:
        if r[0] != low:
            continue
        if out and out[-1][0] == r[1] and not abs(out[-1][2] - r[3]) > 1.0:
            continue
        out.append(r[1:])
    return out


def _log(framework, rows, args) -> TrainLog:
    c = [np.array(x, dtype=float) for x in zip(*rows)]
    t0 = np.nanmin(c[2]) if np.isfinite(c[2]).any() else 0.0
    return TrainLog(framework=framework, step=c[0].astype(int), step_time_s=c[1], time_s=c[2] - t0,
                    global_batch=c[3], tokens_per_s_per_gpu=c[4], log_tflops_per_gpu=c[5],
                    log_mfu=c[6], memory_gib=c[7], args=dict(args))


def _torchtitan(rows, args) -> TrainLog:
    log = _log("torchtitan", rows, args)
    step, t = log.step.astype(float), log.time_s
    dstep, dt = np.diff(step), np.diff(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(dstep > 0, dt / np.where(dstep > 0, dstep, 1), np.nan)
    # the first logged step has no predecessor to time it against
    return TrainLog(**{**log.__dict__, "step_time_s": np.concatenate([[np.nan], per])})
