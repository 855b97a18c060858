"""The exact reference implementations: the specification of every algorithm.

Pure Python (``fractions.Fraction``, mpmath where an algorithm is not rational); numpy is never
imported here, so the reference can be read and run on its own.  One module per family.
"""
