"""scikit-learn classifiers for every registered algorithm, trained by the fast forms.

One class per family: :class:`Perceptron`, :class:`HigherOrderPerceptron`,
:class:`PNormPerceptron`, :class:`SecondOrderPerceptron`, :class:`ROMMA`, :class:`PUMMA`
and :class:`ALMA`.  Each takes its algorithm's parameters (the registry's schema,
``registry.get(name).params``; SPEC.md sections 11-15) plus

- ``kernel``: "linear", "poly:degree=D,coef0=C,gamma=G" or "rbf:gamma=G" (SPEC.md section 6);
- ``epochs``: passes over the data in ``fit`` (default 5);
- ``form``: a fast form of the algorithm, or "auto": the first form the registry lists for
  the kernel and parameters (``Family.forms_for``), except that with the linear kernel the
  matrix algorithms (``higher_order``, ``second_order``) take the ``dual`` form when the data
  has more than 500 features: the primal form's state is n x n (O(n^2) per mistake), the
  dual's k x k over the k mistakes;
- ``keep_trace``: keep the run's trace(s) (``trace_`` for two classes, ``traces_``, one per
  class, otherwise) to check the fitted model against the oracle (``perceptron_oracle.
  compare``, or ``run(..., impl="reference")`` on the same data).

Parameters are plain numbers.  Each reaches the registry's exact Fraction as
``numbers.to_fraction`` reads it: an int is itself, a float is the double it is
(``Fraction(0.4)`` = 3602879701896397/9007199254740992, not 2/5) and a string such as "2/5"
is read as written; the fast forms then use the nearest double, so a float parameter runs
exactly as given.  Non-dyadic defaults (``c`` = 2/5 of the Higher-Order Perceptron) are
shown as the float the fast forms use.

Training is the fast form's run, trial for trial the reference's (SPEC.md section 4):
``fit(X, y)`` is ``run(algorithm, X, y, impl="fast", form=..., epochs=...)``; for more than
two classes the estimator trains one-vs-rest (Khardon & Wachman 2007, section 2.7;
``fast.multiclass``): the Perceptron's K learners in one shared pass, every other family as
K independent runs, and predicts the class of largest score.  ``partial_fit(X, y,
classes)`` continues the same online run with one more pass over the given rows, each row a
new example (the Perceptron's alpha, lambda-trick and alpha-bound, PUMMA's slacks are per
example).  The Perceptron carries its state over (``fast.multiclass.PerceptronOvR``); the
other families' fast forms take no initial state, so their ``partial_fit`` runs the fast
form again over every trial since the last ``fit`` (the fit's passes unrolled, then each
``partial_fit``'s rows): the same run, at a cost that grows with the rows seen.

The Perceptron predicts with ``hypothesis`` = "last", "longest_survivor", "voted" or
"averaged" (Khardon & Wachman's Figure 2, SPEC.md section 11: ``reference.perceptron.
predict`` is their exact reference).  The other families' papers define the last hypothesis
only.  ``decision_function`` is the score before the sign (for "voted", sum_{k=1}^K c_k
sign(h_k(x))); ``predict`` maps a positive score to ``classes_[1]`` and any other to
``classes_[0]`` (scikit-learn's rule: the protocol's "no decision" at a zero score becomes
the first class).

Importing this module needs scikit-learn (the ``peers`` extra).
"""

from __future__ import annotations

from typing import Any

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, column_or_1d
except ImportError:  # pragma: no cover - exercised without scikit-learn only
    raise ImportError("perceptron_oracle.estimators needs scikit-learn: "
                      "pip install 'perceptron-oracle[peers]'") from None

import inspect
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from .errors import DataError, ParamError
from .fast.multiclass import PerceptronOvR
from .kernels import parse_kernel
from .pnorm_float import row_norms
from .reference.perceptron import PREDICTION_MODES
from .registry import ALGORITHMS, get, run

try:
    from sklearn.utils.validation import validate_data as _validate_data
    _ALL_FINITE = "ensure_all_finite"
except ImportError:  # scikit-learn < 1.6
    def _validate_data(est: Any, *args: Any, **kw: Any) -> Any:
        return est._validate_data(*args, **kw)
    _ALL_FINITE = "force_all_finite"

__all__ = ["Perceptron", "HigherOrderPerceptron", "PNormPerceptron", "SecondOrderPerceptron",
           "ROMMA", "PUMMA", "ALMA"]

