"""What every reference module needs: the data as exact rationals, checked without numpy, the
exact kernel values between examples, each computed once, the trial loop's record that
becomes the trace, and the a-posteriori fragile rule."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import Any, Protocol

import mpmath

from ..errors import DataError, ParamError
from ..kernels import Kernel
from ..numbers import is_mpf, number_context, to_fraction
from ..params import Param
from ..rounding import SMALLEST_SUBNORMAL
from ..trace import Trace


def exact_data(X: Any, y: Any) -> tuple[list[list[Fraction]], list[int]]:
    """X as rows of Fractions (each float64 read as the rational it is), y as ints in {-1, +1}.

    Accepts nested lists, numpy arrays and scipy sparse matrices (through their own
    ``toarray``/``tolist`` methods, so this module never imports numpy).
    """
    if hasattr(X, "toarray"):
        X = X.toarray()
    rows = X.tolist() if hasattr(X, "tolist") else [list(r) for r in X]
    labels = y.tolist() if hasattr(y, "tolist") else list(y)
    if not rows:
        raise DataError("data: the data set is empty")
    if len(rows) != len(labels):
        raise DataError(f"data: X has {len(rows)} rows but y has {len(labels)} labels")
    if not isinstance(rows[0], list):
        raise DataError("data: X must be 2-dimensional (one row of features per example)")
    width = len(rows[0])
    if width == 0:
        raise DataError("data: X has no features")
    exact_rows = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise DataError(f"data: row {i} does not have {width} features")
        for v in row:
            if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
                raise DataError(f"data: row {i} holds a non-number {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise DataError(f"data: X contains {'NaN' if v != v else 'an infinity'}")
        exact_rows.append([Fraction(v) for v in row])
    out_labels = []
    for i, label in enumerate(labels):
        if isinstance(label, (bool, complex)) or label not in (-1, 1):
            raise DataError(f"data: label {label!r} at row {i} is not -1 or +1")
        out_labels.append(int(label))
    return exact_rows, out_labels


def check_epochs(epochs: Any) -> int:
    """``epochs`` if it is a positive integer of at most 2^63 - 1 (the trace format's trials
    are int64 in every language), else one ParamError line."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ParamError(f"epochs must be a positive integer, got {epochs!r}")
    if epochs > 2**63 - 1:
        raise ParamError(f"epochs must be at most 2^63 - 1 (a trial index is int64), got "
                         f"{epochs:.3g}")
    return epochs


class OptionalRational(Param):
    """A rational parameter that may be absent: None, given as None or "none" (the paper's
    default, or the variant without it: ALMA's B and C, PUMMA's soft margin C)."""

    def read(self, value: Any) -> Any:
        if value is None or isinstance(value, str) and value.strip().lower() == "none":
            return None
        return super().read(value)


def norm_param(doc: str) -> Param:
    """The norm parameter p of the p-norm families (p-norm Perceptron, HO, PUMMA, ALMA): a
    rational p >= 2, default 2 (the 2-norm algorithm)."""
    return Param("p", "rational", Fraction(2), doc, check=lambda v: v >= 2,
                 requirement=">= 2")


#: The trials at which an exact run takes the other branch of its update test (``following``).
_FOLLOWED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "followed_branches", default=frozenset())


@contextlib.contextmanager
def following(trials: Iterable[int]) -> Iterator[None]:
    """Inside the block, every exact run decides its update test the other way at ``trials``
    (``TrialRecord.decide``): the branch another implementation took at a fragile trial,
    which the comparison then follows, judging every later trial on it (SPEC.md, "Comparing
    traces").  A trial that is not fragile is never followed: the comparison fails there."""
    token = _FOLLOWED.set(frozenset(trials))
    try:
        yield
    finally:
        _FOLLOWED.reset(token)


#: Where exact runs report their progress (``reporting_progress``): a callable of (trials
#: done, trials in all), or None.
_PROGRESS: contextvars.ContextVar[Callable[[int, int], None] | None] = \
    contextvars.ContextVar("exact_run_progress", default=None)

#: An exact run reports its progress every this many trials.
PROGRESS_EVERY = 256


@contextlib.contextmanager
def reporting_progress(report: Callable[[int, int], None] | None) -> Iterator[None]:
    """Inside the block, every exact run calls ``report(done, total)`` every PROGRESS_EVERY
    trials and once at its end (``TrialRecord.trials``): a long run's progress bar."""
    token = _PROGRESS.set(report)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def progress_report() -> Callable[[int, int], None] | None:
    """The progress callback of the enclosing ``reporting_progress`` block, or None."""
    return _PROGRESS.get()


