"""The exact reference implementations: the specification of every algorithm.

Pure Python (``fractions.Fraction``, mpmath where an algorithm is not rational), so the
reference can be read and run on its own: the Perceptron, HO, the p-norm Perceptron, SOP and
ROMMA import and run without numpy (``tests/test_api.py``).  Two float64 error models use
numpy for their float64 linear algebra: PUMMA's (``pumma_errors.py``) and ALMA's error
ellipsoid (``alma.py``), so those two families' modules import it.  One module per family.
"""
