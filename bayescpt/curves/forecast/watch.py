"""A run in progress followed against a fit: each new evaluation checked against the forecast made
before it was seen, then the forecast of the rest updated (``bayescpt watch``).

The planned schedule of the run (its rows ``run, step, lr [, val_set, model_size]`` to the last
step) is fixed; evaluations arrive in batches (what the log holds at each poll). For a batch of
new losses ``y_i`` at steps ``s_i``, with ``D`` the evaluations seen before::

    band_i  = the ``band_prob`` predictive interval at s_i of p(loss | fit, D)   (prefix forecast)
    outside = y_i < band_i.lower  or  y_i > band_i.upper
    alert   = the curve's last ``confirm`` evaluations all outside, on the same side
    then D <- D + batch, and p(loss at the last step | fit, D) at ``prob`` is the updated forecast

A calibrated 99 % band leaves 1 % of a run's evaluations outside by chance (one or two of a
run's 171); ``confirm`` = 2 in a row on one side happens by chance about 2.5e-5 times per
evaluation, while a run that has left its course stays outside: the alert comes one evaluation
later.

Both forecasts are :func:`bayescpt.curves.forecast.prefix.forecast_with_prefix` (importance weights
over the fit's posterior draws x fresh deviations of the run's own schedule level, with the fit's
discrepancy model of a run's smooth departure from the law where the fit stores one,
``discrepancy``; with no evaluation seen, the plain forecast of an unseen schedule). A loss outside
the 99 % band says the run is not doing what the fit expected of it: a bug, a data problem or a law
that does not hold for it. Losses inside the initial warmup are not checked (outside every law's
domain; the fit skipped them too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayescpt.curves.data.observed import merge_observed
from bayescpt.curves.data.table import schedules_of
from bayescpt.curves.data.validate import validate_curves
from bayescpt.curves.forecast.prefix import forecast_with_prefix
from bayescpt.curves.model.fit import Fit

KEY = ["run", "val_set", "step"]


@dataclass
class WatchUpdate:
    """What one batch of evaluations changed: ``checks`` (one row per new loss: ``run, val_set,
    step, loss, mean, lower, upper, outside, alert``, the band at ``band_prob``; ``side`` +1
    above it, -1 below, 0 inside), ``final`` (one row per
    curve: the updated forecast at its last planned step, ``mean, lower, upper`` at ``prob`` and
    the weights' ``ess``), and the ``seen`` count of evaluations so far."""

    checks: pd.DataFrame
    final: pd.DataFrame
    seen: int

    @property
    def alerts(self) -> pd.DataFrame:
        return self.checks[self.checks["alert"]]


class Watch:
    """Follow the runs of ``schedule`` (a validated table, losses ignored) against ``fit``."""

    def __init__(
        self,
        fit: Fit,
        schedule: pd.DataFrame,
        prob: float = 0.9,
        band_prob: float = 0.99,
        seed: int = 0,
        confirm: int = 2,
        discrepancy="auto",
    ):
        if not 0 < prob < 1 or not 0 < band_prob < 1:
            raise ValueError("prob and band_prob must be probabilities strictly between 0 and 1")
        if int(confirm) < 1:
            raise ValueError(f"confirm={confirm}; expected at least 1 evaluation")
        self.confirm = int(confirm)
        self.streak: dict = {}  # (run, val_set) -> (side, evaluations in a row outside)
        sched = validate_curves(schedule, need_loss=False).copy()
        sched["loss"] = np.nan
        self.fit, self.schedule, self.prob, self.band_prob, self.seed = (
            fit,
            sched,
            prob,
            band_prob,
            seed,
        )
        self.discrepancy = discrepancy
        self.runs = schedules_of(sched)
        skip = fit.config["settings"].get("skip_warmup", True)
        self.warmup = {r: (s.warmup_steps if skip else 0) for r, s in self.runs.items()}
        self.seen = pd.DataFrame(columns=KEY + ["loss"])

    def table(self, losses: pd.DataFrame) -> pd.DataFrame:
        """The schedule with ``losses`` (NaN: predict only) put in (:func:`merge_observed`)."""
        return merge_observed(self.schedule, losses)

    def update(self, observed: pd.DataFrame) -> WatchUpdate | None:
        """Check the evaluations of ``observed`` (rows run, val_set, step, loss) not seen before;
        None when there are none."""
        obs = observed[observed["loss"].notna()][KEY + ["loss"]].copy()
        key = pd.MultiIndex.from_frame(obs[KEY])
        old = (
            pd.MultiIndex.from_frame(self.seen[KEY].astype({"step": "int64"}))
            if len(self.seen)
            else pd.MultiIndex.from_tuples([], names=KEY)
        )
        new = obs[~key.isin(old)]
        if new.empty:
            return None
        ahead = pd.concat([self.seen, new.assign(loss=np.nan)], ignore_index=True)
        before = forecast_with_prefix(
            self.fit,
            self.table(ahead),
            prob=self.band_prob,
            seed=self.seed,
            discrepancy=self.discrepancy,
        )
        checks = new.merge(before[KEY + ["mean", "lower", "upper"]], on=KEY, how="left")
        warm = checks["run"].map(self.warmup)
        checks = checks[checks["step"] >= warm].reset_index(drop=True)
        checks["side"] = np.where(
            checks["loss"] > checks["upper"], 1, np.where(checks["loss"] < checks["lower"], -1, 0)
        )
        checks["outside"] = checks["side"] != 0
        checks = checks.sort_values(["run", "val_set", "step"], ignore_index=True)
        alert = []
        for r in checks.itertuples():
            side, n = self.streak.get((r.run, r.val_set), (0, 0))
            n = n + 1 if r.side != 0 and r.side == side else int(r.side != 0)
            self.streak[(r.run, r.val_set)] = (r.side, n)
            alert.append(n >= self.confirm)
        checks["alert"] = alert
        self.seen = pd.concat([self.seen, new], ignore_index=True)
        after = forecast_with_prefix(
            self.fit,
            self.table(self.seen),
            prob=self.prob,
            seed=self.seed,
            discrepancy=self.discrepancy,
        )
        last = after.groupby(["run", "val_set"])["step"].transform("max")
        final = after[after["step"] == last][
            ["run", "val_set", "step", "mean", "lower", "upper", "ess"]
        ].reset_index(drop=True)
        return WatchUpdate(checks, final, len(self.seen))

    def finished(self) -> bool:
        """Every planned curve has an evaluation at its last planned step."""
        if self.seen.empty:
            return False
        ends = self.schedule.groupby(["run", "val_set"])["step"].max()
        got = self.seen.groupby(["run", "val_set"])["step"].max()
        return bool(all(got.get(k, -1) >= v for k, v in ends.items()))
