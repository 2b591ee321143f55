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
# # Optimal learning rate and batch size for a CPT run, with credible intervals
#
# The Step Law grid (Li et al. 2025; `data/steplaw_grid.csv`): 1,911 dense-model runs over LR and
# batch size at 17 (model size N, tokens D) cells. `models/hparams_steplaw.nc` is the hierarchical
# fit of it (`python models/build.py hparams_steplaw`): within each cell the loss is a bowl in
# (log LR, log batch); across cells the bowl's optimum follows power laws in N and D and the best
# loss follows L(C) = L0 + A C^-g. A CPT checkpoint is placed on that curve by its validation loss
# (its *equivalent pre-training compute* C_pre, Zhou et al. 2026), and the optimum is read at
# C_pre + the CPT compute. Every number below is a posterior distribution, not a point.

# %%
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayescpt import HparamsFit, law_text, plot_fit, predict_optimum, read_grid

ROOT = Path(os.environ.get("BAYESCPT_ROOT", ".."))
warnings.filterwarnings("ignore")
grid = read_grid(ROOT / "data" / "steplaw_grid.csv")
fit = HparamsFit.load(ROOT / "models" / "hparams_steplaw.nc")
print(fit.diagnostics().to_text().splitlines()[0])
print(law_text(fit))

# %% [markdown]
# ## The fitted laws against the grid
# Top left: one cell's runs coloured by loss, the fitted bowl's contours, the posterior optimum
# and the grid's best run. The other panels: each cell's optimum (90 % interval) against the
# data budget with the fitted power law per model size, and the best loss against compute.

# %%
fig = plot_fit(fit, grid)
plt.show()

# %% [markdown]
# ## A fresh run: 1B parameters on 100B tokens

# %%
fresh = predict_optimum(fit, 1.0e9, tokens=1.0e11)
for k in ("lr_opt", "batch_size_opt"):
    r = fresh[k]
    print(f"{k:15s} median {r['median']:.3g}  90 % [{r['lower']:.3g}, {r['upper']:.3g}]")

# %% [markdown]
# ## CPT from a checkpoint: how sure are we, as the checkpoint gets better?
# A 1.07B-parameter checkpoint continued for 20B tokens. Its validation loss fixes C_pre through
# the inverse of L(C); close to the fitted floor L0 the inverse blows up, so C_pre -- and with it
# the optimum -- becomes unidentified. The intervals below widen accordingly, and `predict`
# warns (open interval ends) where more than the tails of the draws have no finite C_pre.

# %%
losses = np.round(np.arange(1.96, 2.42, 0.04), 3)
rows = []
for L in losses:
    r = predict_optimum(fit, 1.07e9, init_loss=float(L), cpt_tokens=2e10)
    rows.append(
        {
            "init_loss": L,
            **{
                f"{k}_{q}": r[k][q]
                for k in ("lr_opt", "batch_size_opt", "C_pre")
                for q in ("median", "lower", "upper")
            },
            "warning": "; ".join(w.split(":")[0] for w in r["warnings"]),
        }
    )
cpt = pd.DataFrame(rows)
cpt[
    [
        "init_loss",
        "C_pre_median",
        "C_pre_lower",
        "C_pre_upper",
        "lr_opt_median",
        "batch_size_opt_median",
        "warning",
    ]
]

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for ax, k, label in zip(
    axes,
    ("C_pre", "lr_opt", "batch_size_opt"),
    ("equivalent PT compute C_pre (FLOPs)", "optimal peak LR", "optimal batch (tokens)"),
):
    med = cpt[f"{k}_median"].astype(float)
    lo = cpt[f"{k}_lower"].astype(float)
    hi = cpt[f"{k}_upper"].astype(float)
    ax.fill_between(cpt["init_loss"], lo, hi, alpha=0.3, label="90 % interval")
    ax.plot(cpt["init_loss"], med, "o-", label="median")
    ax.set_yscale("log")
    ax.set_xlabel("checkpoint validation loss (nats)")
    ax.set_ylabel(label)
    warned = cpt["warning"] != ""
    if warned.any():
        ax.axvspan(
            cpt["init_loss"].min() - 0.02,
            cpt.loc[warned, "init_loss"].max() + 0.02,
            color="red",
            alpha=0.08,
            label="predict warns",
        )
