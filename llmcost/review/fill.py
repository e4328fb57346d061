"""Whether a global batch fills the GPUs of a run, and which batch would.

The rule: a batch of :math:`B` sequences *fills* :math:`G` GPUs when the review's layout for
it (the planner's first, as the review plans the run) exists, and doubling the batch would
raise the throughput per GPU by less than :data:`FILL_GAIN`:

.. math:: \\frac{T(2B, G)}{T(B, G)} - 1 < 0.10

with :math:`T` the tokens per second of the review's layout. Past that point the costs a step
pays whatever its batch (the pipeline's fill and drain, the data-parallel gradient sync, the
parameter gathers of ZeRO-3) and the work too thin per GPU (small matmuls, a deep pipeline
chosen only because the batch does not split over more replicas) no longer hold the GPUs
back. A batch no layout splits over the GPUs fills none of them. A batch whose layouts do not
fit in memory is not limited by the batch: memory is the limit there, and more batch would not
help.

10% is the pipeline bubble the sizing accepts before it calls a batch too small for its
pipeline (:data:`llmcost.planning.pipeline_batch.BUBBLE_LIMIT`, Narayanan et al. 2021,
arXiv:2104.04473 §2.2): a batch may cost the GPUs at most what such a bubble costs them.
Measured on the step model: Llama 3.1 405B's published 2,048 sequences of 8,192 on 16,384
H100 fill them (doubling gains 7-8%); on 16,384 B200, whose matmuls run 2.3x faster against the
same gradient sync, they do not (doubling gains 15%).

The batch that fills :math:`G` GPUs is searched on the batches data-parallel groups of powers
of two split (:math:`2^k \\times \\{1, 1.25, 1.5, 1.75\\}` sequences, the review's own grid,
``stages.splittable_sequences``): the powers of two above :math:`B` until one fills, then the
points of the octave below it; the largest GPU count a batch fills on whole nodes halved from
:math:`G`, then refined the same way. Each test reads the review's layout at the batch and at
twice it; the searches hand the pairs they are about to read to ``warm`` a few at a time, so
the review predicts them together (``llmcost.planning.planner.first_layouts``), and a review
pays the searches only where its batch does not fill its GPUs.

Every function here takes ``best(gpus, batch)``: the review's layout at that size and batch as
:class:`Best` (None when no layout splits the batch), so this module computes nothing of its
own and the figures it quotes are the review's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

#: a batch fills the GPUs when doubling it would raise their throughput by less than this [-]
FILL_GAIN = 0.10


class Best(NamedTuple):
    """The review's layout at one GPU count and batch."""

    tokens_per_s: float
    mfu: float
    layout: str          # its description ("TP8 PP16x4 ...")
    fits: bool


BestFn = Callable[[int, int], "Best | None"]


@dataclass(frozen=True)
class Fill:
    """Whether ``batch`` fills ``gpus`` (:func:`fills`), with the figures that say so."""

    gpus: int
    batch: int                      # [sequences]
    fills: bool
    at: Best | None                 # the review's layout at the batch; None: none splits it
    doubled: Best | None            # ... at twice the batch
    gain: float | None              # T(2B) / T(B) - 1 [-]; None without both layouts fitting


def fills(best: BestFn, gpus: int, batch: int) -> Fill:
    """Whether ``batch`` sequences fill ``gpus`` GPUs (the module's rule)."""
    at = best(gpus, batch)
    if at is None:
        return Fill(gpus, batch, False, None, None, None)
    if not at.fits:
        return Fill(gpus, batch, True, at, None, None)
    doubled = best(gpus, 2 * batch)
    if doubled is None or not doubled.fits:
        return Fill(gpus, batch, True, at, doubled, None)
    gain = doubled.tokens_per_s / at.tokens_per_s - 1
    return Fill(gpus, batch, gain < FILL_GAIN, at, doubled, gain)


