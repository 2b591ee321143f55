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
# # Planning a CPT run with risk: the CPT law on real curves, then a chance-constrained plan
#
# The lab's tiny byte-level LMs (data/lab) were pre-trained on English prose (the *general*
# distribution) and continued on Python source (the *domain*), some with a share of prose
# replayed. We fit the CPT learning-dynamics law (Wang et al. 2025) to the middle model size,
# check it on runs it did not see, and then ask the planner's question: which CPT plan lowers
# the Python loss most while keeping the prose loss within a tolerance with 90 % probability?
# `BAYESCPT_FAST=1` (the test suite) samples less.

# %%
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from bayescpt import (
    Fit,
    cpt_law_options,
    plan_request,
    plot_plans,
    predict_frame,
    pt_schedule_from_table,
    read_curves,
    run_plan,
    thin_cpt,
)

ROOT = Path(os.environ.get("BAYESCPT_ROOT", ".."))
FAST = os.environ.get("BAYESCPT_FAST") == "1"
sampling = dict(chains=2, draws=100, tune=200) if FAST else {}
warnings.filterwarnings("ignore")

curves = read_curves(ROOT / "data" / "lab" / "curves.csv.gz")
runs = pd.read_csv(ROOT / "data" / "lab" / "runs.csv")
m = runs[runs["size"] == "m"]
held = m[m["heldout_schedule"] | m["heldout_replay"]]["run"]
train_runs = m[~m["run"].isin(held)]["run"]
train = curves[curves["run"].isin(train_runs)]
print(f"fit on {len(train_runs)} runs of the middle size; held out: {list(held)}")

# %% [markdown]
# ## Fit the CPT law
# Each validation set gets its own law parameters, pooled through the hierarchy; the sign of the
# distribution-shift term follows the set's role (prose loss rises, Python loss falls). The runs
# differ in replay ratio, so the replay extension (Eq. 8) is on; the C-headers set is fitted as
# a * prose + b * Python. These tiny models' pre-training stops far from its loss floor, so the
# law's `anchored` option samples the PT power law's loss and slope at the median transfer area
# instead of L0 and A (which trade off with alpha there and do not converge), and the fit sees
# the losses every 50 steps plus the first CPT steps (`thin_cpt`): the evaluations every 25
# steps are noisy (+-0.03 nats on prose) and halving them halves the sampling time.

# %%
options = cpt_law_options(train, anchored=True)
fit = Fit.run(thin_cpt(train, 50), law="cpt", law_options=options, seed=0, **sampling)
print(options)
diag = fit.diagnostics()
print(diag.to_text())
if not diag.ok:
    print(
        "\nTHE SAMPLER HAS NOT CONVERGED IN THIS RUN: read the predictions and the plan "
        "below as a demonstration of the workflow, not as a decision."
    )

# %% [markdown]
# *Read the diagnostics before anything else.* With the anchored option this fit of the middle
# size converges at the default settings (4 x 1000 after 1000: R-hat 1.004, bulk ESS 719, no
# divergences, 144 s on the shared 2-core machine), and so does the benchmark's fit of all three
# sizes (R-hat 1.004, ESS 818; `benchmarks/RESULTS.md`). The test suite runs this notebook with
# far fewer draws (`BAYESCPT_FAST=1`), which may miss the bars: then the warning above is
# printed. Without the option, L0, A and alpha trade off on these curves and the fit does not
# converge (R-hat up to 1.3). L0 and A are derived here and not interpretable (the PT curves are
# nearly straight in log S1, alpha ~0.02); the law's predictions are what we use.

# %% [markdown]
# ## Runs the fit never saw: a WSD CPT schedule and a 25 % replay ratio

# %%
pred = predict_frame(fit, curves[curves["run"].isin(held)], prob=0.9)
cpt = pred[(pred["phase"] == "cpt")]
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6), sharex=True)
for ax, vs in zip(axes, ["prose", "python", "c_headers"]):
    for j, run in enumerate(held):
        g = cpt[(cpt["run"] == run) & (cpt["val_set"] == vs)].sort_values("step")
        t0 = runs.set_index("run").loc[run, "transfer"]
        ax.fill_between(g["step"] - t0, g["lower"], g["upper"], color=f"C{j}", alpha=0.2)
        ax.plot(g["step"] - t0, g["median"], color=f"C{j}", label=run)
        o = g[g["loss"].notna()]
        ax.plot(o["step"] - t0, o["loss"], ".", color=f"C{j}", ms=3)
    ax.set_title(vs)
    ax.set_xlabel("CPT step")
axes[0].set_ylabel("validation loss (nats/byte)")
axes[0].legend(fontsize=7)
fig.tight_layout()
scored = cpt[cpt["loss"].notna()]
inside = (scored["loss"] >= scored["lower"]) & (scored["loss"] <= scored["upper"])
print(
    f"held-out CPT points inside the 90 % band: {inside.mean():.0%}; mean relative error "
    f"{(scored['median'] / scored['loss'] - 1).abs().mean():.2%}"
)

# %% [markdown]
# ## Plan: peak LR x length x replay x schedule shape, from the stable-phase or annealed checkpoint
# The tolerance is on the final prose loss relative to its value at the checkpoint.

# %%
pt = pt_schedule_from_table(curves, run="m/pt1200/cos-600/r0")  # PT rows to step 1200
request = plan_request(
    tolerance=0.05,
    risk=0.1,
    transfers=[900, 1200],
    shapes=["cosine", "linear", "constant"],
    peak_lrs=[5e-4, 1e-3, 2e-3],
    steps=[300, 600, 1200],
    decay_fracs=[0.25],
    replay_ratios=[0.0, 0.125, 0.25, 0.5],
    warmup=50,
    general="prose",
    domain="python",
)
res = run_plan(fit, pt, request)
table, draws = res.table, res.draws
print(f"{len(table)} plans, {table['feasible'].sum()} feasible at P(rise <= 0.05) >= 0.9")
cols = [
    "transfer",
    "shape",
    "peak_lr",
    "steps",
    "replay_ratio",
    "domain_mean",
    "domain_lower",
    "domain_upper",
    "general_rise_mean",
    "p_within_tolerance",
    "chosen",
]
print(table[table["pareto"]].sort_values("p_within_tolerance")[cols].to_string(index=False))
fig = plot_plans(table, tolerance=0.05, risk=0.1)

# %% [markdown]
# ## How replay buys safety
# For the chosen plan's schedule, the posterior of the final prose-loss rise and the final Python
# loss as the replay ratio changes: replay lowers the rise and costs some domain loss.

# %%
chosen = table[table["chosen"]].iloc[0] if table["chosen"].any() else table.iloc[0]
same = table[
    (table["transfer"] == chosen["transfer"])
    & (table["shape"] == chosen["shape"])
    & (table["peak_lr"] == chosen["peak_lr"])
    & (table["steps"] == chosen["steps"])
]
idx = same.index.to_numpy()
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for i in idx:
    r = table.loc[i, "replay_ratio"]
    axes[0].hist(draws.rise[:, i], bins=40, alpha=0.5, label=f"replay {r:g}")
    axes[1].hist(draws.domain[:, i], bins=40, alpha=0.5, label=f"replay {r:g}")
axes[0].axvline(0.05, color="k", ls="--", label="tolerance")
axes[0].set_xlabel("final prose loss - loss at the checkpoint (nats/byte)")
axes[1].set_xlabel("final Python loss (nats/byte)")
for ax in axes:
    ax.set_ylabel("posterior draws")
    ax.legend(fontsize=7)
fig.tight_layout()
