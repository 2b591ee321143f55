# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Quick start: a Bayesian LR-annealing law, fitted, checked and asked about unseen schedules
#
# The multi-power-law authors trained 25M, 100M and 400M models with nine learning-rate
# schedules. We fit the LR-annealing law (LAWS.md section 1) hierarchically on three schedules
# per size, check the sampler, and predict the six schedules it never saw, with 90 % intervals.
# `BAYESCPT_FAST=1` (the test suite) does not sample: it loads the bundled reference fit of the
# same runs instead (`models/annealing_multipowerlaw.nc`: this `Fit.run` with twice the default
# draws, every 8th kept); the numbers in the text are from a full run.

# %%
import os
import warnings
from pathlib import Path

import numpy as np

from bayescpt import (
    TRAIN_SCHEDULES,
    Fit,
    data_hash,
    parameter_table,
    percent_text,
    plot_forest,
    plot_predictions,
    predict_frame,
    read_curves,
    score,
    split,
)

ROOT = Path(os.environ.get("BAYESCPT_ROOT", ".."))
FAST = os.environ.get("BAYESCPT_FAST") == "1"
warnings.filterwarnings("ignore", category=FutureWarning)

curves = read_curves(ROOT / "data" / "multipowerlaw.csv")
train, test = split(curves)
print(
    f"{curves['run'].nunique()} runs; fitting {train['run'].nunique()} "
    f"({', '.join(TRAIN_SCHEDULES)}), predicting {test['run'].nunique()}"
)

# %% [markdown]
# ## Fit and diagnose
# Every fit reports R-hat, effective sample sizes and divergences, and says what to do when one
# fails.

# %%
if FAST:
    fit = Fit.load(ROOT / "models" / "annealing_multipowerlaw.nc")
    assert fit.meta["data_hash"] == data_hash(train), "the reference fit is of other runs"
else:
    fit = Fit.run(train, law="annealing", seed=0)
diag = fit.diagnostics()
print(diag.to_text())

# %% [markdown]
# ## Posterior of the law's parameters per model size
# Larger models reach a lower irreducible loss L0; the annealing coefficient C says how much a
# learning-rate decay lowers the loss.

# %%
table = parameter_table([fit], ["annealing law"])
fig = plot_forest(table[table["param"].isin(["L0", "A", "alpha", "C"])])

# %% [markdown]
# ## Predict the schedules the fit never saw
# The bands are 90 % predictive intervals for an observed loss; the score table gives the mean
# relative error and the share of held-out points inside the band (both in %), per model size.

# %%
pred = predict_frame(fit, test, prob=0.9)
print(percent_text(score(pred)))
some = pred[pred["run"].str.startswith("100M/")]
fig = plot_predictions(
    some,
    title="100M: six unseen schedules, 90 % predictive bands",
    observed=train[train["run"].str.startswith("100M/")],
)

# %% [markdown]
# ## Save, reload, predict identically
# A fit is one NetCDF file with its law, priors, package version and a hash of its data.

# %%
out = Path(os.environ.get("BAYESCPT_NOTEBOOK_OUT", "."))
path = out / "quickstart_fit.nc"
fit.save(path, overwrite=True)
again = Fit.load(path)
p2 = predict_frame(again, test.head(200), prob=0.9, seed=1)
p1 = predict_frame(fit, test.head(200), prob=0.9, seed=1)
assert np.allclose(p1["mean"], p2["mean"], equal_nan=True)
print(f"saved {path} ({path.stat().st_size / 1e6:.1f} MB); reloaded predictions identical")