@dataclass(frozen=True)
class BatchFill:
    """A batch against the GPUs it runs on: whether it fills them, the largest GPU count it
    fills, and the smallest batch at or above it that fills them [sequences, GPUs]."""

    seq_len: int
    test: Fill                      # the batch on the GPUs
    #: the smallest batch at or above ``test.batch`` that fills the GPUs (``test`` itself when
    #: it fills); None: none up to the search's cap
    filling: Fill | None
    #: the largest GPU count at most ``test.gpus`` the batch fills (``test.gpus`` when it
    #: fills); None: not even one GPU
    largest_gpus: int | None

    @property
    def fills(self) -> bool:
        return self.test.fills

    @property
    def fill_batch(self) -> int | None:
        return self.filling.batch if self.filling is not None else None

    def tokens(self, batch: int) -> str:
        return _tokens_text(batch * self.seq_len)

    def batch_text(self, batch: int) -> str:
        """"a batch of 2,048 sequences (16.8M tokens)"."""
        return f"a batch of {batch:,} sequence{'' if batch == 1 else 's'} " \
               f"({self.tokens(batch)} tokens)"

    def what(self) -> str:
        """The batch on the GPUs, in one clause with the figures behind it."""
        t = self.test
        head = self.batch_text(t.batch)
        if t.at is None:
            return f"no layout splits {head} over {t.gpus:,} GPUs"
        if t.gain is None:
            return f"{head} on {t.gpus:,} GPUs: {t.at.layout}, MFU {t.at.mfu:.1%}"
        verb = "fills" if t.fills else "does not fill"
        change = "raise" if t.gain >= 0 else "change"
        return (f"{head} {verb} {t.gpus:,} GPUs: twice the batch would {change} the throughput "
                f"per GPU by {t.gain:.1%} (MFU {t.at.mfu:.1%} to {t.doubled.mfu:.1%}), "
                f"{'below' if t.fills else 'above'} the {FILL_GAIN:.0%} that says a batch "
                "fills its GPUs")

    def largest_text(self) -> str:
        t = self.test
        if self.largest_gpus is None:
            return f"it fills no GPU count from one to {t.gpus:,}"
        return f"it fills at most {self.largest_gpus:,} GPUs"

    def filling_text(self) -> str:
        t, f = self.test, self.filling
        if f is None:
            return f"no batch of the grid above {t.batch:,} sequences fills {t.gpus:,} GPUs"
        tail = (f"doubling it gains {f.gain:.1%}" if f.gain is not None else
                "memory, not the batch, limits it")
        return (f"{self.batch_text(f.batch)} fills {t.gpus:,} GPUs: {f.at.layout}, "
                f"MFU {f.at.mfu:.1%} ({tail})")

    def cost_text(self) -> str:
        """What the batch costs against the one that fills the GPUs: the days at the same
        goodput scale as 1 / throughput ("" when there is nothing to compare)."""
        t, f = self.test, self.filling
        if f is None or f.batch == t.batch or t.at is None or f.at is None or not t.at.fits \
                or not f.at.fits:
            return ""
        return (f"; at {t.batch:,} sequences the run takes "
                f"{f.at.tokens_per_s / t.at.tokens_per_s:.2f}x the days it takes at "
                f"{f.batch:,} (MFU {t.at.mfu:.1%} against {f.at.mfu:.1%})")

    def advice(self) -> str:
        """The whole finding for the notes: empty when the batch fills its GPUs."""
        if self.fills:
            return ""
        return f"{self.what()}; {self.largest_text()}; {self.filling_text()}"


def _tokens_text(x: float) -> str:
    return f"{x / 1e6:,.3g}M" if x >= 1e6 else f"{x / 1e3:,.3g}k"


def _no_warm(pairs) -> None:
    return None


#: powers of two (of the batch, or of the GPUs halved) a search asks ``warm`` for at once
WARM_POWERS = 4


def _warm_fills(warm: Callable, gpus_batches) -> None:
    """Ask ``warm`` for every (gpus, batch) a :func:`fills` test of these pairs reads."""
    pairs = [(g, b) for g, b in gpus_batches if b is not None]
    warm(pairs + [(g, 2 * b) for g, b in pairs])


