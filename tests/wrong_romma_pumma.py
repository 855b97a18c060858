"""Deliberately wrong ROMMA / PUMMA, each with one planted bug, callable by ``verify --impl``.

Each mutation patches one building block of the exact reference (``reference.pumma_states``,
``reference.maximum_margin``) for the duration of a call, so the rest of the algorithm is the
reference's own.  ``planted(name)`` is the patch as a context manager (the property tests run
the checks of ``properties/romma_pumma.py`` inside it); ``MUTATIONS[name]`` describes it;
``<name>(algorithm, X, y, *, epochs, kernel, params) -> Trace`` is the protocol of
``tests/wrong_perceptrons.py`` (``correct`` is the unpatched reference).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from perceptron_oracle.reference import pumma_states
from perceptron_oracle.reference import romma as romma_ref
from perceptron_oracle.registry import get

MUTATIONS = {
    "": "none: the reference itself",
    "bias_from_pos": "bias (20) from x_pos only: b = -w.x_pos",
    "case_ii_skipped": "problem (2)/(3) always solved by case (i) (eta = 0), p = 2",
    "newton_one_step": "p > 2: Newton on the dual (18) stopped after one step from (0, 1)",
    "lambda_sign": "case (ii)'s lam with (v.z - r) for (r - v.z) (the sign lost in (19))",
    "rhs_one": "PUMMA solves w.z >= 1 (ROMMA on z, not on z/2): Theorem 2's factor lost",
    "slack_ignored": "soft margin: the slacks xi left out (the kernel's 1/C kept)",
}


def _case_i_only(vv: Any, zz: Any, vz: Any, r: int, exact: bool) -> Any:
    return None if zz == 0 else (r / zz, 0 * zz, 1.0)


def _lambda_sign(vv: Any, zz: Any, vz: Any, r: int, exact: bool) -> Any:
    out = _ORIGINAL_SOLVE(vv, zz, vz, r, exact)
    if out is None or out[1] == 0:
        return out
    lam, eta, kappa = out
    return -lam, eta, kappa


def _rhs_one(vv: Any, zz: Any, vz: Any, r: int, exact: bool) -> Any:
    return _ORIGINAL_SOLVE(vv, zz, vz, 1, exact)


def _newton_one_step(ops: Any, z: Any, th: Any, vv: Any, p: Any, soft: Any, start: Any,
                     tol: Any) -> Any:
    zero = 0 * vv   # from (0, 1) whatever the start (the float warm start included)
    return _ORIGINAL_NEWTON(ops, z, th, vv, p, soft, (zero, zero + 1), 0, max_steps=1)


_ORIGINAL_NEWTON = pumma_states.newton_dual
_ORIGINAL_SOLVE = romma_ref.solve_2norm

_PATCHES: dict[str, list[tuple[Any, str, Any]]] = {
    "": [],
    "bias_from_pos": [(pumma_states, "pair_bias", lambda wpos, wneg: -wpos)],
    "case_ii_skipped": [(pumma_states, "solve_2norm", _case_i_only),
                        (romma_ref, "solve_2norm", _case_i_only)],
    "newton_one_step": [(pumma_states, "newton_dual", _newton_one_step)],
    "lambda_sign": [(pumma_states, "solve_2norm", _lambda_sign),
                    (romma_ref, "solve_2norm", _lambda_sign)],
    "rhs_one": [(pumma_states, "solve_2norm", _rhs_one)],
    "slack_ignored": [(pumma_states.State2, "xi", lambda self, j, label: self.zero)],
}


@contextlib.contextmanager
def planted(mutation: str) -> Iterator[None]:
    """The reference with ``mutation``'s bug, inside the block."""
    saved = []
    for owner, name, value in _PATCHES[mutation]:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def wrong(mutation: str, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: Any,
          params: dict[str, Any]) -> Any:
    reference = get(algorithm).implementation("reference")  # with its shadow runs
    with planted(mutation):
        return reference(X, y, epochs=epochs, kernel=kernel, **params)


for _name in MUTATIONS:
    globals()[_name or "correct"] = functools.partial(wrong, _name)
