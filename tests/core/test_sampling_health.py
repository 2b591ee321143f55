"""Sampling that is never silently bad: a chain stuck in a known minor mode is named, with its
log-density gap and the parameter that separates it; dropping it is opt-in and recorded; tree
depth and per-chain cost are reported, the depth cap applied."""

import json
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytest

import bayescpt
from bayescpt import __version__
from bayescpt.cli.fitting import sample_and_save
from bayescpt.cli.main import build_parser
from bayescpt.core.chains import (
    chain_stats,
    drop_chains,
    drop_stuck_chains,
    find_stuck_chains,
)
from bayescpt.core.diagnostics import SamplingWarning, summarize, warn_if_bad
from bayescpt.core.fitfile import FORMAT, load_idata, save_idata
from bayescpt.core.sampling import resolve_settings, sample_model
from tests.helpers import sigint_default

# module-scoped fixtures: the module's tests run on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("core/test_sampling_health")

GAP = 50.0  # nats between the two modes' log densities (same shape, so also between chain means)
STUCK = 3  # the chain started in the minor mode
STARTS = [{"x": 0.0}] * 3 + [{"x": 20.0}]


def two_modes():
    """x: N(0, 1) plus a copy at 20 weighted exp(-GAP), with a barrier of ~ 200 nats between;
    y: N(0, 1), the same in both modes."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 30)
        pm.Normal("y", 0, 1)
        major = pm.logp(pm.Normal.dist(0, 1), x)
        minor = pm.logp(pm.Normal.dist(20, 1), x) - GAP
        pm.Potential("two_modes", pm.math.logaddexp(major, minor))
    return model


def sample(initvals=None, **settings):
    s = resolve_settings(
        None, settings.pop("sampler", "pymc"), chains=4, draws=300, tune=300, seed=5, **settings
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sample_model(two_modes(), s, cores=1, initvals=initvals)


@pytest.fixture(scope="module")
def stuck():
    return sample(STARTS)


@pytest.fixture(scope="module")
def healthy():
    return sample([{"x": 0.0}] * 4)


def test_report_names_the_stuck_chain_its_gap_and_parameter(stuck):
    diag = summarize(stuck, ["x", "y"])
    assert [s.chain for s in diag.stuck] == [STUCK]
    s = diag.stuck[0]
    assert abs(s.gap - GAP) < 2.0
    assert s.params[0][0] == "x" and abs(s.params[0][1] - 20) < 1 and abs(s.params[0][2]) < 1
    assert diag.max_rhat > 1.01 and not diag.ok
    rhat_line = next(p for p in diag.problems() if p.startswith("R-hat"))
    assert f"chain {STUCK} sits in a minor mode 50 nats lower" in rhat_line
    assert "run longer" not in rhat_line and "running longer will not help" in rhat_line
    assert rhat_line in diag.to_text()


def test_healthy_fit_has_no_mode_line(healthy):
    diag = summarize(healthy, ["x", "y"])
    assert diag.stuck == () and diag.ok, diag.to_text()
    assert "minor mode" not in diag.to_text() and "note:" not in diag.to_text()
    same, found = drop_stuck_chains(healthy)
    assert found == [] and same is healthy and "dropped_chains" not in healthy.posterior.attrs


def test_drop_stuck_chains_drops_exactly_it_and_records_it(tmp_path):
    idata = sample(STARTS, drop_stuck_chains=True)
    assert list(idata.posterior["chain"].values) == [0, 1, 2]
    assert list(idata.sample_stats["chain"].values) == [0, 1, 2]
    assert float(idata.posterior["x"].max()) < 10  # the minor mode's draws are gone
    (rec,) = json.loads(idata.posterior.attrs["dropped_chains"])
    assert (
        rec["chain"] == STUCK and abs(rec["lp_gap"] - GAP) < 2.0 and "minor mode" in rec["reason"]
    )
    path = save_idata(
        idata,
        {"format": FORMAT, "law": "two_modes", "bayescpt_version": __version__},
        tmp_path / "fit.nc",
    )
    back, attrs = load_idata(path)
    diag = summarize(back, ["x", "y"])
    assert json.loads(attrs["dropped_chains"]) == [rec]
    assert diag.ok and diag.stuck == () and diag.chains == 3
    assert f"note: chain {STUCK} was dropped" in diag.to_text()  # never silent
    with pytest.warns(SamplingWarning, match=f"chain {STUCK} was dropped"):
        warn_if_bad(diag)


def test_drop_chains_by_hand(stuck):
    out = drop_chains(stuck, [0], reason="by hand")
    assert list(out.posterior["chain"].values) == [1, 2, 3]
    assert "dropped_chains" not in stuck.posterior.attrs  # not in place by default
    (rec,) = json.loads(out.posterior.attrs["dropped_chains"])
    assert rec["chain"] == 0 and rec["reason"] == "by hand"
    assert rec["lp_gap"] < -10  # chain 0 sits above the kept chains' mean (one is stuck)
    with pytest.raises(ValueError, match="no chain"):
        drop_chains(stuck, [7])
    with pytest.raises(ValueError, match="every chain"):
        drop_chains(stuck, [0, 1, 2, 3])


def test_cli_flag_drops_and_records(stuck, tmp_path):
    args = build_parser().parse_args(
        [
            "fit",
            "data.csv",
            "--law",
            "annealing",
            "--out",
            str(tmp_path / "f.nc"),
            "--drop-stuck-chains",
        ]
    )
    assert args.drop_stuck_chains

    class Toy:  # the interface sample_and_save uses: idata, config, save, diagnostics
        idata = stuck.copy()
        config = {
            "sampler": {
                "chains": stuck.posterior.sizes["chain"],
                "draws": stuck.posterior.sizes["draw"],
            }
        }

        def save(self, path, overwrite=False):
            return save_idata(
                self.idata,
                {"format": FORMAT, "law": "two_modes", "bayescpt_version": __version__},
                path,
                overwrite,
            )

        def diagnostics(self):
            return summarize(self.idata, ["x", "y"])

    args.quiet = True
    _, diag = sample_and_save(args, lambda **kw: Toy())
    assert [d["chain"] for d in diag.dropped] == [STUCK] and diag.ok
    _, attrs = load_idata(tmp_path / "f.nc")
    assert json.loads(attrs["dropped_chains"])[0]["chain"] == STUCK


def test_tree_depth_is_reported_and_capped(healthy):
    stats = chain_stats(healthy)
    assert healthy.sample_stats.attrs["max_tree_depth"] == 10  # default unchanged
    assert list(stats.index) == [0, 1, 2, 3] and (stats["at_max"] == 0).all()
    assert (stats["seconds"] > 0).all() and (stats["grad_evals"] >= 300).all()
    capped = sample(None, max_tree_depth=1)
    stats = chain_stats(capped)
    assert (stats["depth_max"] == 1).all() and (stats["at_max"] > 0.5).all()
    diag = summarize(capped, ["x", "y"])
    assert any("trees hit the max depth 1" in n for n in diag.notes())
    assert "per chain:" in diag.to_text() and "depth_mean" in diag.to_text()


def test_nutpie_fit_files_are_read_too():
    """nutpie names its log density ``logp`` and its depth ``depth``: a bundled reference fit."""
    path = Path(bayescpt.__file__).parent / "resources" / "models" / "annealing_multipowerlaw.nc"
    idata = az.from_netcdf(str(path))
    stats = chain_stats(idata)
    assert {"lp_mean", "grad_evals", "depth_mean", "at_max"} <= set(stats.columns)
    assert np.isfinite(stats["lp_mean"]).all() and stats["seconds"].isna().all()
    assert find_stuck_chains(idata) == []


def test_nutpie_takes_the_depth_cap():
    s = resolve_settings(None, "nutpie", chains=2, draws=200, tune=200, seed=1, max_tree_depth=1)
    with pm.Model() as model:
        pm.Normal("x", 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = chain_stats(sample_model(model, s, cores=1))
    assert (stats["depth_max"] == 1).all() and (stats["at_max"] > 0.3).all()


def test_slow_mixing_on_a_spread_points_at_the_non_centred_level():
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((4, 300))
    draws[3] += 0.6  # chains disagree, but no chain sits in a minor mode
    idata = az.from_dict(posterior={"alpha_sd": np.exp(draws), "mu": draws})
    for name, expected in (("alpha_sd", "non-centred"), ("mu", "run longer")):
        diag = summarize(idata, [name])
        line = next(p for p in diag.problems() if p.startswith("R-hat"))
        assert expected in line, line


def test_one_chain_is_reported_as_unjudged_not_a_crash(healthy):
    """One chain has no R-hat: the report says so in words (and fails the fit under --strict)
    instead of raising on an all-NaN column."""
    one = healthy.isel(chain=[0])
    diag = summarize(one, ["x", "y"])
    assert not diag.ok
    line = diag.problems()[0]
    assert line.startswith("R-hat cannot be computed from 1 chain(s)") and "--chains" in line
    assert "R-hat cannot be computed" in diag.to_text()


# ---- slow mixing is run longer; stuck chains and divergences are not (core.sampling.run_longer)
def _diag(ess, rhat, divergences=0, stuck=()):
    """A Diagnostics with one parameter of the given bulk ESS and R-hat."""
    import pandas as pd

    from bayescpt.core.diagnostics import Diagnostics

    table = pd.DataFrame({"r_hat": [rhat], "ess_bulk": [ess], "ess_tail": [ess]}, index=["a"])
    return Diagnostics(table, divergences, 1000, 4, stuck=stuck)


def test_extension_rule():
    from bayescpt.core.mixing import AUTO_FROM_DRAWS, extension
    from bayescpt.core.sampling import DEFAULT_SAMPLER_SETTINGS

    assert AUTO_FROM_DRAWS == DEFAULT_SAMPLER_SETTINGS["draws"]

    s = resolve_settings(None, "nutpie")  # default: 1000 draws, extend auto (4)
    assert extension(_diag(284, 1.012), s) == (2000, "bulk ESS 284 < 400 and R-hat 1.012 > 1.01")
    assert extension(_diag(150, 1.005), s)[0] == 4000  # ceil(1.25 x 400 / 150) = 4
    assert extension(_diag(21, 1.14), s)[0] == 4000  # capped at 4x
    assert extension(_diag(900, 1.02), s)[0] == 2000  # R-hat alone: twice the draws
    assert extension(_diag(900, 1.005), s) is None  # healthy
    assert extension(_diag(284, 1.0, divergences=3), s) is None  # more draws do not fix these
    assert extension(_diag(284, 1.0, stuck=("chain 3",)), s) is None
    assert extension(_diag(284, 1.0), dict(s, extend=1)) is None
    assert extension(_diag(284, 1.0), dict(s, draws=300)) is None  # a quick look stays quick
    assert extension(_diag(100, 1.0), dict(s, draws=300, extend=3))[0] == 900
    # a run already extended: the cap counts from the draws asked for
    assert extension(_diag(398, 1.0), dict(s, draws=2000), base=1000)[0] == 4000
    assert extension(_diag(398, 1.0), dict(s, draws=4000), base=1000) is None
    # a run at its cap and still failing: the problem line says it was already run longer
    d = _diag(300, 1.02)
    d.extended = {"draws": 1000, "to": 4000, "why": "bulk ESS 75 < 400"}
    assert all("already run 4x longer automatically, 1000 -> 4000" in p for p in d.problems())
    assert not any("already" in p for p in _diag(300, 1.02).problems())
    for bad in (0, 2.5, True, "4"):
        with pytest.raises(ValueError, match="extend"):
            resolve_settings({"extend": bad}, "nutpie")


def test_a_trace_cut_short_is_returned_unjudged_not_extended(healthy):
    """A sampler stopped by Ctrl-C returns the draws it had (nutpie: possibly none); judging
    such a trace failed inside ArviZ ("Too few elements for interval calculation") before the
    command could see the interrupt. It is returned as it is, for the caller to refuse."""
    from bayescpt.core.mixing import run_longer

    def judge(idata):
        raise AssertionError("a partial trace was judged")

    def sample(settings):
        raise AssertionError("a partial trace was run longer")

    s = resolve_settings(None, "nutpie")
    for n in (0, 3):
        part = healthy.isel(draw=slice(0, n))
        assert run_longer(part, s, judge, sample) is part
    calls = []
    full = healthy.isel(draw=slice(0, 50))
    assert run_longer(
        full, dict(s, draws=50), lambda i: calls.append(1) or _diag(900, 1.0), sample
    ) is full and calls == [1]


def test_an_error_on_the_partial_trace_after_ctrl_c_is_reported_as_the_interrupt(tmp_path):
    """The sampler catches Ctrl-C and returns a partial trace, and then something fails on it:
    the command says it was interrupted and wrote nothing (exit 130), not the failure."""
    import subprocess
    import sys

    out = tmp_path / "f.nc"
    code = (
        "import os, signal, time\n"
        "from bayescpt.cli.fitting import sample_and_save\n"
        "from bayescpt.cli.interrupts import Interrupted\n"
        "from bayescpt.cli.main import build_parser\n"
        "a = build_parser().parse_args(['fit', 'd.csv', '--law', 'annealing', "
        f"'--out', {str(out)!r}])\n"
        "a.quiet = True\n"
        "def run(**kw):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(5)   # Ctrl-C lands here\n"
        "    except KeyboardInterrupt:\n"
        "        pass    # as nutpie does: it returns the draws it had\n"
        "    raise ValueError('Too few elements for interval calculation.')\n"
        "try:\n"
        "    sample_and_save(a, run)\n"
        "except Interrupted as e:\n"
        "    print('INTERRUPTED', e)\n"
    )
    with sigint_default():
        p = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
    assert "INTERRUPTED" in p.stdout and "nothing written" in p.stdout, (p.stdout, p.stderr)
    assert not out.exists()


def test_slow_fit_is_run_longer_with_the_same_chains_and_says_so(small_curves):
    """A curve fit whose 4 x 100 draws give a bulk ESS below 400 is sampled again with more
    draws from the same seed and starts: nutpie's chains then begin with the shorter run's draws
    (the same chains, run longer), the fit's diagnostics say what was done and why."""
    from bayescpt.curves.model.fit import Fit

    df = small_curves[0]
    kw = dict(law="annealing", sampler="nutpie", chains=4, draws=100, tune=300, seed=2, warn=False)
    short = Fit.run(df, config={"sampler": {"extend": 1}}, **kw)
    ds = short.diagnostics()
    assert ds.min_ess_bulk < 400 and ds.extended is None
    longer = Fit.run(df, config={"sampler": {"extend": 3}}, **kw)
    dl = longer.diagnostics()
    rec = json.loads(longer.idata.sample_stats.attrs["extended"])
    assert rec["draws"] == 100 and rec["to"] == dl.draws > 100 and "bulk ESS" in rec["why"]
    assert dl.min_ess_bulk > ds.min_ess_bulk
    for v in ("L0", "A", "alpha", "C"):
        np.testing.assert_array_equal(
            longer.idata.posterior[v].values[:, :100], short.idata.posterior[v].values
        )
    assert any(n.startswith("run longer: 100 draws per chain gave bulk ESS") for n in dl.notes())
    assert "run longer" in dl.to_text()
    if not dl.ok:  # at the cap and still failing: the problem line says it was run longer
        assert any("already run" in p for p in dl.problems())


