"""What every law provides: its parameters, default priors, design features and mean function.

A law's mean function is written once over an array namespace ``xp`` (``numpy`` or
``pytensor.tensor``) so the same code builds the PyMC graph and evaluates posterior draws.

Shapes: a *design* is a dict of arrays whose leading axis is the point axis ``n`` (one entry per
predicted or observed point); matrix features have shape ``(n, K)``. Parameters passed to
:meth:`Law.mean` are arrays broadcastable against ``(..., n)`` (e.g. ``(n,)`` inside the model, or
``(draws, n)`` for prediction); the law adds the trailing axis for its matrix features itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayescpt.core.schedules import Schedule
from bayescpt.curves.model.laws.registry import LawOption


@dataclass(frozen=True)
class Param:
    """One law parameter and its default prior (on the log scale when ``positive``).

    ``loc``/``scale``: population mean of the parameter (log scale if positive)
    ~ Normal(loc, scale).
    ``group_sd``: HalfNormal scale of the spread between groups (validation set x model size).
    ``size_slope_sd``: Normal scale of the slope on log model size (0 disables it).
    ``run_sd``: HalfNormal scale of the spread between runs (schedules) around their group; 0 keeps
    the parameter identical for every run of a group.
    ``group_centered``: sample the group level as u_g ~ Normal(loc_g, sd) (True) or as
    u_g = loc_g + sd * z_g, z_g ~ Normal(0, 1) (False: for a parameter the data pin only weakly
    in each group, where the centred form is a funnel in (u_g, sd)). The same model either way.
    ``run_centered``: the same choice for the schedule level (w_s ~ Normal(0, tau), or tau * z_s).
    """

    name: str
    positive: bool
    loc: float
    scale: float
    group_sd: float
    size_slope_sd: float = 0.0
    run_sd: float = 0.0
    doc: str = ""
    group_centered: bool = True
    run_centered: bool = True


class Law:
    """Interface; see the module docstring."""

    name: str = ""
    params: tuple[Param, ...] = ()
    #: the constructor's keyword arguments, as data (see :mod:`.registry`)
    options: tuple[LawOption, ...] = ()
    #: settings of the design (e.g. lambda, warmup convention); saved with the fit
    default_settings: dict = {}

    def param_names(self) -> list[str]:
        return [p.name for p in self.params]

    def design(
        self, schedule: Schedule, steps: np.ndarray, settings: dict, info: dict | None = None
    ) -> dict:
        """Features of ``schedule`` at ``steps`` (int array, 1 <= step <= T), as numpy arrays.

        ``info`` describes the curve (see :func:`bayescpt.curves.data.table.curve_info`): its
        ``model_size`` (non-embedding parameters or None), ``val_set``, ``val_role``, ``pt_end``
        (last PT step, 0 for no PT rows) and ``replay_ratio``; laws use what they need.
        A pure function of its arguments: settings the design needs from the fitted data are
        filled beforehand by :meth:`settings_from_data`, never here.
        """
        raise NotImplementedError

    def mean(self, xp, theta: dict, X: dict):
        """Expected loss (nats) at the design's points."""
        raise NotImplementedError

    #: names of the quantities :meth:`derived` returns (shown in diagnostics, not judged)
    derived_names: tuple[str, ...] = ()

    def derived(self, xp, theta: dict, settings: dict) -> dict:
        """Quantities reported beside the parameters (natural scale), e.g. a reparametrised one."""
        return {}

    #: sampler settings (draws, tune, ...) a law or mode needs beyond the package's defaults
    default_sampler: dict = {}

    @classmethod
    def resolve_options(cls, df, given: dict) -> dict:
        """The options a fit of table ``df`` records, from the validated ``given`` ones.

        Default: the given options that differ from their defaults (a fit saves only those).
        Laws that choose options from the data override this.
        """
        defaults = {o.name: o.default for o in cls.options}
        return {k: v for k, v in given.items() if v != defaults[k]}

    @classmethod
    def stored_options(cls, options: dict, posterior) -> dict:
        """The options a fit file's model was sampled with, from those it records (``options``)
        and its ``posterior`` (variables by name): for a file written before an option existed,
        the value that reproduces its model. Default: as recorded."""
        return options

    def split_data(self, df):
        """(rows the law's model is fitted to, rows fitted after it by a side model or None).

        Default: every row is the law's.
        """
        return df, None

    def side_sets(self, meta: dict) -> dict:
        """Validation sets a fit predicts as combinations of the law's sets (name -> spec with
        ``general_set`` and ``domain_set``), read from the fit's metadata; none by default."""
        return {}

    def settings_from_data(self, df, settings: dict) -> None:
        """Fill settings that come from the fitted table (saved with the fit); none by default."""

    def check_fit_design(self, X: dict, points) -> None:
        """Refuse fitted points the law cannot describe (raise ValueError); none by default."""

    def model_design(self, X: dict, shared: frozenset) -> dict:
        """The design as the model's graph takes it; ``X`` itself by default.

        ``shared``: the parameters that take one value at every point of the model (no group,
        size or schedule level); :meth:`mean` gets them as scalars. A law may add to ``X`` what
        evaluates a term of only those parameters once per distinct design row, as long as
        :meth:`mean` gives the same values with and without the additions.
        """
        return X

    # helpers --------------------------------------------------------------------------------
    def stack_designs(self, designs: list[dict]) -> dict:
        """Concatenate per-curve designs along the point axis, zero-padding matrix features."""
        out = {}
        for key in designs[0]:
            arrs = [d[key] for d in designs]
            if arrs[0].ndim == 2:
                k = max(a.shape[1] for a in arrs)
                arrs = [np.pad(a, ((0, 0), (0, k - a.shape[1]))) for a in arrs]
            out[key] = np.concatenate(arrs, axis=0)
        return out


def check_steps(schedule: Schedule, steps) -> np.ndarray:
    steps = np.asarray(steps, dtype=np.int64)
    if steps.size and (steps.min() < 1 or steps.max() > schedule.total_steps):
        raise ValueError(
            f"schedule {schedule.name!r}: steps must lie in 1..{schedule.total_steps}"
            f", got {steps.min()}..{steps.max()}"
        )
    return steps


def size_in_millions(info: dict | None, law: str) -> float:
    """The curve's model size in millions of parameters (for laws with an explicit N term)."""
    size = (info or {}).get("model_size")
    if size is None or not np.isfinite(size):
        raise ValueError(f"the {law} law's size extension needs a model_size for every run")
    return float(size) / 1e6