class TrialRecord:
    """The trials of a run over ``epochs`` passes of T examples, and what the run records of
    them: the mistake, update and fragile trials, and (``record_scores``) the exact scores;
    ``trace`` assembles the reference trace.  ``decide`` is the update test's outcome (the
    test itself, or the branch a comparison follows)."""

    def __init__(self, labels: list[int], epochs: int, record_scores: bool = True):
        self.labels, self.epochs = labels, epochs
        self.mistakes: list[int] = []
        self.updates: list[int] = []
        self.fragile: list[int] = []
        self.scores: list[Any] | None = [] if record_scores else None
        self.followed = _FOLLOWED.get()

    def decide(self, t: int, test: bool) -> bool:
        """Whether trial t updates: ``test``, the exact outcome of the update test, or its
        opposite where the run follows another implementation's branch (``following``)."""
        return test != (t in self.followed)

    def trials(self) -> Iterator[tuple[int, int, int]]:
        """(t, j, y_j) for every trial t: trial t presents example j = t mod T (the online
        protocol, SPEC.md section 1)."""
        T = len(self.labels)
        total = self.epochs * T
        report = _PROGRESS.get()
        for t in range(total):
            if report is not None and t % PROGRESS_EVERY == 0:
                report(t, total)
            j = t % T
            yield t, j, self.labels[j]
        if report is not None:
            report(total, total)

    def score(self, value: Any) -> None:
        if self.scores is not None:
            self.scores.append(value)

    def flag(self, t: int) -> None:
        """Trial t is fragile (once, however many of its tests are)."""
        if not self.fragile or self.fragile[-1] != t:
            self.fragile.append(t)

    def trace(self, algorithm: str, kernel: Kernel, params: dict[str, Any],
              final: dict[str, Any], updates: list[int] | None = None) -> Trace:
        """The reference trace of the run (``updates``: where they are not recorded apart,
        as for the mistake-driven Perceptrons, HO and SOP)."""
        return Trace(algorithm=algorithm, form="reference", kernel=kernel.spec, params=params,
                     n_examples=len(self.labels), epochs=self.epochs, mistakes=self.mistakes,
                     updates=self.updates if updates is None else updates, final=final,
                     fragile=self.fragile, scores=self.scores)


class Gram:
    """Exact k(x_i, x_j), each computed once, with the float magnitude that bounds rounding."""

    def __init__(self, kernel: Kernel, rows: list[list[Fraction]]):
        self.kernel = kernel
        self.rows = rows
        self.abs_rows = [[abs(float(v)) for v in row] for row in rows]
        self.ctx = None if kernel.is_rational else number_context()
        self.values: dict[tuple[int, int], Any] = {}
        self.magnitudes: dict[tuple[int, int], float] = {}

    def __call__(self, i: int, j: int) -> Any:
        key = (i, j) if i <= j else (j, i)
        if key not in self.values:
            self.values[key] = self.kernel.exact(self.rows[i], self.rows[j], self.ctx)
        return self.values[key]

    def magnitude(self, i: int, j: int) -> float:
        key = (i, j) if i <= j else (j, i)
        if key not in self.magnitudes:
            value = self.kernel.magnitude(self.abs_rows[i], self.abs_rows[j])
            if value == 0 and self(i, j) != 0:  # products below the float64 range
                value = SMALLEST_SUBNORMAL
            self.magnitudes[key] = value
        return self.magnitudes[key]


# -- the a-posteriori fragile rule (SPEC.md section 3, "Shadow runs") -----------------------
#: How far beyond the largest error a shadow run shows a float64 form may still stray.
SHADOW_FACTOR = 16.0

#: Where ``sharpen`` reports its decisions (``shadow_decisions``): a list of
#: (trial, log2 of the factor by which the shadow runs' error would have to change to flip
#: the decision), or None (the default: nothing recorded).
_DECISIONS: contextvars.ContextVar[list[tuple[int, float]] | None] = \
    contextvars.ContextVar("shadow_decisions", default=None)


@contextlib.contextmanager
def shadow_decisions() -> Iterator[list[tuple[int, float]]]:
    """Inside the block, every decision ``sharpen`` takes on the shadow runs' errors is
    appended to the list yielded, as (trial, how many binades the error e_t would have to
    move to flip it).  The shadow runs are float64 code (BLAS, numpy's SIMD loops): another
    machine measures other errors, and the golden generator refuses a decision that lies
    within GOLDEN_SHADOW_MARGIN binades of its edge (SPEC.md, "Portable golden files").
    A tie (gap 0) and a gap within SHADOW_FACTOR 2u |margin| (kept on every machine) are
    not recorded: they do not depend on e_t."""
    record: list[tuple[int, float]] = []
    token = _DECISIONS.set(record)
    try:
        yield record
    finally:
        _DECISIONS.reset(token)


