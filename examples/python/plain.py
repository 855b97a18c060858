"""A plain Perceptron as most libraries have it: w and b only, with a learning rate eta, an
initial bias b0 and a bias step C (the update is w += eta y x, b += eta y C), linear kernel.

It declares what it implements by raising NotImplementedError for everything else: those
golden cases are reported as not applicable, never as passes.

    perceptron-oracle verify --impl plain:run --algorithm perceptron
    pytest --oracle-impl plain:run --oracle-algorithm perceptron
"""

import numpy as np


def run(algorithm, X, y, *, epochs, kernel, params):
    if algorithm != "perceptron":
        raise NotImplementedError(f"only the perceptron, not {algorithm}")
    if kernel != "linear":
        raise NotImplementedError("linear kernel only")
    for name in ("tau", "lam"):
        if params.get(name):
            raise NotImplementedError(f"no {name} (margin and lambda-trick not implemented)")
    if params.get("alpha_bound") is not None:
        raise NotImplementedError("no alpha-bound")
    eta, b, C = (float(params.get(k, d)) for k, d in (("eta", 1), ("b0", 0), ("C", 0)))
    w = np.zeros(X.shape[1])
    mistakes = []
    for t in range(epochs * len(y)):
        x, label = X[t % len(y)], y[t % len(y)]
        if label * (x @ w + b) <= 0:  # a zero score is a mistake
            mistakes.append(t)
            w += eta * label * x
            b += eta * label * C
    return {"format": "perceptron-oracle/trace@1", "algorithm": "perceptron",
            "form": "primal", "kernel": "linear", "params": {}, "n_examples": len(y),
            "epochs": epochs, "mistakes": mistakes, "updates": mistakes,
            "final": {"w": w.tolist(), "b": b}}
