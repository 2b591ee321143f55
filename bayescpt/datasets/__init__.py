"""Public and bundled data turned into the package's tables: loaders for published loss-curve
releases (:mod:`.public`: the multi-power-law curves, the OLMo-2 ladder), the mixing-laws CPT
experiment as CPT curves (:mod:`.mixinglaws`), and the bundled quick-start data and reference
fits (:mod:`.bundled`). Every loader returns a table validated by the domain that reads it.
"""
