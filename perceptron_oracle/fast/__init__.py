"""Optimised float64 implementations, one module per family, one function per form.

Every form takes the same arguments as the family's reference and must reproduce its mistakes
and updates trial for trial, except after a trial the reference flags as fragile (SPEC.md).
"""
