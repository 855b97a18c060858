"""The errors bad input raises.  Each names the problem in its message; the command line prints
that message on one line and exits with status 2 (CONTRACT.md)."""


class OracleInputError(ValueError):
    """Input that perceptron-oracle cannot use as given."""


class DataError(OracleInputError):
    """Data that cannot be used: labels outside {-1, +1}, NaN, shape mismatch, empty, ..."""


class ParamError(OracleInputError):
    """A parameter that is unknown, malformed or out of its range."""


class KernelSpecError(OracleInputError):
    """A kernel description that cannot be read."""


class TraceFormatError(OracleInputError):
    """A trace that does not follow ``perceptron-oracle/trace@1``."""


class UnknownAlgorithmError(OracleInputError):
    """An algorithm, implementation or form that is not registered."""
