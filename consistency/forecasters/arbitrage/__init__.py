"""The ArbitrageForecaster (paper §5, appendix G), in one place: the forecaster (:mod:`.forecaster`),
one arbitrage step on a tuple (:mod:`.step`), the sidecar file of its call trees (:mod:`.sidecar`) and
``cc arbitrage replay``, which recomputes those trees exactly (:mod:`.replay`, imported on use)."""

from consistency.forecasters.arbitrage.forecaster import ArbitrageForecaster, ArbitrageStats, BudgetExceeded
from consistency.forecasters.arbitrage.sidecar import SIDECAR, text_key

__all__ = ["SIDECAR", "ArbitrageForecaster", "ArbitrageStats", "BudgetExceeded", "text_key"]
