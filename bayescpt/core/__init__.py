"""The bottom layer, which knows no domain: fit files (NetCDF save/load with format and version
checks), NUTS sampling through one entry point (nutpie, PyMC, NumPyro or BlackJAX; slowly mixing
runs run longer), sampling diagnostics, checked configuration, the shared table-validation
helpers, learning-rate schedules with their S1/S2 areas, and plotting helpers. It imports no
other layer of the package.
"""
