"""Forecasts of a loss-curve fit: the one entry point (:mod:`.forecast`), prediction on the
posterior draws (:mod:`.predict`), from a run's observed prefix (:mod:`.prefix`,
:mod:`.discrepancy`), the training range and its warnings (:mod:`.extrapolation`) and watching a
live run (:mod:`.watch`)."""
