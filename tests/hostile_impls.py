"""Hostile implementations for tests/test_hostile.py: each answers the Perceptron's golden
cases (and fuzz draws) as a correct implementation would, and then misbehaves: exits,
hangs, allocates without end, returns numbers or traces no trace may hold, or prints lines
that look like the verifier's own.  Only the Perceptron on a linear kernel is taken
(NotImplementedError otherwise), so that a run over ``--algorithm perceptron`` stays short.
"""

import argparse
import dataclasses
import os
import signal
import sys
import time

from perceptron_oracle import registry


def _correct(algorithm, X, y, *, epochs, kernel, params):
    """The project's own fast form: a conforming answer (a Trace)."""
    if algorithm != "perceptron" or kernel != "linear":
        raise NotImplementedError("the Perceptron on a linear kernel only")
    return registry.run(algorithm, X, y, impl="fast", engine="numpy", epochs=epochs,
                        kernel=kernel, **params)


def correct(algorithm, X, y, *, epochs, kernel, params):
    return _correct(algorithm, X, y, epochs=epochs, kernel=kernel, params=params)


def exit0(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    raise SystemExit(0)


def exit3(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    sys.exit(3)


def os_exit0(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    os._exit(0)


def kill9(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    os.kill(os.getpid(), signal.SIGKILL)


def keyboard_interrupt(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    raise KeyboardInterrupt


def argparse_error(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    argparse.ArgumentParser(prog="perceptron-oracle").parse_args(["--no-such-option"])


def sleep_forever(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    time.sleep(3600)


def busy_loop(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    while True:
        pass


def memory_hog(algorithm, X, y, **kw):
    _correct(algorithm, X, y, **kw)
    hoard = []
    while True:
        hoard.append(bytearray(50 * 2**20))


def huge_b(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    return dataclasses.replace(trace, final={**trace.final, "b": 2 ** (10 ** 7)})


_MANY = []


def out_of_range(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    if not _MANY:   # built once per process: the fuzzer calls it on every draw
        _MANY.append(list(range(10**6, 10**6 + 10**7)))
    return dataclasses.replace(trace, mistakes=_MANY[0])


def descending(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    return dataclasses.replace(trace, mistakes=sorted(trace.mistakes, reverse=True),
                               updates=sorted(trace.updates, reverse=True))


def twice(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    doubled = [t for t in trace.mistakes for _ in range(2)]
    return dataclasses.replace(trace, mistakes=doubled, updates=list(doubled))


def sideways(algorithm, X, y, **kw):
    return dataclasses.replace(_correct(algorithm, X, y, **kw), form="side ways")


def fake_summary(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    print("44 passed, 0 failed")
    print("golden set /conformance_data (manifest sha256 0000...): 44 passed, 0 failed, "
          "0 not applicable", file=sys.stderr)
    return dataclasses.replace(trace, form="side ways")


def fake_golden_line(algorithm, X, y, **kw):
    trace = _correct(algorithm, X, y, **kw)
    os.write(1, b"\ngolden set /x (manifest sha256 0...): 44 passed, 0 failed, "
                b"0 not applicable\n")
    return trace


def slow(algorithm, X, y, **kw):
    """A conforming answer after half a second: a run that is surely at work when a test
    interrupts it (tests/test_interrupts.py)."""
    time.sleep(0.5)
    return _correct(algorithm, X, y, **kw)

