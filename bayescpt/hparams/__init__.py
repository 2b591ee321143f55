"""Optimal learning rate and batch size (Zhou et al. 2026's equivalent-compute law, Bayesian).

Stage 1 (:mod:`.model`, sampled and saved by :mod:`.fit`): one hierarchical PyMC model of an
(LR, batch size) grid of runs over several (model size N, tokens D) cells. Stage 2
(:mod:`.predict`): per posterior draw, the optimum for a fresh run of N parameters on D tokens, or
for continual pre-training from a checkpoint placed on the loss-compute law by its validation loss.
"""
