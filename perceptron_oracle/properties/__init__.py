"""Hypothesis strategies and invariant checks taken from the papers' theorems.

Importable by any implementation's test suite: ``strategies`` draws online sequences and
parameters; one module per family (``perceptron``, ...) holds that family's invariants as
functions that raise ``InvariantViolation`` (one class, defined in ``_base`` and exported
here and by every family module).  ``checks`` is the check library for outside
implementations: each family's checks (``perceptron_checks``, ...), which its declaration
names (``registry.get(name).invariant_checks``), apply to an implementation called in
``verify``'s protocol; ``verify.check_implementation`` runs them.
"""

from ._base import InvariantViolation

__all__ = ["InvariantViolation"]
