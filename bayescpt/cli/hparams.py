"""``bayescpt hparams fit|predict|plot``: the optimal-LR / batch-size law on the command line."""

from __future__ import annotations

import math
from pathlib import Path

from bayescpt.cli.argtypes import nonneg_float, positive_float, probability, seed_int
from bayescpt.cli.fitting import load_fit_checked, sample_and_save, verdict
from bayescpt.cli.messages import say
from bayescpt.cli.options import command_group, fit_command, load_config, result_options
from bayescpt.cli.outputs import json_text, prepare_outputs, save_figure, write_result
from bayescpt.hparams.data import describe_grid, grid_hash, read_any_grid
from bayescpt.hparams.fit import HparamsFit
from bayescpt.hparams.plots import plot_fit, plot_optimum
from bayescpt.hparams.predict import law_text, optimum_idata, predict_optimum


def _number_list(text: str) -> list[float]:
    """``1e-3,2e-3,4e-3`` -> [0.001, 0.002, 0.004] (argparse type; a clear message otherwise)."""
    import argparse

    out = []
    for item in text.split(","):
        try:
            v = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"value {item.strip()!r} in {text!r} is not a number; expected comma-separated "
                "positive numbers, e.g. 1e-3,2e-3,4e-3"
            ) from None
        if not (v > 0 and math.isfinite(v)):
            raise argparse.ArgumentTypeError(
                f"value {item.strip()!r} in {text!r}; expected a positive number"
            )
        out.append(v)
    return out


def add_commands(sub, sampler_args) -> dict:
    """Add the ``hparams`` command group; returns {command name: handler}."""
    hsub = command_group(
        sub,
        "hparams",
        "hp_command",
        help="optimal learning rate and batch size (Zhou et al.'s "
        "equivalent-compute law): fit an LR x batch grid, predict for CPT",
        description="Fit one hierarchical model to an LR x batch-size grid of "
        "runs over (model size, tokens) cells; predict the optimal LR and batch "
        "size with credible intervals for a new run or a continual pre-training "
        "run.",
    )
    _add_fit(hsub, sampler_args)
    _add_predict(hsub)
    _add_plot(hsub)
    return {"hparams": run}


def _add_fit(hsub, sampler_args) -> None:
    """``hparams fit``: a grid CSV to a fit file, with the sampler options."""
    f = fit_command(
        hsub,
        "GRID.csv",
        "HP.nc",
        help="fit the stage-1 model to a grid CSV",
        description="GRID.csv: one row per run, columns model_size, tokens, lr, "
        "batch_size (tokens), loss [, group]; or the Step Law file "
        "dense_lr_bs_loss.csv (recognised by its header).",
    )
    f.add_argument(
        "--optimum-law",
        choices=["size_tokens", "compute", "loss"],
        default=None,
        help="optimum as power laws in N and D (size_tokens, default), in C = 6ND "
        "only (compute), or in the cell's best loss L (loss: Zhou et al.'s "
        "LR_opt(L), B_opt(L); prediction at L(C_total))",
    )
    f.add_argument("--plot", type=Path, metavar="PNG", help="also write the fit's plot here")
    sampler_args(f)


def _add_predict(hsub) -> None:
    """``hparams predict``: the optimal LR and batch size for a run, and a planned grid's best."""
    p = hsub.add_parser(
        "predict",
        help="optimal LR and batch size with intervals",
        description="A fresh run (--n-params, --tokens), or continual "
        "pre-training from a checkpoint with validation loss --init-loss for "
        "--cpt-tokens tokens (--tokens is then the checkpoint's own budget, "
        "reported for comparison only). lr_opt and batch_size_opt are the smooth "
        "loss bowl's optimum. With --grid-lrs and --grid-batches (a planned grid "
        "search, every pair one run) the output also has grid_best: per "
        "posterior draw the grid run with the lowest predicted loss (bowl + run "
        "noise), summarised as lr and batch_size intervals (grid values) and the "
        "most probable grid points. Use it to check a grid brackets the optimum "
        "and to judge a grid search's winner against the law.",
    )
    p.add_argument("fit", type=Path, metavar="HP.nc")
    p.add_argument(
        "--n-params",
        required=True,
        type=positive_float,
        metavar="N",
        help="non-embedding parameters, e.g. 4.3e8",
    )
    p.add_argument("--tokens", type=positive_float, metavar="D", help="training tokens, e.g. 2e10")
    p.add_argument(
        "--init-loss",
        type=positive_float,
        metavar="L",
        help="the checkpoint's validation loss on the target data (nats)",
    )
    p.add_argument(
        "--init-loss-sd",
        type=nonneg_float,
        metavar="SD",
        help="its measurement noise (default: the fitted run noise at the optimum)",
    )
    p.add_argument(
        "--cpt-tokens", type=nonneg_float, metavar="DC", help="continual pre-training tokens"
    )
    p.add_argument(
        "--grid-lrs",
        type=_number_list,
        metavar="LR1,LR2,...",
        help="the learning rates of a grid search you plan (with --grid-batches): "
        "also predict where its best run will be (JSON block grid_best)",
    )
    p.add_argument(
        "--grid-batches",
        type=_number_list,
        metavar="B1,B2,...",
        help="the batch sizes (tokens) of that grid; every (LR, batch) pair is a run",
    )
    p.add_argument(
        "--prob", type=probability, default=0.9, help="interval probability (default 0.9)"
    )
    p.add_argument("--seed", type=seed_int, default=0)
    result_options(
        p,
        "write the result as JSON",
        "OPT.png",
        plot_help="draw the optimum's posterior in (LR, batch), and the grid's best run",
        draws="OPT.nc",
        draws_help="also write the draws (lr_opt, batch_size_opt; C_pre, C_total; the "
        "grid's best run) as ArviZ InferenceData, group predictions",
    )


