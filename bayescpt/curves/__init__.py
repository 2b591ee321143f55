"""The loss-curve domain: the tidy loss-curve table (:mod:`.data`), the laws of the loss as a
function of the learning-rate schedule (:mod:`.laws`: LR annealing, multi-power, CPT), their
hierarchical PyMC model over model sizes and validation sets (:mod:`.hierarchy`), fitting
(:mod:`.fit`), prediction of new schedules on the stored posterior draws (:mod:`.predict`),
comparison of fits (:mod:`.compare`), simulation, a point-fit baseline, scores and plots. Imports
only :mod:`bayescpt.core`.
"""