#: With the linear kernel, the matrix algorithms switch to the dual form beyond this width.
DUAL_ABOVE_FEATURES = 500
_COMMON = ("kernel", "epochs", "form", "keep_trace")


def _plain(value: Any) -> Any:
    """A registry default as a plain number: an int when integral, else the nearest float."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    return value


class _OnlineClassifier(ClassifierMixin, BaseEstimator):  # type: ignore[misc]  # untyped
    """What every family shares; a family sets ``_algorithm`` and its ``__init__``."""

    _algorithm = ""

    # -- parameters ---------------------------------------------------------------------------
    def _family_params(self) -> dict[str, Any]:
        names = get(self._algorithm).params.params
        return {name: getattr(self, name) for name in names}

    def _form(self, n_features: int) -> str:
        algo = get(self._algorithm)
        params = self._family_params()
        if self.form != "auto":
            if self.form not in algo.forms_for(self.kernel, params):
                raise ParamError(f"{self._algorithm}: form {self.form!r} does not take kernel "
                                 f"{parse_kernel(self.kernel).spec} with these parameters "
                                 f"(forms: {', '.join(algo.forms_for(self.kernel, params))})")
            return str(self.form)
        forms = algo.forms_for(self.kernel, params)
        if not forms:
            raise ParamError(f"{self._algorithm}: no fast form takes kernel "
                             f"{parse_kernel(self.kernel).spec} with these parameters")
        if algo.matrix_state and n_features > DUAL_ABOVE_FEATURES and "dual" in forms:
            return "dual"
        return forms[0]

    def _check_params(self) -> None:
        get(self._algorithm).params.resolve(self._family_params())
        parse_kernel(self.kernel)
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, (int, np.integer)) \
                or self.epochs < 1:
            raise ParamError(f"epochs must be a positive integer, got {self.epochs!r}")

    # -- data -----------------------------------------------------------------------------
    def _data(self, X: Any, y: Any, reset: bool) -> tuple[Any, np.ndarray]:
        # No pass of scikit-learn's for NaN and infinity: every training run names them on
        # its own (DataError "X contains NaN", a ValueError): the fast forms' validate(),
        # the Perceptron primal form's first pass over the scores, PerceptronOvR.train.
        X, y = _validate_data(self, X, y, accept_sparse="csr", dtype=np.float64,
                              reset=reset, y_numeric=False, **{_ALL_FINITE: False})
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        return X, y

    def _targets(self, y: np.ndarray, inverse: np.ndarray | None = None) -> np.ndarray:
        """T x K in {-1, +1}: one column (classes_[1] against classes_[0]) for two classes,
        one per class (one-vs-rest) otherwise.  ``inverse``: each label's index in
        ``classes_``, when known (``np.unique(..., return_inverse=True)``)."""
        if inverse is None:
            unknown = ~np.isin(y, self.classes_)
            if unknown.any():
                raise DataError(f"data: label {y[int(np.argmax(unknown))]!r} is not one of "
                                f"the classes {self.classes_.tolist()}")
            inverse = np.searchsorted(self.classes_, y)
        inverse = np.asarray(inverse).reshape(-1)
        if self.classes_.shape[0] == 2:
            return np.where(inverse == 1, 1, -1)[:, None].astype(np.int64)
        return np.where(inverse[:, None] == np.arange(self.classes_.shape[0])[None, :],
                        1, -1).astype(np.int64)

    # -- fitting --------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> _OnlineClassifier:
        """Train from scratch over ``epochs`` passes of (X, y)."""
        self._check_params()
        X, y = self._data(X, y, reset=True)
        self.classes_, inverse = np.unique(y, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise DataError(f"data: y holds one class only ({self.classes_[0]!r}); a "
                            "classifier needs at least 2 classes")
        self._start(X)
        self._train(X, self._targets(y, inverse), int(self.epochs))
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> _OnlineClassifier:
        """One more pass over (X, y), continuing the run (a first call starts it and needs
        ``classes``, every label the run will see)."""
        first = not hasattr(self, "classes_")
        if first:
            self._check_params()
        X, y = self._data(X, y, reset=first)
        if first:
            if classes is None:
                raise ParamError("partial_fit: pass classes= (every label of the run) on the "
                                 "first call")
            self.classes_ = np.unique(np.asarray(classes))
            if self.classes_.shape[0] < 2:
                raise DataError("classes: one class only; a classifier needs at least 2")
            self._start(X)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ParamError(f"partial_fit: classes {np.unique(classes).tolist()} differ from "
                             f"the first call's {self.classes_.tolist()}")
        self._train(X, self._targets(y), 1)
        return self

    def _start(self, X: Any) -> None:
        self.form_ = self._form(X.shape[1])
        self._segments: list[tuple[Any, np.ndarray | None, int]] = []
        self._n_learners = 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]

    def _train(self, X: Any, Y: np.ndarray, epochs: int) -> None:
        self._segments.append((X, Y, epochs))
        X_run: Any
        if len(self._segments) == 1:
            X_run, Y_run, E = X, Y, epochs
        else:  # the trials since the last fit, each pass unrolled
            X_run = (sp.vstack if sp.issparse(X) else np.vstack)(
                [x for x, _, e in self._segments for _ in range(e)])
            if sp.issparse(X_run):
                X_run = X_run.tocsr()
            Y_run = np.concatenate([yy for _, yy, e in self._segments for _ in range(e)])
            E = 1
        params = self._family_params()
        self._run_traces = [run(self._algorithm, X_run, Y_run[:, k], impl="fast",
                                form=self.form_, kernel=self.kernel, epochs=E, **params)
                            for k in range(Y_run.shape[1])]
        self._X_run = X_run
        self._expansion: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if not parse_kernel(self.kernel).is_linear:
            self._dual()  # computed once here: prediction leaves the estimator unchanged

    # -- prediction -----------------------------------------------------------------------
    def _scores(self, X: Any) -> np.ndarray:
        """m x K scores of the last hypothesis of every learner."""
        kern = parse_kernel(self.kernel)
        if kern.is_linear:
            W, b = self._primal()
            out = np.asarray(X @ W.T, dtype=np.float64) + b
            if get(self._algorithm).scores_normalized:   # ALMA: x / ||x||_p
                norms = row_norms(X, float(get(self._algorithm).params.resolve(
                    self._family_params())["p"]))
                divided: np.ndarray = np.divide(out, norms[:, None], out=np.zeros_like(out),
                                                where=norms[:, None] > 0)
                return divided
            return np.asarray(out)
        idx, coef, b = self._dual()
        out = np.tile(b, (X.shape[0], 1))
        if idx.shape[0]:
            rows = self._X_run[idx]
            for lo in range(0, X.shape[0], 1024):
                G = kern.matrix(X[lo:lo + 1024], rows)
                if get(self._algorithm).scores_normalized:
                    G = G / np.sqrt(np.maximum(kern.diagonal(X[lo:lo + 1024]), 0.0))[:, None]
                    G = np.nan_to_num(G / np.sqrt(np.maximum(kern.diagonal(rows), 0.0)),
                                      nan=0.0, posinf=0.0, neginf=0.0)
                out[lo:lo + 1024] += G @ coef
        return out

    def _primal(self) -> tuple[np.ndarray, np.ndarray]:
        W = np.array([t.final["w"] for t in self._run_traces], dtype=np.float64)
        b = np.array([float(t.final.get("b", 0.0)) for t in self._run_traces])
        return W, b

    def _dual(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(example indices into the run's data, coefficients (S x K), biases (K))."""
        if self._expansion is None:
            T = self._X_run.shape[0]
            per = []
            for t in self._run_traces:
                f = t.final
                if "support" in f:  # one entry per mistake (higher_order, second_order)
                    c = np.zeros(T)
                    np.add.at(c, np.asarray(f["support"], dtype=np.int64),
                              np.asarray(f["g"] if "g" in f else f["alpha"], dtype=float))
                else:               # one coefficient per example (romma, pumma, alma)
                    c = np.asarray(f["alpha"], dtype=np.float64)
                per.append(c)
            C = np.stack(per, axis=1)
            idx = np.flatnonzero(np.any(C != 0, axis=1))
            b = np.array([float(t.final.get("b", 0.0)) for t in self._run_traces])
            self._expansion = (idx, C[idx], b)
        return self._expansion

    def decision_function(self, X: Any) -> np.ndarray:
        """The score before the sign: shape (m,) for two classes, (m, K) otherwise."""
        check_is_fitted(self, "classes_")
        X = _validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        s = self._scores(X)
        return s[:, 0] if self.classes_.shape[0] == 2 else s

    def predict(self, X: Any) -> np.ndarray:
        s = self.decision_function(X)
        classes: np.ndarray = self.classes_
        if s.ndim == 1:
            return np.asarray(classes[(s > 0).astype(np.int64)])
        return np.asarray(classes[np.argmax(s, axis=1)])

    # -- the state, scikit-learn's way ---------------------------------------------------------
    @property
    def coef_(self) -> np.ndarray:
        """w of each learner (1 x n for two classes, K x n), where the state is primal."""
        self._require_state("coef_", primal=True)
        return self._primal()[0]

    @property
    def intercept_(self) -> np.ndarray:
        self._require_state("intercept_", primal=True)
        return self._primal()[1]

    @property
    def support_(self) -> np.ndarray:
        """Indices of the support examples among the rows given since the last ``fit``."""
        self._require_state("support_", primal=False)
        return np.asarray(self._origin()[self._dual()[0]])

    @property
    def support_vectors_(self) -> Any:
        self._require_state("support_vectors_", primal=False)
        return self._X_run[self._dual()[0]]

    @property
    def dual_coef_(self) -> np.ndarray:
        """Coefficients (K x S) of the support vectors in each learner's score."""
        self._require_state("dual_coef_", primal=False)
        return np.asarray(self._dual()[1].T)

    def _require_state(self, name: str, primal: bool) -> None:
        """The estimator is fitted and its state is the kind attribute ``name`` reads:
        primal (w, b) with the linear kernel, a kernel expansion with any other."""
        check_is_fitted(self, "classes_")
        linear = parse_kernel(self.kernel).is_linear
        if primal and not linear:
            raise AttributeError(f"{name}: the state is a kernel expansion (see dual_coef_)")
        if linear and not primal:
            raise AttributeError(f"{name}: the state is primal with the linear kernel "
                                 "(see coef_)")

    def _origin(self) -> np.ndarray:
        """For each example of the run's data, its row among the rows given since fit."""
        out, offset = [], 0
        for X, _, e in self._segments:
            rows = np.arange(offset, offset + X.shape[0])
            out.extend([rows] * (e if len(self._segments) > 1 else 1))
            offset += X.shape[0]
        return np.concatenate(out)

    @property
    def trace_(self) -> Any:
        """The binary run's trace (keep_trace=True, two classes)."""
        check_is_fitted(self, "classes_")
        if not self.keep_trace:
            raise AttributeError("trace_: set keep_trace=True")
        if self.classes_.shape[0] != 2:
            raise AttributeError("trace_: multiclass; see traces_")
        return self._traces()[0]

    @property
    def traces_(self) -> list[Any]:
        """One trace per learner (keep_trace=True): class l against the rest."""
        check_is_fitted(self, "classes_")
        if not self.keep_trace:
            raise AttributeError("traces_: set keep_trace=True")
        return self._traces()

    def _traces(self) -> list[Any]:
        return list(self._run_traces)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class Perceptron(_OnlineClassifier):
    """Khardon & Wachman's general Perceptron (2007; SPEC.md section 11): eta, b0 (the initial
    bias, -theta_init), C (threshold step), tau (margin), lam (lambda-trick), alpha_bound,
    and ``hypothesis`` (Figure 2): "last", "longest_survivor", "voted" or "averaged".

    Trained by ``fast.multiclass.PerceptronOvR`` (one learner for two classes, K in one
    shared pass otherwise), trial for trial ``fast.perceptron``'s run, carrying its state
    over ``partial_fit`` calls.  Every hypothesis predicts fast in both forms; "voted" sums
    c_k sign(s_k(x)) with s_k(x) = s_{k-1}(x) + eta y_u (k(x_u, x) + C) from one kernel
    block and a cumulative sum.
    """

    _algorithm = "perceptron"

    def __init__(self, eta: Any = 1, b0: Any = 0, C: Any = 0, tau: Any = 0, lam: Any = 0,
                 alpha_bound: Any = None, hypothesis: str = "last", kernel: str = "linear",
                 epochs: int = 5, form: str = "auto", keep_trace: bool = False):
        self.eta, self.b0, self.C, self.tau, self.lam = eta, b0, C, tau, lam
        self.alpha_bound, self.hypothesis = alpha_bound, hypothesis
        self.kernel, self.epochs, self.form, self.keep_trace = kernel, epochs, form, keep_trace

    def _check_params(self) -> None:
        super()._check_params()
        if self.hypothesis not in PREDICTION_MODES:
            raise ParamError(f"hypothesis must be one of {', '.join(PREDICTION_MODES)}, "
                             f"got {self.hypothesis!r}")

    def _start(self, X: Any) -> None:
        super()._start(X)
        self._model = PerceptronOvR(X.shape[1], self._n_learners, form=self.form_,
                                    kernel=self.kernel, **self._family_params())
        self._offsets: list[int] = []
        self._rows_seen = 0

    def _train(self, X: Any, Y: np.ndarray, epochs: int) -> None:
        self._model.train(X, Y, epochs)
        self._model.hypotheses()  # computed once here: prediction leaves the state unchanged
        self._offsets.append(self._rows_seen)
        self._rows_seen += X.shape[0]
        self._segments.append((X.shape[0], None, epochs))

    def _scores(self, X: Any) -> np.ndarray:
        return self._model.decision(X, self.hypothesis)

    def _state(self) -> tuple[np.ndarray, np.ndarray]:
        coef, b = self._model.hypotheses()[
            "last" if self.hypothesis == "voted" else self.hypothesis]
        return coef, b

    def _primal(self) -> tuple[np.ndarray, np.ndarray]:
        if self.hypothesis == "voted":
            raise AttributeError("coef_: the voted hypothesis is a vote of K hypotheses, "
                                 "not one w")
        coef, b = self._state()
        m = self._model
        if self.hypothesis == "last" and m.form == "primal":
            return m.W.copy(), b.copy()
        return np.asarray(m.support_rows().T @ coef).T if m.n_support else \
            np.zeros((m.K, m.n)), b.copy()

    def _dual(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.hypothesis == "voted":
            raise AttributeError("dual_coef_: the voted hypothesis is a vote of K "
                                 "hypotheses, not one expansion")
        coef, b = self._state()
        idx = np.flatnonzero(np.any(coef != 0, axis=1))
        return idx, coef[idx], b

    @property
    def support_(self) -> np.ndarray:
        self._require_state("support_", primal=False)
        return np.asarray(self._model.origin[self._dual()[0]])

    @property
    def support_vectors_(self) -> Any:
        self._require_state("support_vectors_", primal=False)
        return self._model.support_rows()[self._dual()[0]]

    def _traces(self) -> list[Any]:
        return self._model.traces()


def for_family(algorithm: str) -> type:
    """The estimator class of a registered family, from its declaration
    (``Family.estimator``: the class name and docstring): its ``__init__`` takes the
    family's parameters (their defaults as plain numbers) and the common ones, and stores
    each as given.  The Perceptron's is :class:`Perceptron` (written out: its multiclass
    model, voted and averaged hypotheses); built once per family."""
    if algorithm == "perceptron":
        return Perceptron
    if algorithm in _BUILT:
        return _BUILT[algorithm]
    family = get(algorithm)
    if family.estimator is None:
        raise ParamError(f"{algorithm} declares no estimator")
    class_name, doc = family.estimator.class_name, family.estimator.doc
    schema = family.params.params
    names = list(schema) + list(_COMMON)
    defaults = {name: _plain(p.default) for name, p in schema.items()}
    defaults.update(kernel="linear", epochs=5, form="auto", keep_trace=False)

    def __init__(self: Any, **kwargs: Any) -> None:
        for name in names:
            setattr(self, name, kwargs.get(name, defaults[name]))

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=defaults[n])
           for n in names])
    params = "; ".join(f"{name}: {p.doc}" for name, p in schema.items())
    cls = type(class_name, (_OnlineClassifier,), {
        "_algorithm": algorithm, "__init__": __init__, "__module__": __name__,
        "__doc__": f"{doc}\n\n    Parameters (registry schema): {params}.\n"})
    __init__.__qualname__ = f"{class_name}.__init__"
    _BUILT[algorithm] = cls
    return cls


_BUILT: dict[str, type] = {}

# The papers' families under their public names (a family registered later: for_family).
HigherOrderPerceptron = for_family("higher_order")
PNormPerceptron = for_family("pnorm_perceptron")
SecondOrderPerceptron = for_family("second_order")
ROMMA = for_family("romma")
PUMMA = for_family("pumma")
ALMA = for_family("alma")
#: Every registered family's estimator class at import.
ESTIMATORS: dict[str, type] = {name: for_family(name) for name in ALGORITHMS}