def smallest_filling(best: BestFn, gpus: int, batch: int, cap: int,
                     snap: Callable[[int], "int | None"], warm: Callable = _no_warm) -> Fill | None:
    """The smallest batch above ``batch`` on the grid that fills ``gpus``: the powers of two
    above it until one fills, then the 1.25, 1.5 and 1.75 points of the octave below that one,
    each moved by ``snap`` to a batch some layout splits (None: none near); at most ``cap``
    sequences. ``warm(pairs)`` is told the (gpus, batch) pairs about to be read, a few at a
    time, so that ``best`` can compute them together."""
    p = 1 << int(batch).bit_length()        # the first power of two above the batch
    found = None
    while found is None and p <= cap:
        chunk = []
        while p <= cap and len(chunk) < WARM_POWERS:
            chunk.append((p, snap(p)))
            p *= 2
        _warm_fills(warm, [(gpus, c) for _, c in chunk])
        for q, c in chunk:
            if c is not None and c > batch:
                f = fills(best, gpus, c)
                if f.fills:
                    found, p = f, q
                    break
    if found is None:
        return None
    half = p // 2
    between = [c for c in dict.fromkeys(snap(half * k // 4) for k in (5, 6, 7))   # 1.25-1.75
               if c is not None and batch < c < found.batch]
    _warm_fills(warm, [(gpus, c) for c in between])
    for c in between:
        f = fills(best, gpus, c)
        if f.fills:
            return f
    return found


def _whole_nodes(x: int, node: int) -> int:
    """``x`` GPUs down to whole nodes, or to a power of two below one node."""
    return (x // node) * node if x >= node else 1 << (max(1, x).bit_length() - 1)


def largest_filled(best: BestFn, gpus: int, batch: int, node: int,
                   warm: Callable = _no_warm) -> int | None:
    """The largest GPU count below ``gpus`` that ``batch`` fills: the counts halved from
    ``gpus`` (whole nodes, powers of two below a node) until one is filled, then 1.75, 1.5 and
    1.25 x that count; None when not even one GPU is. ``warm`` as :func:`smallest_filling`."""
    ladder = [_whole_nodes(gpus // 2, node)]
    while ladder[-1] > 1:
        ladder.append(_whole_nodes(ladder[-1] // 2, node))
    prev = gpus
    for i, g in enumerate(ladder):
        if i % WARM_POWERS == 0:
            _warm_fills(warm, [(x, batch) for x in ladder[i:i + WARM_POWERS]])
        if fills(best, g, batch).fills:
            between = [c for c in dict.fromkeys(_whole_nodes(g * k // 4, node) for k in (7, 6, 5))
                       if g < c < prev]
            _warm_fills(warm, [(c, batch) for c in between])
            for c in between:
                if fills(best, c, batch).fills:
                    return c
            return g
        prev = g
    return None


def batch_fill(best: BestFn, gpus: int, batch: int, seq_len: int, node: int, cap: int,
               snap: Callable[[int], "int | None"], warm: Callable = _no_warm) -> BatchFill:
    """``batch`` sequences on ``gpus`` GPUs: whether they fill them and, when not, the largest
    GPU count they fill and the smallest batch on the grid that fills ``gpus`` (``warm`` as
    :func:`smallest_filling`)."""
    _warm_fills(warm, [(gpus, batch)])
    test = fills(best, gpus, batch)
    if test.fills:
        return BatchFill(seq_len=seq_len, test=test, filling=test, largest_gpus=gpus)
    # the largest count first: the filling batch's layouts, searched last, are the ones a
    # review plans next (the planner's runs are cached, the most recent kept)
    largest = largest_filled(best, gpus, batch, node, warm)
    return BatchFill(seq_len=seq_len, test=test,
                     filling=smallest_filling(best, gpus, batch, cap, snap, warm),
                     largest_gpus=largest)
