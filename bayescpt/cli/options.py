"""Options and parsers several commands share: the sampler options of the fit commands, every
law's options (from the law registry), a command group with its sub-commands, options declared
as a table, and the JSON config file a ``--config`` option names."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bayescpt.cli.argtypes import nonneg_int, positive_int, seed_int
from bayescpt.curves.model.laws import option_groups


def add_options(parser, table) -> None:
    """Add the options of ``table`` to ``parser`` (a parser or an argument group), in order:
    each entry ``(flags, keywords)``, flags a name or a tuple of names, as ``add_argument``
    takes them."""
    for flags, keywords in table:
        names = (flags,) if isinstance(flags, str) else flags
        parser.add_argument(*names, **keywords)


def command_group(sub, name: str, dest: str, metavar: str = "SUBCOMMAND", **text):
    """Add the command ``name`` (``text``: its help and description) with sub-commands of its own,
    chosen into ``args.<dest>``; returns the sub-commands' subparsers action."""
    group = sub.add_parser(name, **text)
    return group.add_subparsers(dest=dest, required=True, metavar=metavar)


def fit_command(group, data: str, out: str, **text) -> argparse.ArgumentParser:
    """Add the sub-command ``fit`` (``text``: its help and description) to a command group's
    subparsers ``group``: the table to fit (metavar ``data``) and the fit file it writes
    (``--out``, metavar ``out``); returns its parser, for the family's own options."""
    f = group.add_parser("fit", **text)
    f.add_argument("data", type=Path, metavar=data)
    f.add_argument("--out", required=True, type=Path, metavar=out)
    return f


def result_options(p, out: str, plot: str, plot_help: str, draws: str, draws_help: str) -> None:
    """The outputs :func:`~bayescpt.cli.outputs.write_result` writes: ``--out OUT.json`` (help
    ``out``), ``--plot`` and ``--draws-out`` (metavars ``plot``, ``draws``), and ``--force``."""
    p.add_argument("--out", type=Path, metavar="OUT.json", help=out)
    p.add_argument("--plot", type=Path, metavar=plot, help=plot_help)
    p.add_argument("--draws-out", type=Path, metavar=draws, help=draws_help)
    p.add_argument(
        "--force", action="store_true", help="replace existing --out/--plot/--draws-out files"
    )


def sampler_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sampler",
        default="auto",
        help="nutpie (default when installed), pymc, numpyro or blackjax (JAX: GPU path)",
    )
    p.add_argument("--chains", type=positive_int, help="number of chains (default 4)")
    p.add_argument(
        "--draws",
        type=positive_int,
        help="draws per chain after tuning (default: the law's; 1000, 2000 for the cpt "
        "and mixture laws, 3000-4000 for the cpt law's checkpoint and anchored "
        "forms)",
    )
    p.add_argument(
        "--tune",
        type=nonneg_int,
        help="tuning steps per chain (default: the law's; 1000, 400 for the plain "
        "LR-annealing law from the mode (1000 with --init jitter), 2000 for the "
        "mixture law and the cpt law's checkpoint form)",
    )
    p.add_argument("--seed", type=seed_int, help="random seed (default 0); same seed, same numbers")
    p.add_argument(
        "--config",
        type=Path,
        help="JSON file overriding priors/structure (see `bayescpt config --law L`)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when R-hat > 1.01, bulk ESS < 400 or any divergence",
    )
    p.add_argument(
        "--init",
        choices=["map", "jitter"],
        help="where chains start: map (default) = each its own draw around the "
        "posterior mode found by multi-start optimisation; jitter = each "
        "sampler's own start (prior support point + U(-1, 1)); a law with a "
        "short warmup from the mode tunes longer from these (the LR-annealing "
        "law: 1000 instead of 400)",
    )
    p.add_argument(
        "--drop-stuck-chains",
        action="store_true",
        help="drop chains stuck in a minor mode (mean log density far below the "
        "others); the drop is recorded in the fit file and shown by diagnose",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def add_law_options(parser) -> None:
    """Every law's options (``--drop-progress`` ...), from the law registry, one group per law."""
    for title, options in option_groups():
        grp = parser.add_argument_group(title)
        for opt in options:
            kind = (
                {"action": argparse.BooleanOptionalAction}
                if opt.type is bool
                else {"type": opt.type}
            )
            grp.add_argument(opt.cli_flag, dest=opt.name, default=None, help=opt.help, **kind)


def load_config(path):
    """A JSON config file as a dict (None: None); a clear ValueError when missing or invalid."""
    if path is None:
        return None

    def no_constant(name):
        raise ValueError(f"{path}: {name} in the config; expected finite numbers")

    if Path(path).is_dir():
        raise ValueError(f"{path}: a directory, not a JSON config file")
    try:
        return json.loads(Path(path).read_text(), parse_constant=no_constant)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such config file") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