def test_short_warmup_from_the_mode_only():
    """The LR-annealing law tunes 400 steps from the posterior mode and 1000 from the samplers'
    own starts (on OLMo-2 seed 2 one jittered chain stayed in a minor mode after 300); an
    explicit ``tune`` holds for either start; other laws tune 1000 either way."""
    from bayescpt.curves.model.config import make_config
    from bayescpt.curves.model.laws import get_law

    base = make_config(get_law("annealing"))["sampler"]
    assert resolve_settings(base, "auto")["tune"] == 400
    assert resolve_settings(base, "auto", init="jitter")["tune"] == 1000
    assert resolve_settings(dict(base, init="jitter"), "auto")["tune"] == 1000  # from a config
    assert resolve_settings(base, "auto", init="jitter", tune=200)["tune"] == 200
    assert resolve_settings(base, "auto", tune=500)["tune"] == 500
    own = make_config(get_law("annealing"), {"sampler": {"tune": 500}})["sampler"]
    assert resolve_settings(own, "auto", init="jitter")["tune"] == 500  # a config's tune too
    for law in ("multipower", "cpt"):
        assert make_config(get_law(law)).get("sampler", {}).get("tune") is None
    assert resolve_settings(None, "auto", init="jitter")["tune"] == 1000
    with pytest.raises(ValueError, match="tune_jitter"):
        resolve_settings({"tune_jitter": -1}, "auto")
