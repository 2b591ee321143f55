"""The loss-curve domain, in sub-packages along the data's way:

* :mod:`.data`: the tidy loss-curve table (``table``: its columns and per-curve views), read and
  validated once (``validate``), thinned for a fit (``thinning``), a run's observed prefix
  (``observed``) and CPT runs written as rows (``cpt_rows``);
* :mod:`.model`: the laws of the loss as a function of the learning-rate schedule (``laws``: LR
  annealing, multi-power, CPT), the fit's config (``config``), their hierarchical PyMC model over
  model sizes and validation sets (``hierarchy``), prior draws (``priors``), fitting (``fit``),
  the schedule level a fit learned (``schedule_level``) and a CPT fit's other validation sets
  (``other_sets``);
* :mod:`.forecast`: prediction of new schedules on the stored posterior draws, with one entry
  point (``forecast``), from a run's observed prefix (``prefix``, ``discrepancy``), the training
  range and its warnings (``extrapolation``) and live watching of a run (``watch``);
* :mod:`.evaluate`: comparison of fits (``compare``), scores, a point-fit baseline, simulation
  and plots.

Imports only :mod:`bayescpt.core`.
"""
