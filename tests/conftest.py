"""Shared fixtures: hypothesis profiles and the (algorithm, implementation, form) matrix.

Profiles: ``dev`` (default, quick), ``ci`` (what .ci/run uses: >= 200 examples per strategy),
``thorough`` (by hand: ``HYPOTHESIS_PROFILE=thorough pytest``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from perceptron_oracle.registry import ALGORITHMS, implementations

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=50, **_common)
settings.register_profile("ci", max_examples=200, derandomize=True, print_blob=True, **_common)
settings.register_profile("thorough", max_examples=2000, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI")
                                     else "dev"))


def pytest_report_header(config: object) -> list[str]:
    rows = [f"{a}:{i}:{f}" for a, i, f in implementations()]
    profile = settings._current_profile  # noqa: SLF001 - printed for the record only
    return [f"perceptron-oracle implementations: {', '.join(rows)}",
            f"hypothesis profile: {profile}; algorithms: {', '.join(ALGORITHMS)}"]
