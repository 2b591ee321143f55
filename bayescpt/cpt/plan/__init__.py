"""Risk-aware CPT planning over a fitted CPT law: which plan, and how sure it won't break the model.

A *plan* is a set of CPT decisions from a PT checkpoint: the transfer step on the PT schedule (which
fixes the checkpoint's loss potential), the CPT schedule's shape, peak learning rate, re-warmup,
decay fraction and length, and the replay ratio where the fit has the replay extension. The
planner (:func:`bayescpt.cpt.run.run_plan`) takes a :class:`~bayescpt.cpt.plan.request.PlanRequest`
and runs these steps, one module each:

* :mod:`.grid` - every combination of the decisions, one row per plan, and each plan's schedule;
* :mod:`.memory` - refuses a grid whose evaluation would not fit in memory;
* :mod:`.evaluate` - per posterior draw and plan the final domain and general losses, the general
  rise and its peak (common random numbers across plans);
* :mod:`.checks` - the optional hparams (optimal peak LR) and mixture (feasible mixture) checks;
* :mod:`.decide` - feasibility P(rise <= eps) >= 1 - delta, the objective, the Pareto front;
* :mod:`.files` - the PT schedule read from a curve table, the plans written as CSV.

Where the plans leave the fit's training range is :mod:`bayescpt.cpt.plan_range`.
"""