axes[0].legend(fontsize=8)
fig.suptitle("CPT of a 1.07B model for 20B tokens: optimum vs the checkpoint's loss")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## More CPT tokens, more equivalent compute
# At a fixed checkpoint (loss 2.25), the optimum as the CPT budget grows: the batch grows with
# compute as the paper says. On this grid the optimal LR at fixed N *rises* with tokens (the
# fitted D exponent is positive, as in the authors' own fit), so it rises with CPT tokens too;
# across model sizes it falls.

# %%
budgets = np.geomspace(1e9, 1e12, 7)
rows = [
    {
        "cpt_tokens": T,
        **{
            f"{k}_{q}": r[k][q]
            for k in ("lr_opt", "batch_size_opt")
            for q in ("median", "lower", "upper")
        },
    }
    for T in budgets
    for r in [predict_optimum(fit, 1.07e9, init_loss=2.25, cpt_tokens=float(T))]
]
by_budget = pd.DataFrame(rows)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, k, label in zip(
    axes, ("lr_opt", "batch_size_opt"), ("optimal peak LR", "optimal batch (tokens)")
):
    ax.fill_between(
        by_budget["cpt_tokens"],
        by_budget[f"{k}_lower"],
        by_budget[f"{k}_upper"],
        alpha=0.3,
        label="90 % interval",
    )
    ax.plot(by_budget["cpt_tokens"], by_budget[f"{k}_median"], "o-", label="median")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CPT tokens")
    ax.set_ylabel(label)
axes[0].legend(fontsize=8)
fig.suptitle("checkpoint at loss 2.25 (1.07B): optimum vs CPT budget")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Where will my grid search's best run be?
# A grid search picks the best of a few runs, and the bowl is flat at the bottom, so its best run
# scatters around the smooth optimum by a grid step or two. With the grid a team can afford
# (here 6 LRs x 5 batch sizes for the fresh 1B run above), the posterior gives the probability
# of each grid point holding the best run (the five most probable shown): a small grid can be
# placed where that probability is.

# %%
lrs = np.geomspace(7.5e-4, 4.8e-3, 6)
batches = np.geomspace(2.6e5, 4.2e6, 5)
res = predict_optimum(fit, 1.0e9, tokens=1.0e11, grid=(lrs, batches))
gb = res["grid_best"]
print(
    f"grid-best LR {gb['lr']['median']:.3g} [{gb['lr']['lower']:.3g}, {gb['lr']['upper']:.3g}],"
    f" batch {gb['batch_size']['median']:.3g} [{gb['batch_size']['lower']:.3g}, "
    f"{gb['batch_size']['upper']:.3g}] tokens"
)
for w in res["warnings"]:
    print("warning:", w)
prob = np.zeros((len(batches), len(lrs)))
for point in gb["points"]:
    i = int(np.argmin(abs(np.log(batches / point["batch_size"]))))
    j = int(np.argmin(abs(np.log(lrs / point["lr"]))))
    prob[i, j] = point["prob"]
fig, ax = plt.subplots(figsize=(6, 3.8))
im = ax.imshow(prob, origin="lower", cmap="Blues", vmin=0)
ax.set_xticks(range(len(lrs)), [f"{x:.2g}" for x in lrs])
ax.set_yticks(range(len(batches)), [f"{b / 1e6:.2g}M" for b in batches])
for (i, j), p in np.ndenumerate(prob):
    if p > 0:
        ax.text(
            j,
            i,
            f"{p:.2f}",
            ha="center",
            va="center",
            fontsize=8,
            color="white" if p > prob.max() / 2 else "black",
        )
ax.set_xlabel("learning rate")
ax.set_ylabel("batch size (tokens)")
ax.set_title("P(this grid point is the best run): 1B params, 100B tokens", fontsize=10)
fig.colorbar(im, ax=ax, label="probability")
fig.tight_layout()
plt.show()
