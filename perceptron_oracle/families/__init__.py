"""The papers' families, one declaration each (``family.Family``), in the order every table
and report lists them.  A new family is one more module here beside its reference and fast
modules; the registry reads :data:`ALL` (docs: "Add a family")."""

from __future__ import annotations

from ..family import Family
from . import alma, higher_order, perceptron, pnorm_perceptron, pumma, romma, second_order

__all__ = ["ALL"]

ALL: tuple[Family, ...] = (perceptron.FAMILY, higher_order.FAMILY, pnorm_perceptron.FAMILY,
                           second_order.FAMILY, romma.FAMILY, pumma.FAMILY, alma.FAMILY)