def recording_shadow_decisions() -> bool:
    """Whether a ``shadow_decisions`` block records the decisions of ``sharpen`` (an exact
    run that decides without ``sharpen`` must then take the path that calls it)."""
    return _DECISIONS.get() is not None


def _exact(value: Any) -> Any:
    """An exact score (Fraction, int, or mpmath mpf) as a Fraction."""
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    return to_fraction(value)  # an mpf: the dyadic rational it is


class ShadowRuns(Protocol):
    """The float64 forms a family's shadow runs re-run (SPEC.md section 3, "Shadow runs"),
    handed to the exact run by its caller: the reference imports neither the fast forms nor
    the registry.  The registry gives each family's exact run its own
    (``shadows.FastShadowRuns``, through ``Algorithm.implementation("reference")``); an
    exact run given none keeps the stated rule's fragile list."""

    def forms_for(self, kernel: Any, params: dict[str, Any]) -> list[str]:
        """The fast forms that take this kernel and these parameters (may raise: then no
        shadow run, the stated rule decides)."""
        ...

    def forced(self, form: str, X: Any, y: Any, epochs: int, kernel: Any,
               params: dict[str, Any], updates: list[int]) -> Trace:
        """Fast form ``form`` run on (X, y) (float64 arrays, or the CSR matrix given) with
        its scores recorded, updating at the
        trials ``updates`` (the exact run's) whatever its own tests say."""
        ...

    def forced_tested(self, form: str, X: Any, y: Any, epochs: int, kernel: Any,
                      params: dict[str, Any], updates: list[int]
                      ) -> tuple[Trace, list[float]]:
        """``forced``, and per trial the left side of the update test as the form compares
        it (nan where it makes no test): PUMMA's soft margin, y score + xi_j."""
        ...


def shadow_errors(shadows: ShadowRuns | None, X: Any, y: Any, epochs: int, kernel: str,
                  params: dict[str, Any], trace: Any) -> list[float] | None:
    """Per trial, the largest |fl(score) - score| over the project's fast forms run along
    the exact trace's path of states (every form updates at the exact run's update trials,
    ``shadows.forced``), measured exactly against the exact scores; inf where a form's
    score is not finite.  None when no shadow runs are given, no fast form takes these
    parameters or a form cannot be run (the stated rule alone then decides)."""
    if shadows is None:
        return None
    runs = shadows

    def runner(form: str, Xa: Any, ya: Any) -> tuple[Any, None]:
        return runs.forced(form, Xa, ya, epochs, kernel, params, trace.updates), None

    found = _shadows(runs, X, y, kernel, params, trace, runner, None)
    return None if found is None else found[0]


def shadow_test_errors(shadows: ShadowRuns | None, X: Any, y: Any, epochs: int, kernel: str,
                       params: dict[str, Any], trace: Any, tested: list[Any]
                       ) -> tuple[list[float], list[float]] | None:
    """``shadow_errors`` for an update test whose left side is not the margin y score
    (PUMMA's soft margin: y score + xi_j): ``tested[t]`` is that left side, exact (None
    where trial t makes no update test), and ``shadows.forced_tested`` runs a fast form
    along the exact run's updates and returns its trace (with scores) and, per trial, the
    left side as the form compares it (nan where it makes no test).  Returns the score
    errors and the largest |fl(left side) - left side| per trial (inf where a form's value
    is not finite, or where a form's updates part from the exact run's; 0 without a test);
    None as ``shadow_errors``."""
    if shadows is None:
        return None
    runs = shadows

    def runner(form: str, Xa: Any, ya: Any) -> tuple[Any, list[float]]:
        return runs.forced_tested(form, Xa, ya, epochs, kernel, params, trace.updates)

    return _shadows(runs, X, y, kernel, params, trace, runner, tested)


