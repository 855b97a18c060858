"""A conforming implementation of every algorithm, in verify's protocol: the project's own
fast forms (``registry.run(..., impl="fast")``).  tests/benchmarks/test_verify_bench.py
times the verifier's overhead with it."""

from perceptron_oracle import registry


def run(algorithm, X, y, *, epochs, kernel, params):
    return registry.run(algorithm, X, y, impl="fast", epochs=epochs, kernel=kernel, **params)
