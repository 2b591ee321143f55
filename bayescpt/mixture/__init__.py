"""Critical mixture ratio (CMR): how much domain data a continual pre-training run can take.

``data``    the tidy mixture table (run, model_size, ratio, tokens, val_set, val_role, loss) + loaders
``model``   the hierarchical loss-vs-(ratio, tokens) laws of Gu et al. 2024 and Ye et al. 2024
``decide``  feasibility, CMR, P(feasible), CMR at risk, CMR vs budget, per posterior draw
``plots``   P(feasible) vs ratio, loss vs ratio with bands, CMR vs budget

The commands ``bayescpt mixture fit`` / ``bayescpt mixture cmr`` live in
:mod:`bayescpt.cli.mixture`.
"""
