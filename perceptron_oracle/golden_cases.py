"""What the golden files contain: the case families, each a function returning a FileSpec.

Data is generated from fixed seeds; every flag the reference run shows by itself (ties,
margin-band hits, fragile trials, long runs, blocked updates) is added by the generator, the
rest (duplicates, sparse data) is declared here.

Every float of X, and every label decided by a float, comes from the seeded generator
(scalar C code), elementwise IEEE operations, ``preprocessing.normalize`` (correctly rounded
norms) or correctly rounded dot products (``rounding.exact_dot``): never from BLAS or a SIMD
reduction, so every machine generates the same files (SPEC.md, "Portable golden files").
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from . import datasets, preprocessing
from .datasets import separable, with_label_noise
from .golden_specs import CaseSpec, FileSpec, GroupSpec
from .preprocessing import exact_dots
from .rounding import pnorm

Data = tuple[np.ndarray, np.ndarray]  # X, y


def _integers(T: int, n: int, seed: int, low: int = -2, high: int = 2) -> Data:
    rng = np.random.default_rng(seed)
    X = rng.integers(low, high + 1, size=(T, n)).astype(np.float64)
    return X, np.where(rng.random(T) < 0.5, 1, -1)


def _jittered(data: Data, seed: int) -> Data:
    """The same instances moved by a multiple of 2^-10 (up to 2^-7) in every coordinate: no
    exact ties and almost no zero instances, while sums of a few coordinates stay exact in
    float64.  An exact tie in a family whose state is not dyadic is fragile by nature (a
    float64 form decides it by rounding alone, SPEC.md section 3), so the golden groups whose
    subject is not ties run on jittered integers and leave ties to the groups that test them."""
    X, y = data
    rng = np.random.default_rng(seed + 5000)
    return X + rng.integers(-8, 9, size=X.shape) / 1024, y


def _continuous(T: int, n: int, seed: int, noise: float = 0.0, margin: float = 0.05) -> Data:
    ds = separable(T, n, margin, seed=seed, portable=True)
    if noise:
        ds = with_label_noise(ds, noise, seed=seed + 1000)
    return ds.X, ds.y


def _duplicates(seed: int, exact_ties: bool = True) -> Data:
    X, y = _integers(12, 3, seed)
    if not exact_ties:
        X, y = _jittered((X, y), seed)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, 12, size=10)
    flips = np.where(rng.random(10) < 0.5, -1, 1)
    return np.vstack([X, X[picks]]), np.concatenate([y, y[picks] * flips])


def _sparse(T: int, n: int, seed: int) -> Data:
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((T, n)) < 0.1, rng.integers(1, 4, size=(T, n)), 0).astype(float)
    u = rng.standard_normal(n)
    y = np.where(exact_dots(X, u) > 0, 1, -1)
    return X, y


def _real_cases(rows: int, p: int = 2) -> list[CaseSpec]:
    """The shipped real data (``perceptron_oracle/data_files``), the first ``rows`` examples,
    one epoch: Wdbc raw (features up to ~4,250), Wdbc and digits 3-vs-rest at unit p-norm."""
    raw = datasets.wdbc(rows=rows)
    hand = datasets.digits(rows=rows, normalized=False)
    return [
        CaseSpec(f"Wdbc raw (benign +1), first {rows}", raw.X, raw.y),
        CaseSpec(f"Wdbc, first {rows}, unit {p}-norm", preprocessing.normalize(raw.X, float(p)),
                 raw.y, preprocessing=(f"normalize:{p}",)),
        CaseSpec(f"digits 3 against the rest, first {rows}, unit {p}-norm",
                 preprocessing.normalize(hand.X, float(p)), hand.y,
                 preprocessing=(f"normalize:{p}",)),
    ]


def _standard_cases(seed: int, exact_ties: bool = True) -> list[CaseSpec]:
    """The data every parameter group runs on; without ``exact_ties`` the integer instances
    are jittered (:func:`_jittered`)."""
    integers = _integers(30, 3, seed)
    if exact_ties:
        small = CaseSpec("small integers in -2..2: exact ties", *integers, epochs=3)
    else:
        small = CaseSpec("small integers in -2..2, each moved by a few 2^-10 (no exact ties)",
                         *_jittered(integers, seed), epochs=3)
    return [
        CaseSpec("separable continuous data, 40 x 3", *_continuous(40, 3, seed), epochs=3),
        small,
        CaseSpec("label noise 10%, continuous", *_continuous(50, 4, seed, noise=0.1),
                 epochs=3),
        CaseSpec("duplicates, some relabelled", *_duplicates(seed, exact_ties), epochs=3,
                 flags=("duplicates",)),
    ]


def perceptron_file() -> FileSpec:
    groups = [
        GroupSpec("the classic Perceptron: every option at its default", "perceptron", {},
                  _standard_cases(1) + [
                      CaseSpec("one example", np.array([[0.5, -1.0]]), np.array([-1]),
                               epochs=3),
                      CaseSpec("zero instances among others: their score is b alone",
                               np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [-1.0, 1.0]]),
                               np.array([1, 1, -1, -1]), epochs=3),
                      CaseSpec("sparse integer data, 60 x 20", *_sparse(60, 20, 7), epochs=2,
                               flags=("sparse-data",)),
                      CaseSpec("a long noisy run, 300 x 5, 5 epochs",
                               *_continuous(300, 5, 8, noise=0.15), epochs=5),
                      CaseSpec("unit-normalised with a bias coordinate",
                               preprocessing.add_bias(preprocessing.normalize(
                                   _continuous(40, 3, 9, margin=0.0)[0] + 0.3)),
                               _continuous(40, 3, 9, margin=0.0)[1], epochs=2,
                               preprocessing=("normalize:2", "add_bias:1")),
                  ]),
        GroupSpec("threshold learning with dyadic constants (float64 is exact on integers)",
                  "perceptron", {"eta": Fraction(1, 2), "b0": -1, "C": 1},
                  _standard_cases(2)),
        GroupSpec("threshold learning with eta = 1/10, theta_init = 1/2, C = 1/3: exact ties "
                  "that float64 cannot promise are flagged fragile", "perceptron",
                  {"eta": Fraction(1, 10), "b0": Fraction(-1, 2), "C": Fraction(1, 3)},
                  _standard_cases(3)),
        GroupSpec("margin tau = 1: updates on correct trials with small margin, "
                  "y score == tau exactly on integers", "perceptron", {"tau": 1},
                  _standard_cases(4)),
        GroupSpec("the lambda-trick, lam = 1/2", "perceptron", {"lam": Fraction(1, 2)},
                  _standard_cases(5)),
        GroupSpec("the alpha-bound: at most one update per example", "perceptron",
                  {"alpha_bound": 1}, _standard_cases(6)),
        GroupSpec("everything at once: eta 2, theta_init 1, C 1/4, tau 3/4, lam 1/4, "
                  "alpha-bound 2", "perceptron",
                  {"eta": 2, "b0": -1, "C": Fraction(1, 4), "tau": Fraction(3, 4),
                   "lam": Fraction(1, 4), "alpha_bound": 2}, _standard_cases(7)),
        GroupSpec("polynomial kernel (x.z + 1)^2", "perceptron", {"tau": Fraction(1, 2)},
                  _standard_cases(8)[:3], kernel="poly:degree=2,coef0=1,gamma=1"),
        GroupSpec("polynomial kernel (x.z/2 - 1/2)^3", "perceptron", {},
                  _standard_cases(9)[:3], kernel="poly:degree=3,coef0=-1/2,gamma=1/2"),
        GroupSpec("Gaussian kernel, gamma = 1/2 (mpmath at 256 bits)", "perceptron",
                  {"lam": Fraction(1, 4)}, _standard_cases(10)[:2],
                  kernel="rbf:gamma=1/2"),
        GroupSpec("real data (Wdbc, digits): every option at its default", "perceptron", {},
                  _real_cases(200)),
    ]
    return FileSpec(
        name="perceptron",
        header=["The general Perceptron of Khardon & Wachman (2007), SPEC.md section 11.",
                "Every case: the reference's mistakes, updates and final state (last, "
                "votes, longest survivor, averaged) on X exactly as written."],
        groups=groups)


def _normalized(cases: list[CaseSpec], p: int | Fraction = 2) -> list[CaseSpec]:
    """The same cases with every instance scaled to unit p-norm first (float64)."""
    return [CaseSpec(c.comment + f", unit {p}-norm", preprocessing.normalize(c.X, float(p)),
                     c.y, c.epochs, c.flags, c.preprocessing + (f"normalize:{p}",))
            for c in cases]


def higher_order_file() -> FileSpec:
    """HO_p(c) and the p-norm Perceptron (SPEC.md, "higher_order")."""
    def ho(comment: str, params: dict[str, Any], cases: list[CaseSpec], kernel: str = "linear"
           ) -> GroupSpec:
        return GroupSpec(comment, "higher_order", params, cases, kernel)

    def pnorm(p: int) -> GroupSpec:
        return GroupSpec(f"the p-norm Perceptron, p = {p}", "pnorm_perceptron", {"p": p},
                         _normalized(_standard_cases(30 + p)[:3], p))

    groups = [
        ho("HO_2(2/5), rho_k = c/k, on unit-norm instances (the paper's setting)",
           {"c": Fraction(2, 5)}, _normalized(_standard_cases(21, exact_ties=False)) + [
               CaseSpec("a longer noisy run, 120 x 4, 2 epochs, unit 2-norm",
                        preprocessing.normalize(_continuous(120, 4, 22, noise=0.05)[0]),
                        _continuous(120, 4, 22, noise=0.05)[1], epochs=2,
                        preprocessing=("normalize:2",))]),
        ho("HO_2(2/5) on instances as given (integers: exact ties, non-unit x)",
           {"c": Fraction(2, 5)}, _standard_cases(23)),
        ho("HO_2(0) is the Perceptron", {"c": 0}, _standard_cases(24)[:2]),
        ho("rho = theorem1, c = 1/2: rho_k = (1 - c)/(1 + |v.x|)",
           {"c": Fraction(1, 2), "rho": "theorem1"},
           _normalized(_standard_cases(25, exact_ties=False))),
        ho("rho = constant, c = 1/4 (exact numbers grow fast: short runs)",
           {"c": Fraction(1, 4), "rho": "constant"}, _normalized(_standard_cases(26)[:2])),
        ho("the sparse variant: B changes only on mistakes with y v.x >= 0",
           {"c": Fraction(2, 5), "sparse": True}, _normalized(_standard_cases(27))),
        ho("HO_3(2/5), the dual-norm version (mpmath)", {"p": 3, "c": Fraction(2, 5)},
           _normalized(_standard_cases(28)[:3], 3)),
        ho("HO_4(2/5): p even (the score is rational only while B = I)",
           {"p": 4, "c": Fraction(2, 5)}, _normalized(_standard_cases(29)[:3], 4)),
        ho("HO_7(2/5)", {"p": 7, "c": Fraction(2, 5)},
           _normalized(_standard_cases(30, exact_ties=False)[:2], 7)),
        ho("HO_2(2/5) with the polynomial kernel (x.z + 1)^2 (short runs: the exact dual "
           "coefficients grow fast)", {"c": Fraction(2, 5)},
           [CaseSpec("separable continuous data, 20 x 2, unit 2-norm",
                     preprocessing.normalize(_continuous(20, 2, 31)[0]),
                     _continuous(20, 2, 31)[1], epochs=2, preprocessing=("normalize:2",)),
            CaseSpec("small integers in -2..2, 15 x 3, as given", *_integers(15, 3, 31),
                     epochs=2)],
           kernel="poly:degree=2,coef0=1,gamma=1"),
        ho("HO_2(2/5) with the Gaussian kernel, gamma = 1/2 (mpmath)", {"c": Fraction(2, 5)},
           _normalized(_standard_cases(32)[:2]), kernel="rbf:gamma=1/2"),
        pnorm(2), pnorm(3), pnorm(4), pnorm(7),
        ho("HO_2(2/5) on real data (Wdbc raw: |B| grows fast; digits)", {"c": Fraction(2, 5)},
           _real_cases(100)),
        GroupSpec("the p-norm Perceptron, p = 3, on real data", "pnorm_perceptron", {"p": 3},
                  _real_cases(150, 3)),
    ]
    return FileSpec(
        name="higher_order",
        header=["The Higher-Order Perceptron HO_p(c) of Brotto, Gentile & Vitale and the "
                "p-norm Perceptron, SPEC.md section 'higher_order'.",
                "The algorithms are defined for x as given; cases marked normalize:p were "
                "scaled to unit p-norm in float64 before the run, and X holds the result."],
        groups=groups)


def second_order_file() -> FileSpec:
    """The Second-Order Perceptron (SPEC.md, "second_order")."""
    def sop(comment: str, params: dict[str, Any], cases: list[CaseSpec], kernel: str = "linear"
            ) -> GroupSpec:
        return GroupSpec(comment, "second_order", params, cases, kernel)

    rng = np.random.default_rng(41)
    base = rng.standard_normal((3, 4))
    nearly = (exact_dots(rng.integers(-2, 3, size=(30, 3)).astype(np.float64), base)
              + 1e-6 * rng.standard_normal((30, 4)))   # rank 3 up to 1e-6 in R^4
    nearly_y = np.where(exact_dots(nearly, rng.standard_normal(4)) > 0, 1, -1)
    subspace, rest = _jittered(_integers(10, 2, 46), 46), _jittered(_integers(10, 3, 47), 47)
    groups = [
        sop("a = 1, the basic form", {"a": 1},
            _standard_cases(41)[:3] + _standard_cases(41, exact_ties=False)[3:]),
        sop("a = 10 (the slides' simulation values)", {"a": 10},
            _standard_cases(42, exact_ties=False)[:3]),
        sop("a = 1/10 on nearly dependent instances (rank 3 + 1e-6 noise in R^4)",
            {"a": Fraction(1, 10)},
            [CaseSpec("nearly dependent instances, 30 x 4", nearly, nearly_y, epochs=2,
                      flags=("ill-conditioned",))] + _standard_cases(43)[:1]),
        sop("adaptive a_k = a k, a = 1/2", {"a": Fraction(1, 2), "a_growth": "linear"},
            _standard_cases(44, exact_ties=False)[:3]),
        sop("the pseudoinverse form: the span of the mistakes grows (rank changes)",
            {"pseudoinverse": True},
            _standard_cases(45)[:2] + [
                CaseSpec("a 2-dimensional subspace of R^3 first (jittered integer "
                         "coordinates in it), then jittered integers in R^3",
                         np.vstack([exact_dots(subspace[0], np.array([[1.0, 0, 1], [0, 1.0, -1]])),
                                    rest[0]]),
                         np.concatenate([subspace[1], rest[1]]), epochs=2)]),
        sop("a = 1 with the polynomial kernel (x.z + 1)^2", {"a": 1},
            _standard_cases(48, exact_ties=False)[:2], kernel="poly:degree=2,coef0=1,gamma=1"),
        sop("a = 1 with the Gaussian kernel, gamma = 1/2 (mpmath)", {"a": 1},
            _standard_cases(49)[:2], kernel="rbf:gamma=1/2"),
        sop("a = 1 on real data (Wdbc raw: A ill-conditioned; digits)", {"a": 1},
            _real_cases(150)),
    ]
    return FileSpec(
        name="second_order",
        header=["The Second-Order Perceptron of Cesa-Bianchi, Conconi & Gentile, SPEC.md "
                "section 'second_order': the basic, adaptive and pseudoinverse forms.",
                "The score recorded is the paper's w_t.x_t (x_t itself inside S_t)."],
        groups=groups,
        notes={"ill-conditioned": {"bugType": "NUMERICAL_STABILITY", "description":
                                   "nearly linearly dependent instances: the matrix "
                                   "inverted is ill-conditioned"}})


def romma_pumma_file() -> FileSpec:
    """ROMMA and PUMMA_p(delta) (SPEC.md, "romma and pumma")."""
    def large_bias(T: int, seed: int) -> Data:
        """Separable with a large bias: y = sign(u.x - 2) on x in [0, 2]^4."""
        rng = np.random.default_rng(seed)
        X = rng.integers(0, 5, size=(T, 4)).astype(float) / 2
        u = np.array([1.0, 1.0, 0.5, 0.5])
        X = X[np.abs(exact_dots(X, u) - 2.25) > 0.2]
        return X, np.where(exact_dots(X, u) > 2.25, 1, -1)

    exact = {"numbers": "fraction"}
    mp = {"numbers": "mpmath:512"}

    def small(seed: int, exact_ties: bool = True) -> list[CaseSpec]:
        """Exact Fractions double in size at every update: short runs on small data."""
        integers = _integers(12, 3, seed)
        first = (CaseSpec("small integers in -2..2, 12 x 3, one epoch", *integers)
                 if exact_ties else
                 CaseSpec("small integers in -2..2 moved by a few 2^-10, 12 x 3, one epoch",
                          *_jittered(integers, seed)))
        return [first,
                CaseSpec("separable continuous data, 12 x 3, one epoch",
                         *_continuous(12, 3, seed)),
                CaseSpec("separable continuous data, 16 x 4, one epoch",
                         *_continuous(16, 4, seed + 100))]

    def mid(seed: int) -> list[CaseSpec]:
        return [CaseSpec("separable continuous data, 30 x 3, 2 epochs",
                         *_continuous(30, 3, seed), epochs=2),
                CaseSpec("duplicates, some relabelled", *_duplicates(seed), epochs=2,
                         flags=("duplicates",))]

    groups = [
        GroupSpec("ROMMA, delta = 0, exact Fractions", "romma", dict(exact),
                  small(51, exact_ties=False)),
        GroupSpec("ROMMA, delta = 1/10, exact Fractions: updates on correct trials with "
                  "margin below 9/10", "romma", {"delta": Fraction(1, 10), **exact},
                  small(52)),
        GroupSpec("ROMMA, delta = 1/10, mpmath at 512 bits", "romma",
                  {"delta": Fraction(1, 10), **mp}, small(53, exact_ties=False)),
        GroupSpec("ROMMA with the polynomial kernel (x.z + 1)^2", "romma", dict(mp),
                  small(54)[:2], kernel="poly:degree=2,coef0=1,gamma=1"),
        GroupSpec("PUMMA_2(1/10), exact Fractions", "pumma",
                  {"delta": Fraction(1, 10), **exact}, small(55)),
        GroupSpec("PUMMA_2(1/10) with a large bias (the paper's motivation)", "pumma",
                  {"delta": Fraction(1, 10), **mp},
                  [CaseSpec("y = sign(u.x - 9/4) on a grid in [0, 2]^4", *large_bias(40, 56),
                            epochs=3)]),
        GroupSpec("PUMMA_2(0), mpmath at 512 bits", "pumma", dict(mp), small(57) + mid(57)[:1]),
        GroupSpec("PUMMA_2(1/10) with the 2-norm soft margin, C = 1", "pumma",
                  {"delta": Fraction(1, 10), "C": 1, **mp}, small(58)),
        GroupSpec("PUMMA_3(1/10): Newton on the dual (18)", "pumma",
                  {"p": 3, "delta": Fraction(1, 10), **mp}, small(59)),
        GroupSpec("PUMMA_2(1/10) with the Gaussian kernel, gamma = 1/2", "pumma",
                  {"delta": Fraction(1, 10), **mp}, small(60)[:2],
                  kernel="rbf:gamma=1/2"),
        GroupSpec("ROMMA, delta = 0, on real data (mpmath at 512 bits)", "romma",
                  {"numbers": "mpmath:512"}, _real_cases(100)),
        GroupSpec("PUMMA_2(1/10) on real data (mpmath at 512 bits)", "pumma",
                  {"delta": Fraction(1, 10), "numbers": "mpmath:512"}, _real_cases(100)),
    ]
    return FileSpec(
        name="romma_pumma",
        header=["ROMMA and PUMMA_p(delta) of Ishibashi, Hatano & Takeda, SPEC.md section "
                "'romma and pumma'.",
                "Each group's params name the reference's arithmetic (numbers): exact "
                "Fractions, or mpmath at the stated bits with trials inside its error bound "
                "flagged fragile."],
        groups=groups)


def alma_file() -> FileSpec:
    """ALMA_p(alpha; B, C) of Gentile (SPEC.md, "alma"): p = 2, 3 and 2 ln n, kernels at
    p = 2; the last case of the first group carries the (x, -R) bias coordinate."""
    def augmented(seed: int) -> Data:
        X, y = _continuous(30, 3, seed)
        X = X + 0.5   # an offset hyperplane: the bias coordinate matters
        y = np.where(exact_dots(X, np.array([1.0, -1.0, 0.5])) > 0.25, 1, -1)
        R = max(pnorm(row) for row in X.tolist())
        return preprocessing.add_bias(X, -R), y

    def cases(seed: int, n: int = 3) -> list[CaseSpec]:
        return [CaseSpec(f"separable continuous data, 30 x {n}, 3 epochs",
                         *_continuous(30, n, seed), epochs=3),
                CaseSpec(f"label noise 10%, continuous, 40 x {n}, 2 epochs",
                         *_continuous(40, n, seed + 1, noise=0.1), epochs=2),
                CaseSpec("duplicates, some relabelled", *_duplicates(seed + 2), epochs=2,
                         flags=("duplicates",))]

    two_ln5 = Fraction(32189, 10000)   # 2 ln 5 = 3.21887..., rounded to 4 decimals
    groups = [
        GroupSpec("ALMA_2(1/10; 10, sqrt 2): the paper's defaults B = 1/alpha, C = sqrt 2",
                  "alma", {}, cases(61) + [CaseSpec(
                      "offset hyperplane, the (x, -R) bias coordinate appended, 2 epochs",
                      *augmented(62), epochs=2, preprocessing=("add_bias",))]),
        GroupSpec("ALMA_2(1/2; 1, 1)", "alma",
                  {"alpha": Fraction(1, 2), "B": 1, "C": 1}, cases(63)),
        GroupSpec("ALMA_2(1): alpha = 1, the threshold 0 (mistake-driven)", "alma",
                  {"alpha": 1}, cases(64)[:2]),
        GroupSpec("ALMA_3(1/2): the p-norm link and the q-norm projection", "alma",
                  {"p": 3, "alpha": Fraction(1, 2)}, cases(65)),
        GroupSpec("ALMA_p(1/2) at p = 2 ln n for n = 5 (p = 32189/10000)", "alma",
                  {"p": two_ln5, "alpha": Fraction(1, 2)}, cases(66, n=5)),
        GroupSpec("ALMA_2(1/2) with the polynomial kernel (x.z + 1)^2", "alma",
                  {"alpha": Fraction(1, 2)}, cases(67)[:2],
                  kernel="poly:degree=2,coef0=1,gamma=1"),
        GroupSpec("ALMA_2(1/2) with the Gaussian kernel, gamma = 1/2", "alma",
                  {"alpha": Fraction(1, 2)}, cases(68)[:2], kernel="rbf:gamma=1/2"),
    ]
    return FileSpec(
        name="alma",
        header=["ALMA_p(alpha; B, C) of C. Gentile (JMLR 2001), SPEC.md section 'alma'.",
                "Instances are normalised inside the algorithm (x / ||x||_p); the score "
                "recorded is w_k . x^_t on the normalised instance.  The reference runs in "
                "mpmath at 256 bits; trials inside its error bound are flagged fragile."],
        groups=groups)