def _add_plot(hsub) -> None:
    """``hparams plot``: a fit drawn over the grid it was made on."""
    q = hsub.add_parser(
        "plot",
        help="plot a fit: a cell's loss surface, optima per cell with "
        "intervals, the fitted power laws",
    )
    q.add_argument("fit", type=Path, metavar="HP.nc")
    q.add_argument("data", type=Path, metavar="GRID.csv", help="the grid the fit was made on")
    q.add_argument("--out", required=True, type=Path, metavar="PNG")
    q.add_argument("--force", action="store_true", help="replace an existing --out file")


def run(a) -> int:
    return {"fit": cmd_fit, "predict": cmd_predict, "plot": cmd_plot}[a.hp_command](a)


def cmd_fit(a) -> int:

    prepare_outputs(a.force, {"GRID.csv": a.data, "--config": a.config}, out=a.out, plot=a.plot)
    df = read_any_grid(a.data)
    cfg = load_config(a.config) or {}
    if a.optimum_law:
        cfg["optimum_law"] = a.optimum_law
    if not a.quiet:
        say(f"data: {a.data} {describe_grid(df)}")
        say("fitting the hyperparameter law (compiling, then sampling; a few minutes on 2 cores)")
    fit, diag = sample_and_save(a, lambda **kw: HparamsFit.run(df, config=cfg, **kw))
    print(law_text(fit))
    if a.plot:
        save_figure(plot_fit(fit, df), a.plot, a.force, dpi=100)
        if not a.quiet:
            say(f"wrote {a.plot}")
    return verdict(diag, a.strict)


def cmd_predict(a) -> int:

    prepare_outputs(a.force, {"HP.nc": a.fit}, out=a.out, plot=a.plot, draws_out=a.draws_out)
    fit = load_fit_checked(a.fit, HparamsFit)
    if (a.grid_lrs is None) != (a.grid_batches is None):
        raise ValueError(
            "--grid-lrs and --grid-batches go together (the grid's learning rates "
            "and its batch sizes in tokens)"
        )
    res = predict_optimum(
        fit,
        a.n_params,
        tokens=a.tokens,
        init_loss=a.init_loss,
        cpt_tokens=a.cpt_tokens,
        init_loss_sd=a.init_loss_sd,
        prob=a.prob,
        seed=a.seed,
        grid=(a.grid_lrs, a.grid_batches),
        keep_draws=a.plot is not None or a.draws_out is not None,
    )
    fig = None if a.plot is None else plot_optimum(res)
    idata = None if a.draws_out is None else optimum_idata(fit, res)
    res.pop("_draws", None)
    for w in res["warnings"]:
        say(f"warning: {w}")
    text = json_text(res)
    write_result(a, text, fig, idata)
    if a.plot is not None:
        say(f"wrote {a.plot}")
    if a.draws_out is not None:
        say(f"wrote {a.draws_out}")
    if a.out:
        say(f"wrote {a.out}")
    print(text if not a.out else _short(res))
    return 0


def _short(res: dict) -> str:
    def f(d, unit=""):
        if d["median"] is None:
            return "unbounded (see warnings)"
        lo = "open" if d["lower"] is None else f"{d['lower']:.3g}"
        hi = "open" if d["upper"] is None else f"{d['upper']:.3g}"
        return f"{d['median']:.3g}{unit} [{lo}, {hi}]"

    lines = [
        f"lr_opt          {f(res['lr_opt'])}",
        f"batch_size_opt  {f(res['batch_size_opt'], ' tokens')}",
    ]
    for k in ("C_pre", "C_total"):
        if k in res:
            lines.append(f"{k:<15} {f(res[k], ' FLOPs')}")
    if "grid_best" in res:
        g = res["grid_best"]
        lines.append(f"grid best lr    {f(g['lr'])}")
        lines.append(f"grid best batch {f(g['batch_size'], ' tokens')}")
        lines.append(
            "grid best run   "
            + ", ".join(  # probabilities over all draws
                f"lr {q['lr']:.3g} batch {q['batch_size']:.3g}: {q['prob']:.0%}"
                for q in g["points"][:3]
            )
        )
    return "\n".join(lines)


def cmd_plot(a) -> int:

    prepare_outputs(a.force, {"HP.nc": a.fit, "GRID.csv": a.data}, out=a.out)
    fit = load_fit_checked(a.fit, HparamsFit)
    df = read_any_grid(a.data)

    if fit.meta.get("data_hash") != grid_hash(df):
        say(f"warning: {a.data} is not the grid {a.fit} was fitted on (data hash differs)")
    save_figure(plot_fit(fit, df), a.out, a.force, dpi=100)
    say(f"wrote {a.out}")
    return 0
