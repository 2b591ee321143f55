"""``bayescpt mixture fit`` and ``bayescpt mixture cmr`` (a PLUGINS group of cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

from bayescpt.cli.argtypes import finite_float, positive_float, probability
from bayescpt.cli.fitting import load_fit_checked, sample_and_save, verdict
from bayescpt.cli.messages import say
from bayescpt.cli.options import command_group, fit_command, load_config, result_options
from bayescpt.cli.outputs import json_text, prepare_outputs, write_result
from bayescpt.core.config import merge_config
from bayescpt.mixture.data import describe, read_mixture
from bayescpt.mixture.decide import CmrCriterion, cmr_idata, cmr_results
from bayescpt.mixture.fit import MixtureFit
from bayescpt.mixture.model import default_config
from bayescpt.mixture.plots import plot_cmr


def add_commands(sub, sampler_args) -> dict:
    """Add the ``mixture`` command group; returns {command name: handler}."""
    msub = command_group(
        sub,
        "mixture",
        "mixture_command",
        help="critical mixture ratio: fit loss vs domain share, decide",
        description="Laws of loss vs mixture ratio and CPT tokens (Gu et al. "
        "2024, Ye et al. 2024) and the critical mixture ratio with its risk.",
    )
    _add_fit(msub, sampler_args)
    msub.add_parser(
        "config",
        help="print the default mixture-law config (priors, structure)"
        " as JSON, to edit and pass to fit --config",
        description="The defaults of bayescpt.mixture.model.default_config().",
    )
    _add_cmr(msub)
    return {"mixture": _dispatch}


def _add_fit(msub, sampler_args) -> None:
    """``mixture fit``: a mixture CSV to a fit file, with the sampler options worded for it."""
    f = fit_command(
        msub,
        "DATA.csv",
        "MIX.nc",
        help="fit the mixture law to a mixture CSV with NUTS",
        description="Fit the hierarchical mixture law to a CSV with columns run, "
        "model_size, ratio, tokens, val_set, val_role, loss (rows at tokens = 0: the "
        "pre-CPT baseline).",
    )
    f.add_argument(
        "--ratio-form",
        choices=["power", "exp"],
        help="L(R) form: power alpha R^s + beta (Gu et al., default) or exp "
        "c + k exp(t R) (Data Mixing Laws)",
    )
    f.add_argument(
        "--final-only",
        action="store_true",
        help="fit only each run's final-budget losses (the papers' L(R)); same as "
        'config {"token_terms": {"general": 0, "domain": 0}}',
    )
    sampler_args(f)
    for act in f._actions:
        if "--tune" in act.option_strings:
            act.help = "tuning steps per chain (default 2000 for mixture fits)"
        if "--draws" in act.option_strings:
            act.help = "draws per chain after tuning (default 2000 for mixture fits)"
        if "--config" in act.option_strings:
            act.help = "JSON file overriding priors/structure (see `bayescpt mixture config`)"


def _add_cmr(msub) -> None:
    """``mixture cmr``: the critical mixture ratio and its risk from a fit."""
    c = msub.add_parser(
        "cmr",
        help="the critical mixture ratio with intervals from a fit",
        description="P(feasible) over a ratio grid, the CMR's posterior and the "
        "CMR at risk delta, per model size, at a CPT budget.",
    )
    c.add_argument("fit", type=Path, metavar="MIX.nc")
    c.add_argument(
        "--tolerance",
        required=True,
        type=finite_float,
        metavar="EPS",
        help="allowed rise of the general loss: nats (default; the paper uses 0.05) "
        "or a fraction with --relative",
    )
    c.add_argument("--relative", action="store_true", help="EPS is relative (0.01 = 1 %%)")
    c.add_argument(
        "--tokens",
        required=True,
        type=finite_float,
        metavar="T",
        help="CPT budget, in the data's token unit",
    )
    c.add_argument(
        "--risk",
        type=probability,
        default=0.1,
        metavar="DELTA",
        help="CMR at risk: largest R with P(feasible) >= 1 - DELTA (default 0.1)",
    )
    c.add_argument(
        "--prob", type=probability, default=0.9, help="interval probability (default 0.9)"
    )
    c.add_argument("--model-size", type=positive_float, help="only this model size (parameters)")
    c.add_argument("--general", metavar="VAL_SET", help="the general val_set, if several")
    c.add_argument("--domain", metavar="VAL_SET", help="the domain val_set, if several")
    c.add_argument(
        "--budgets",
        type=positive_float,
        nargs="+",
        metavar="T",
        help="also give R_CMR(T) over these budgets, with the paper's a4 T^s4 + b3 "
        "(fitted to the median, and per draw for intervals of a4, s4, b3)",
    )
    result_options(
        c,
        "write the JSON here",
        "PLOT.png",
        plot_help="P(feasible) vs ratio with the CMR interval and loss vs ratio with bands",
        draws="CMR.nc",
        draws_help="also write the draws (CMR per model size; general/domain loss and "
        "feasibility per ratio) as ArviZ InferenceData, group predictions",
    )


def _dispatch(a) -> int:
    return {"fit": cmd_fit, "cmr": cmd_cmr, "config": cmd_config}[a.mixture_command](a)


def cmd_config(a) -> int:

    print(json.dumps(default_config(), indent=2))
    return 0


def cmd_fit(a) -> int:

    prepare_outputs(a.force, {"DATA.csv": a.data, "--config": a.config}, out=a.out)
    df = read_mixture(a.data)
    cfg = load_config(a.config) or {}
    if a.ratio_form:
        cfg = merge_config(cfg, {"ratio_form": a.ratio_form})
    if a.final_only:
        cfg = merge_config(cfg, {"token_terms": {"general": 0, "domain": 0}})
    if not a.quiet:
        say(f"data: {a.data} {describe(df)}")
        say("fitting the mixture law (compiling, then sampling)")
    _, diag = sample_and_save(a, lambda **kw: MixtureFit.run(df, config=cfg, **kw))
    return verdict(diag, a.strict)


def cmd_cmr(a) -> int:

    prepare_outputs(a.force, {"MIX.nc": a.fit}, out=a.out, plot=a.plot, draws_out=a.draws_out)
    if not 0 < a.risk < 1:
        raise ValueError(f"--risk {a.risk:g}; expected a probability in (0, 1)")
    if not 0 < a.prob < 1:
        raise ValueError(f"--prob {a.prob:g}; expected a probability in (0, 1)")
    fit = load_fit_checked(a.fit, MixtureFit)
    results = cmr_results(
        fit,
        a.tokens,
        CmrCriterion(a.tolerance, a.relative, a.general, a.domain),
        a.risk,
        a.prob,
        model_size=a.model_size,
        budgets=a.budgets,
        keep_draws=a.draws_out is not None,
    )
    idata = None if a.draws_out is None else cmr_idata(fit, results)
    for r in results:
        r.pop("_draws", None)
    out = {
        "fit": str(a.fit),
        "tolerance": a.tolerance,
        "relative": a.relative,
        "tokens": a.tokens,
        "risk": a.risk,
        "prob": a.prob,
        "fitted_ratio_range": [fit.r_lo, fit.r_hi],
        "results": results,
    }
    if len(results) == 1:
        out.update({k: results[0][k] for k in ("cmr", "cmr_at_risk", "p_feasible")})
    text = json_text(out)
    fig = None if a.plot is None else plot_cmr(fit, results, prob=a.prob, risk=a.risk)
    write_result(a, text, fig, idata)
    if a.draws_out is not None:
        say(f"wrote {a.draws_out}")
    if a.out:
        say(f"wrote {a.out}")
    else:
        print(text)
    for r in results:
        c = r["cmr"]
        say(
            f"model size {r['model_size'] / 1e6:g}M: CMR median {c['median']:.3f} "
            f"[{c['lower']:.3f}, {c['upper']:.3f}] ({a.prob:.0%}), CMR at risk {a.risk:g}: "
            f"{r['cmr_at_risk']:.3f}" + "".join(f"\n  note: {n}" for n in r["notes"])
        )
    if a.plot:
        say(f"wrote {a.plot}")
    return 0
