"""``bayescpt prior-check``: a law's prior predictive on a table's curves, without fitting
(registered through PLUGINS in cli.main). The draws and their summaries come from
:mod:`bayescpt.curves.model.priors`; this module parses, prints and writes."""

from __future__ import annotations

from pathlib import Path

from bayescpt.cli.argtypes import positive_int, probability, seed_int
from bayescpt.cli.curves import _law_options, _read_for_fit
from bayescpt.cli.messages import say
from bayescpt.cli.options import add_law_options, load_config
from bayescpt.cli.outputs import (
    close_figure,
    figure_writer,
    prepare_outputs,
    write_files,
)
from bayescpt.curves.data.table import describe
from bayescpt.curves.evaluate.plots import plot_prior_check
from bayescpt.curves.model.config import make_config
from bayescpt.curves.model.laws import get_law, law_names
from bayescpt.curves.model.priors import DEFAULT_PRIOR_DRAWS, prior_band, prior_check, prior_ranges


def add_commands(sub, sampler_args) -> dict:
    """Add ``prior-check``; returns {command name: handler}."""
    p = sub.add_parser(
        "prior-check",
        help="a law's prior predictive over your curves, no fit",
        description="Draw a law's prior and prior predictive on the model a fit "
        "of DATA.csv would use, print each law parameter's prior range and plot "
        "the data over the prior predictive band, one panel per run.",
    )
    p.add_argument("data", type=Path, metavar="DATA.csv")
    p.add_argument("--law", required=True, choices=law_names())
    p.add_argument(
        "--config",
        type=Path,
        help="JSON file overriding priors/structure (see `bayescpt config --law L`)",
    )
    p.add_argument(
        "--draws",
        type=positive_int,
        default=DEFAULT_PRIOR_DRAWS,
        help=f"prior draws (default {DEFAULT_PRIOR_DRAWS})",
    )
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument(
        "--prob",
        type=probability,
        default=0.9,
        help="probability of the ranges and bands (default 0.9)",
    )
    p.add_argument("--plot", required=True, type=Path, metavar="P.png")
    p.add_argument(
        "--out",
        type=Path,
        metavar="PRIOR.nc",
        help="also write the draws as ArviZ InferenceData (groups prior, "
        "prior_predictive, observed_data)",
    )
    p.add_argument("--force", action="store_true", help="replace existing --plot/--out files")
    add_law_options(p)
    p.set_defaults(max_points=None, all_points=False, quiet=False)
    return {"prior-check": cmd_prior_check}


def cmd_prior_check(a) -> int:

    prepare_outputs(a.force, {"DATA.csv": a.data, "--config": a.config}, plot=a.plot, out=a.out)
    df = _read_for_fit(a)  # the table a fit would see (long curves thinned alike)
    law_options = _law_options(a, df)
    # made once, here: a bad config is one line, before work
    config = make_config(get_law(a.law, **law_options), load_config(a.config))
    say(f"data: {a.data} {describe(df)}")
    say(f"drawing {a.draws} prior draws of the {a.law} law (compiling first)")
    check = prior_check(df, a.law, law_options, config, draws=a.draws, seed=a.seed)
    print(f"prior {a.prob:.0%} ranges of the {a.law} law's parameters (all groups):")
    for r in prior_ranges(check, a.prob).itertuples():
        print(f"  {r.param}: {r.lower:.4g} to {r.upper:.4g} (median {r.median:.4g})")
    band = prior_band(check, a.prob)
    print(
        f"observed losses inside the {a.prob:.0%} prior predictive band: "
        f"{band['inside'].mean():.0%} of {len(band)}"
    )
    fig = plot_prior_check(
        band,
        prob=a.prob,
        title=f"{a.law} law, prior predictive ({a.draws} draws) over {a.data.name}",
    )
    try:
        write_files(
            {
                a.plot: figure_writer(fig, a.plot),
                a.out: None if a.out is None else (lambda tmp: check.idata.to_netcdf(str(tmp))),
            },
            a.force,
        )
    finally:
        close_figure(fig)
    say(f"wrote {a.plot}" + (f" and {a.out}" if a.out is not None else ""))
    return 0
