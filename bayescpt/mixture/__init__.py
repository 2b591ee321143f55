"""Critical mixture ratio (CMR): how much domain data a continual pre-training run can take.

``data``    the tidy mixture table (run, model_size, ratio, tokens, val_set, val_role, loss)
            and its loaders
``model``   the hierarchical loss-vs-(ratio, tokens) laws of Gu et al. 2024 and Ye et al. 2024
``fit``     MixtureFit: the law sampled, saved, reloaded; loss draws at any (ratio, tokens)
``decide``  feasibility, CMR, P(feasible), CMR at risk, CMR vs budget, per posterior draw
``cmr_law`` the paper's R_CMR(T) = a4 T^s4 + b3 fitted to the CMRs across budgets
``plots``   P(feasible) vs ratio, loss vs ratio with bands, CMR vs budget

The commands ``bayescpt mixture fit`` / ``bayescpt mixture cmr`` live in
:mod:`bayescpt.cli.mixture`.
"""
