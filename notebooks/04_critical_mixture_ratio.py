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
# # How much domain data can the CPT mixture take? The critical mixture ratio, with risk
#
# The Data Mixing Laws CPT experiment (Ye et al. 2024; `data/mixture_ct70m.csv`): Pythia-70M
# continued for 10K steps on mixtures of the Pile (general) and Python code (domain) at five
# Python shares R. The question: the largest domain share whose aggregated Pile loss stays at its
# pre-CPT level (tolerance 0). `models/mixture_ct70m.nc` is the hierarchical fit of
# loss = c + k exp(t R) per validation set with a power law in CPT tokens
# (`python models/build.py mixture_ct70m`). The critical ratio (CMR) is computed per posterior
# draw, for one *new* run (its own run deviation), so its interval is the risk of the run you
# will launch.

# %%
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from bayescpt import (
    CmrCriterion,
    MixtureFit,
    cmr_report,
    cmr_vs_tokens,
    describe_mixture,
    feasibility,
    plot_cmr,
    plot_loss_vs_ratio,
    read_mixture,
)

ROOT = Path(os.environ.get("BAYESCPT_ROOT", ".."))
warnings.filterwarnings("ignore")
data = read_mixture(ROOT / "data" / "mixture_ct70m.csv")
fit = MixtureFit.load(ROOT / "models" / "mixture_ct70m.nc")
print(describe_mixture(data))
print(fit.diagnostics().to_text().splitlines()[0])

# %% [markdown]
# ## The law against the runs
# Final-budget loss against the domain share on the general (Pile) and domain sets: the law's
# 90 % credible band and the 90 % predictive interval of a new run.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, vs in zip(axes, sorted(fit.groups["val_set"].unique())):
    plot_loss_vs_ratio(fit, 70e6, vs, 10000, ax=ax, title=f"{vs}: loss after 10K CPT steps")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The critical ratio and its risk
# P(feasible) per ratio: the share of draws whose general loss stays within tolerance of its
# baseline (and whose domain loss falls). The CMR interval is where that probability drops; at a
# 10 % risk the planner should stay at `cmr_at_risk`, not at the median. Over CPT budgets the
# critical ratio moves as the law's token terms say (right panel).

# %%
budgets = [2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000]
rep = cmr_report(fit, 70e6, 10000, CmrCriterion(0.0))
rep["cmr_vs_tokens"] = cmr_vs_tokens(fit, 70e6, budgets, 0.0).to_dict("records")
c = rep["cmr"]
print(
    f"CMR (Python share) median {c['median']:.3f}, 90 % [{c['lower']:.3f}, {c['upper']:.3f}]; "
    f"at 10 % risk {rep['cmr_at_risk']:.3f}"
)
print(
    f"as the Pile share: {1 - c['median']:.3f} [{1 - c['upper']:.3f}, {1 - c['lower']:.3f}] "
    "(the authors' point answer: 0.285)"
)
fig = plot_cmr(fit, [rep])
plt.show()

# %% [markdown]
# ## Risk vs tolerance
# How the largest safe domain share changes with the tolerance the team accepts on the general
# loss (nats) and the risk it takes: each curve is one risk level.

# %%
tolerances = np.linspace(0.0, 0.02, 9)
fig, ax = plt.subplots(figsize=(5.5, 3.8))
for risk in (0.5, 0.2, 0.1, 0.05):
    safe = [feasibility(fit, 70e6, 10000, float(eps)).cmr_at_risk(risk) for eps in tolerances]
    ax.plot(tolerances, safe, "o-", ms=3, label=f"risk {risk:.0%}")
ax.set_xlabel("tolerance on the Pile loss rise (nats)")
ax.set_ylabel("largest safe Python share R")
ax.set_title("critical mixture ratio at a chosen risk")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
