"""Risk-aware planning of a continual pre-training (CPT) run on a fitted CPT law: CPT runs as
rows of the curve table (:mod:`.rows`), per-draw decision quantities of a plan (:mod:`.outlook`),
the chance-constrained choice over schedule shape, peak LR, length and checkpoint
(:mod:`.plan`, one step a module, assembled by :mod:`.run`), simulated PT -> CPT runs
(:mod:`.simulate`) and plots. Sits above the domains: it uses the curve fits and, for default
peak LRs and the mixture check, the hyperparameter and mixture laws.
"""
