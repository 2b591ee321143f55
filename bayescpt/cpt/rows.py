"""The loss potential of a PT schedule at its transfer step (:func:`loss_potential`): the
paper's eta_T / max_i eta_i over the PT steps i <= T (Wang et al. 2025, arXiv 2505.07796).
CPT runs as rows of the curve table: :mod:`bayescpt.curves.data.cpt_rows`.
"""

from __future__ import annotations

from bayescpt.core.schedules import Schedule


def loss_potential(schedule: Schedule, pt_end: int) -> float:
    """Final PT learning rate / PT peak learning rate (1: not annealed, 0: annealed to zero)."""
    pt_lr = schedule.lr[: pt_end + 1]
    return float(pt_lr[-1] / pt_lr.max()) if pt_lr.max() > 0 else float("nan")
