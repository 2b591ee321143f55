"""The plan section: a plan table (``bayescpt plan --out PLANS.csv``) as the choice in words,
the plans drawn (:func:`bayescpt.cpt.plots.plot_plans`) and the leading rows with
P(feasible)."""

from __future__ import annotations

import pandas as pd

from bayescpt.cpt.plots import plot_plans
from bayescpt.report import blocks as B

#: columns every plan table has (what :func:`bayescpt.cpt.plan.write_plans` writes)
PLAN_COLUMNS = {"p_within_tolerance", "domain_mean", "pareto", "chosen"}
#: the most plans listed (the chosen one, the Pareto front, then the best of the rest)
MAX_ROWS = 25


def is_plan_table(columns) -> bool:
    return PLAN_COLUMNS <= set(columns)


def _flag(col: pd.Series) -> pd.Series:
    """A yes/no column as bools, however the CSV spelled it."""
    if col.dtype == bool:
        return col
    return col.astype(str).str.strip().str.lower().isin(["true", "1", "yes"])


def read_plans(path) -> pd.DataFrame:
    table = pd.read_csv(path)
    for c in ("pareto", "chosen", "feasible", "mixture_ok"):
        if c in table.columns:
            table[c] = _flag(table[c])
    return table


def chosen_words(table: pd.DataFrame, tolerance=None) -> tuple[str, bool]:
    """The choice in one sentence, and whether a plan was chosen."""
    chosen = table[table["chosen"]]
    eps = f"{tolerance:g}" if tolerance is not None else "the tolerance"
    feasible = int(table["feasible"].sum()) if "feasible" in table.columns else None
    of = f" ({feasible} of {len(table)} plans feasible)" if feasible is not None else ""
    if not len(chosen):
        return f"No plan was chosen: none meets the risk constraint{of}.", False
    c = chosen.iloc[0]
    replay = f", replay {c['replay_ratio']:g}" if c.get("replay_ratio", 0) > 0 else ""
    return (
        f"Chosen{of}: {c['shape']} CPT, peak LR {c['peak_lr']:g}, {int(c['steps'])} steps "
        f"from PT step {int(c['transfer'])}{replay}: expected final domain loss "
        f"{c['domain_mean']:.4f} [{c['domain_lower']:.4f}, {c['domain_upper']:.4f}], "
        f"P(general rise <= {eps}) = {c['p_within_tolerance']:.3f}."
    ), True


def plan_section(path, tolerance=None, risk=None, prob: float = 0.9) -> list[dict]:
    """Blocks of the plan table at ``path``."""
    table = read_plans(path)
    words, ok = chosen_words(table, tolerance)
    order = pd.concat(
        [
            table[table["chosen"]],
            table[table["pareto"] & ~table["chosen"]].sort_values(
                "p_within_tolerance", ascending=False
            ),
            table[~table["pareto"] & ~table["chosen"]].sort_values("domain_mean"),
        ]
    )
    shown = order.head(MAX_ROWS).rename(columns={"p_within_tolerance": "P(feasible: rise <= eps)"})
    marked = [i for i, c in enumerate(shown["chosen"]) if c]
    out = [
        B.verdict(words, ok),
        B.image(
            plot_plans(table, tolerance=tolerance, risk=risk, prob=prob),
            f"{len(table)} CPT plans: expected domain loss against P(feasible)",
        ),
        B.table(
            shown,
            caption=f"the chosen plan, the Pareto front, then the rest by expected "
            f"domain loss ({min(len(table), MAX_ROWS)} of {len(table)} "
            f"plans; all in {path})",
            marked=marked,
        ),
    ]
    if "extrapolation" in table.columns:
        ext = table["extrapolation"].dropna().astype(str)
        ext = ext[ext.str.strip() != ""]
        if len(ext):
            out.append(
                B.text(
                    f"{len(ext)} plans extrapolate beyond the fit's training range: "
                    + "; ".join(dict.fromkeys(ext))
                    + "."
                )
            )
    return out
