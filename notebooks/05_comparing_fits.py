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
# # Comparing fits: one law on two model families, two laws on one dataset
#
# Three reference fits from `models/` (`python models/build.py ...`; no sampling here):
#
# * the LR-annealing law (Tissue et al. 2024) on the multi-power-law authors' runs
#   (25M/100M/400M, three training schedules; `annealing_multipowerlaw.nc`);
# * the same law on the OLMo-2 ladder (190M-3B, 0.5-2x Chinchilla, C4 loss;
#   `annealing_olmo_c4.nc`): another model family, tokenizer, data and validation set;
# * the multi-power law (Luo et al. 2025) on the same runs as the first
#   (`multipower_multipowerlaw.nc`).
#
# Do the two families share the law's shape? Which law do the data prefer, and by how much?

# %%
import os
import warnings
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt

from bayescpt import Fit, differences, loo_table, parameter_table, plot_forest

ROOT = Path(os.environ.get("BAYESCPT_ROOT", ".."))
warnings.filterwarnings("ignore")
fits = {
    name: Fit.load(ROOT / "models" / f"{name}.nc")
    for name in ("annealing_multipowerlaw", "annealing_olmo_c4", "multipower_multipowerlaw")
}
for name, f in fits.items():
    d = f.diagnostics()
    print(
        f"{name:26s} {f.law.name:10s} groups {len(f.groups)}  max R-hat {d.max_rhat:.4f}  "
        f"min ESS {d.min_ess_bulk:.0f}  divergences {d.divergences}"
    )

# %% [markdown]
# ## One law, two model families
# Each group is a validation set x model size. The forest plot puts every group's posterior of
# the annealing law's parameters side by side (90 % intervals).

# %%
labels = ["multipowerlaw runs", "OLMo-2 ladder"]
pair = [fits["annealing_multipowerlaw"], fits["annealing_olmo_c4"]]
table = parameter_table(pair, labels)
fig = plot_forest(table)
plt.show()

# %% [markdown]
# The exponent of the power law in the LR area (alpha) and the annealing coefficient (C) against
# model size: within a family they vary smoothly with size; the families differ in level. The
# law's shape is not universal, so a fit on one family is a prior, not an answer, for another.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, p in zip(axes, ("alpha", "C")):
    for j, (label, f) in enumerate(zip(labels, pair)):
        t = table[(table["fit"] == label) & (table["param"] == p)]
        sizes = f.groups.set_index("label").loc[t["group"], "size"].to_numpy(float)
        ax.errorbar(
            sizes,
            t["mean"],
            yerr=[t["mean"] - t["lower"], t["upper"] - t["mean"]],
            fmt="o",
            color=f"C{j}",
            capsize=3,
            label=label,
        )
    ax.set_xscale("log")
    ax.set_xlabel("model size (parameters)")
    ax.set_ylabel(p)
    ax.set_title(f"{p}: posterior mean and 90 % interval per size")
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Two laws, one dataset: PSIS-LOO
# Fits of the same data (equal data hashes) can be ranked by their expected log predictive
# density. ArviZ's `compare` gives the difference and its standard error; the Pareto-k values
# say whether the importance sampling can be trusted.

# %%
same = [fits["annealing_multipowerlaw"], fits["multipower_multipowerlaw"]]
loo = loo_table(same, ["annealing", "multipower"])
print(loo[["rank", "elpd_loo", "p_loo", "elpd_diff", "dse", "weight"]])
az.plot_compare(loo)
plt.show()

# %% [markdown]
# `elpd_diff` is in units of log predictive density summed over the training points, `dse` its
# standard error: a difference of several `dse` is a clear preference. LOO scores how well each
# law predicts a left-out point *of the runs it was fitted on*; whether a law extrapolates to a
# schedule it never saw is the other question, answered by the held-out protocol in
# `benchmarks/RESULTS.md` (and by `bayescpt demo`'s predictions).
#
# Where the laws share a parameter, the posterior difference (multi-power minus annealing) with
# P(difference > 0): the irreducible loss L0 the two laws infer from the same curves.

# %%
diff = differences(same, ["annealing", "multipower"], ["L0", "A", "alpha"])
diff[
    [
        "param",
        "group",
        "reference_mean",
        "fit_mean",
        "diff_mean",
        "diff_lower",
        "diff_upper",
        "p_greater",
    ]
]
