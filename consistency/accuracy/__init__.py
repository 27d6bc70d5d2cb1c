"""Scoring beyond consistency: proper scores, proxy scores, difficulty-adjusted Brier, significance.

Pure numpy functions, one module per family; inputs are validated by :mod:`.inputs`.
"""
