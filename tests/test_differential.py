"""Every fast form against the exact reference, trial for trial, on every sequence strategy.

One test body for the whole (algorithm, kernel family, strategy) matrix, built from the
registry: a family that registers itself is tested here without a line added.  Each example
runs the reference once and compares every fast form that takes the drawn kernel and
parameters (``Family.forms_for``, from each form's declaration in the registry: HO's
primal and dual forms take p = 2 only, PUMMA's and ALMA's duals too), so a form registered
later (``registry.register_form``) is compared here too (tests/test_family_interface.py).
A fast form must reproduce the reference's mistakes and updates exactly; the only excuse is a
trial the reference flags as fragile (SPEC.md), where the reference then follows the form's
branch and judges every later trial on it (``compare.judge_run``), and the final state must
match within the bounds the reference derives.

The linear items take the profile's number of examples (200 per strategy in ``ci``), and
every fast form runs in them, the dual forms included; the forms that take p = 2 only get
their own linear items (ids ending ":p=2", parameters drawn for them), so that they too see
the full number.  The kernel items add the polynomial and Gaussian kernels with a quarter
of that (50 in ``ci``), on the first KERNEL_EXAMPLES examples of each drawn sequence, for at
most two epochs: the exact references with a polynomial kernel (Fractions) or the Gaussian
kernel (mpmath) grow fast in the number of mistakes, and the linear items already cover the
long sequences.  A draw where the reference raises NotConverged (PUMMA p > 2, Newton
stalled, SPEC.md 14.5) has no exact answer to compare with and is rejected.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, reject, settings
from hypothesis import strategies as st

from perceptron_oracle.compare import judge_run
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.long_runs import stop_excused
from perceptron_oracle.properties.strategies import SEQUENCES, kernel_specs, nonlinear_kernels
from perceptron_oracle.reference.maximum_margin import NotConverged
from perceptron_oracle.registry import ALGORITHMS, get

KERNEL_EXAMPLES = 8
#: The kernel items' share of the profile's max_examples.
KERNEL_SHARE = 4


def _matrix(kernel_families: tuple[str, ...]) -> list:
    return [pytest.param(algo.name, kernel, strategy,
                         None if kernel == "linear" else algo.kernel_forms[0],
                         id=f"{algo.name}:{kernel}:{strategy}")
            for algo in ALGORITHMS.values() for kernel in kernel_families
            if kernel == "linear" or algo.kernel_forms for strategy in SEQUENCES]


def _p2_matrix() -> list:
    """Linear items with parameters drawn for the p = 2 forms only (HO's primal and dual,
    PUMMA's dual), so that those forms too see the full number of examples."""
    return [pytest.param(algo.name, "linear", strategy, algo.p2_forms[0],
                         id=f"{algo.name}:linear:{strategy}:p=2")
            for algo in ALGORITHMS.values() if algo.p2_forms for strategy in SEQUENCES]


@pytest.mark.parametrize("algorithm,kernel_family,strategy,draw_for",
                         _matrix(("linear",)) + _p2_matrix())
@given(data=st.data())
def test_fast_forms_match_reference(algorithm: str, kernel_family: str, strategy: str,
                                    draw_for: str | None, data: st.DataObject) -> None:
    compare_forms_on_a_draw(algorithm, kernel_family, strategy, draw_for, data)


@pytest.mark.parametrize("algorithm,kernel_family,strategy,draw_for",
                         _matrix(tuple(nonlinear_kernels())))
@settings(max_examples=max(10, settings.default.max_examples // KERNEL_SHARE))
@given(data=st.data())
def test_kernel_forms_match_reference(algorithm: str, kernel_family: str, strategy: str,
                                      draw_for: str | None, data: st.DataObject) -> None:
    compare_forms_on_a_draw(algorithm, kernel_family, strategy, draw_for, data)


def compare_forms_on_a_draw(algorithm: str, kernel_family: str, strategy: str,
                            draw_for: str | None, data: st.DataObject) -> list[str]:
    """One example of one item: draw a sequence, a kernel, parameters (for the form
    ``draw_for``, None: any form's) and epochs, run the reference, and assert that every fast
    form taking them agrees with it.  Returns the forms compared."""
    algo = ALGORITHMS[algorithm]
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    kernel = data.draw(kernel_specs(kernel_family), label="kernel")
    linear = kernel_family == "linear"
    params = data.draw(get(algorithm).draw_params(draw_for), label="params")
    epochs = data.draw(st.integers(1, 3 if linear else 2), label="epochs")
    X, y = (seq.X, seq.y) if linear else (seq.X[:KERNEL_EXAMPLES], seq.y[:KERNEL_EXAMPLES])
    forms = algo.forms_for(kernel, params)
    assert forms, f"no fast form takes {kernel} with {params}"
    try:
        expected = algo.implementation("reference")(X, y, epochs=epochs, kernel=kernel,
                                                    record_scores=True, **params)
    except NotConverged:  # no exact answer to compare with
        event("rejected: the reference's Newton did not converge")
        reject()

    first_update = expected.updates[0] if expected.updates else len(expected.scores)
    if any(s == 0 for s in expected.scores[first_update + 1:]):
        event("an exact tie (score 0) after the first update")
    for form in forms:
        try:
            actual = algo.implementation("fast", form)(X, y, epochs=epochs, kernel=kernel,
                                                       **params)
        except FloatRangeError as stop:
            # SPEC.md 3: a form stops where its float64 state leaves the range.  Accepted
            # only after a flagged trial: the form may have parted there (taking an update
            # the exact run declines), and from a part on compare() excuses every trial.
            assert stop_excused(expected, stop), f"form {form}: {stop}"
            event(f"{form} stopped after a fragile trial, its state beyond float64 (accepted)")
            continue
        result = judge_run(algorithm, X, y, actual, epochs=epochs, kernel=kernel,
                           params=params, expected=expected)
        event(f"compared: {form}")
        if result.branches:
            event(f"{form} took the other branch at a fragile trial (judged on it)")
        if result.excused:
            event(f"{form} diverged at a fragile trial whose branch cannot be followed")
        assert result.ok, f"form {form}: {result.describe()}"
    return forms
