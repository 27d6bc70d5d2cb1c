"""The accuracy lens: forecasts against outcomes (proper scores), against other forecasters before
outcomes exist (proxy scores), difficulty-adjusted Brier, significance, ranking, and consistency
versus accuracy; :mod:`.pairing` says which results are one forecaster. The consistency lens
(no outcomes needed) is :mod:`consistency.metrics`.

Pure numpy functions, one module per family; inputs are validated by :mod:`.inputs`.
"""