def _shadows(shadows: ShadowRuns, X: Any, y: Any, kernel: str, params: dict[str, Any],
             trace: Any, runner: Any, tested: list[Any] | None
             ) -> tuple[list[float], list[float]] | None:
    # numpy here only, for the float64 forms' input: importing and running the reference
    # needs no numpy (SPEC.md section 3; tests/test_api.py runs it with numpy blocked)
    import numpy as np

    try:
        forms = shadows.forms_for(kernel, params)
    except Exception:  # noqa: BLE001 - a rule only: no shadow, the stated rule decides
        return None
    if not forms or trace.scores is None:
        return None
    if any(_beyond_float_range(v) for v in [*trace.scores, *(tested or [])]):
        return None
    exact = [_exact(s) for s in trace.scores]
    exact_tested = [None if v is None else _exact(v) for v in tested or []]
    worst = [0.0] * len(exact)
    worst_tested = [0.0] * len(exact)
    Xa = np.asarray(X, dtype=np.float64) if not hasattr(X, "toarray") else X
    ya = np.asarray(y)
    for form in forms:
        try:
            shadow, shadow_tested = runner(form, Xa, ya)
        except Exception:  # noqa: BLE001 - e.g. Newton's NotConverged: no shadow
            return None
        if shadow.scores is None or len(shadow.scores) != len(exact):
            return None
        if tested is not None and (shadow_tested is None
                                   or len(shadow_tested) != len(exact_tested)):
            return None
        parted = set(trace.updates) - set(shadow.updates)
        for t in parted:
            worst[t] = worst_tested[t] = math.inf  # the form finds that update infeasible
        _largest(worst, shadow.scores, exact)
        if tested is not None:
            _largest(worst_tested, shadow_tested, exact_tested)
    return worst, worst_tested


#: Beyond 2^+-FLOAT_RANGE_BITS an exact score is far outside float64's range (2^-1074 ..
#: 2^1024): a shadow run's error there says nothing the stated rule does not.
FLOAT_RANGE_BITS = 1100


def _beyond_float_range(value: Any) -> bool:
    """Whether ``value`` is an mpmath number (a Gaussian kernel's score) of magnitude beyond
    2^+-FLOAT_RANGE_BITS.  Such a number, exp(-gamma ||x - z||^2) of far-apart rows for
    one, is a dyadic rational of as many bits as its exponent: the shadow runs' exact
    comparison would build it (gigabytes at |x| = 1e60), so the stated rule decides."""
    if not is_mpf(value) or not value:
        return False
    return abs(int(mpmath.mag(value))) > FLOAT_RANGE_BITS


def _largest(worst: list[float], values: list[float], exact: list[Any]) -> None:
    """worst[t] <- max(worst[t], |values[t] - exact[t]|) (measured exactly, then as a float
    that is 0 only for a zero error; inf where a value is not finite, skipped where exact[t]
    is None: no such quantity at that trial)."""
    for t, (sf, se) in enumerate(zip(values, exact)):
        if se is None:
            continue
        if not math.isfinite(sf):
            worst[t] = math.inf
            continue
        diff = abs(Fraction(sf) - se)
        err = float(diff) if diff < Fraction(1 << 1000) else math.inf
        if diff and not err:
            # below float64's range (an exact score of 1e-650 that every form computes as
            # 0): the error is not 0, and a zero band would call that mistake test robust
            err = SMALLEST_SUBNORMAL
        if err > worst[t]:
            worst[t] = err


def sharpen(fragile: list[int], errors: list[float] | None, margins: list[Any],
            thresholds: list[list[Any]]) -> list[int]:
    """The fragile trials the a-posteriori rule keeps: trial t stays fragile iff, for one of
    its thresholds c (0 for the mistake test, the update test's own), the exact margin is
    exactly c (a tie: the shadows' roundings say nothing of another evaluation order), or
    |margin - c| <= SHADOW_FACTOR max(e_t, 2u |margin|), e_t = the shadow runs' error of
    that margin.  A test whose left side is not the margin (PUMMA's soft margin) is
    sharpened by its own call, on its own left side and errors
    (``maximum_margin.sharpen_by_shadows``)."""
    if errors is None:
        return fragile
    out = []
    u = 2.0 ** -53
    record = _DECISIONS.get()
    for t in fragile:
        margin = _exact(margins[t])
        floor = 2 * u * float(abs(margin)) if abs(margin) < Fraction(1 << 1000) else math.inf
        band = SHADOW_FACTOR * max(errors[t], floor)
        for c in thresholds[t]:
            gap = abs(margin - c)
            if record is not None and band < math.inf and gap \
                    and gap > Fraction(SHADOW_FACTOR * floor):
                record.append((t, _flip_binades(gap, errors[t])))
            if gap == 0 or not band < math.inf or gap <= Fraction(band):
                out.append(t)
                break
    return out


def _flip_binades(gap: Any, error: float) -> float:
    """|log2(gap / (SHADOW_FACTOR e))|: how many binades the shadow error e would have to
    move for ``sharpen``'s decision on ``gap`` to flip (inf for e = 0: every form computed
    that margin exactly)."""
    if not error:
        return math.inf
    need = _exact(gap) / (Fraction(SHADOW_FACTOR) * Fraction(error))
    return abs(math.log2(need.numerator) - math.log2(need.denominator))
