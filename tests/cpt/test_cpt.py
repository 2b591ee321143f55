"""The CPT learning-dynamics law: data model, the law's behaviour with the paper's parameters,
recovery on simulated runs, and the CLI round trip (fit -> predict a new CPT plan)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core import schedules as S
from bayescpt.core.tables import DataError
from bayescpt.cpt.rows import loss_potential
from bayescpt.cpt.simulate import PAPER_FIG3
from bayescpt.curves.data.cpt_rows import cpt_rows
from bayescpt.curves.data.table import curve_info
from bayescpt.curves.data.validate import read_curves, validate_curves
from bayescpt.curves.model.laws import get_law
from bayescpt.curves.model.laws.cpt import CPTLaw, with_bref
from bayescpt.curves.model.laws.cpt_options import cpt_law_options
from tests.conftest import OTHER_AB

ROLES = {"general": "general", "domain": "domain"}
PT = S.wsd(10000, 2e-4, decay_steps=2000, final=2e-5, warmup_steps=200, name="pt")


def _curve(theta, role, transfer, seg, law=None):
    """The law's loss on one set over PT (to ``transfer``) then ``seg``: (cpt steps, loss)."""
    law = law or CPTLaw()
    head = S.Schedule(PT.lr[: transfer + 1], PT.warmup_steps)
    full = head.then(seg)
    steps = np.arange(transfer, full.total_steps + 1)
    info = {"val_role": role, "val_set": role, "pt_end": transfer}
    X = law.design(full, steps, law.default_settings, info)
    th = {k: np.asarray(v) for k, v in with_bref(theta).items() if k != "B"}
    return steps - transfer, law.mean(np, th, X), X


# ---- the law with the paper's Fig. 3 parameters ------------------------------------------------


@pytest.mark.parametrize("transfer", [8000, 10000])
def test_paper_fig3_general_rises_then_recovers_domain_falls(transfer):
    seg = S.rewarmup(6000, 2e-4, 100, final=0.0, shape="cosine")
    t, gen, _ = _curve(PAPER_FIG3["general"], "general", transfer, seg)
    _, dom, _ = _curve(PAPER_FIG3["domain"], "domain", transfer, seg)
    peak = int(np.argmax(gen))
    assert gen[peak] > gen[0] + 0.05  # the general loss rises after the transfer ...
    assert 0 < peak < t.size - 1  # ... peaks inside the run ...
    assert gen[-1] < gen[peak] - 0.02  # ... and recovers as the LR anneals
    assert dom[-1] < dom[0] - 0.2  # the domain loss falls
    assert np.all(np.diff(dom[t > 200]) < 1e-6)  # and keeps falling after the re-warmup


def test_paper_fig3_shift_term_independent_of_transfer_step():
    seg = S.rewarmup(4000, 2e-4, 100, final=0.0, shape="cosine")
    law = CPTLaw()
    shifts = []
    for transfer in (6000, 8000, 10000):
        _, loss, X = _curve(PAPER_FIG3["general"], "general", transfer, seg, law)
        no_shift = dict(PAPER_FIG3["general"], B=0.0)
        _, loss0, _ = _curve(no_shift, "general", transfer, seg, law)
        shifts.append(loss - loss0)
    # the PT (and thus the power-law and annealing terms) differ, the shift does not
    assert not np.allclose(
        _curve(PAPER_FIG3["general"], "general", 6000, seg)[1],
        _curve(PAPER_FIG3["general"], "general", 10000, seg)[1],
    )
    np.testing.assert_allclose(shifts[0], shifts[1], atol=1e-12)
    np.testing.assert_allclose(shifts[0], shifts[2], atol=1e-12)
    assert shifts[0][-1] == pytest.approx(
        0.366
        * (
            1
            - (1 + 28.0 * _curve(PAPER_FIG3["general"], "general", 8000, seg)[2]["S1cpt"][-1])
            ** -0.189
        ),
        rel=1e-9,
    )


def test_bref_is_the_shift_at_the_reference_area():
    th = with_bref(PAPER_FIG3["domain"], shift_ref=1.0)
    B = CPTLaw().derived(np, th, {"shift_ref": 1.0})["B"]
    assert B == pytest.approx(PAPER_FIG3["domain"]["B"], rel=1e-12)
    assert th["Bref"] < th["B"]


def test_replay_shift_factor_is_one_without_replay_and_zero_with_pure_pt():
    law = CPTLaw(replay=True)
    seg = S.rewarmup(2000, 2e-4, 100, final=0.0, shape="cosine")
    head = S.Schedule(PT.lr[:8001], PT.warmup_steps)
    full = head.then(seg)
    steps = np.array([8000, 9000, 10000])
    th = {k: np.asarray(v) for k, v in with_bref(PAPER_FIG3["general"]).items() if k != "B"}
    th.update(a1=np.asarray(0.0), k=np.asarray(2.0))
    base = CPTLaw().mean(
        np,
        {k: v for k, v in th.items() if k not in ("a1", "k")},
        CPTLaw().design(full, steps, {}, {"val_role": "general", "pt_end": 8000}),
    )
    out = {}
    for r in (0.0, 1.0):
        X = law.design(full, steps, {}, {"val_role": "general", "pt_end": 8000, "replay_ratio": r})
        out[r] = law.mean(np, th, X)
    np.testing.assert_allclose(out[0.0], base)  # r = 0: the law without replay
    no_shift = with_bref(dict(PAPER_FIG3["general"], B=0.0))
    X = CPTLaw().design(full, steps, {}, {"val_role": "general", "pt_end": 8000})
    flat = CPTLaw().mean(np, {k: np.asarray(v) for k, v in no_shift.items() if k != "B"}, X)
    np.testing.assert_allclose(out[1.0], flat, atol=1e-12)  # r = 1: PT data only, no shift


def test_other_role_is_refused_with_guidance():
    law = get_law("cpt")
    with pytest.raises(ValueError, match="'general' or 'domain'"):
        law.design(PT, np.array([5000]), {}, {"val_role": "other", "val_set": "c"})


def test_loss_potential():
    assert loss_potential(PT, 8000) == pytest.approx(1.0)
    assert loss_potential(PT, 10000) == pytest.approx(0.1)


# ---- the CPT data model -------------------------------------------------------------------------


def _table():
    seg = S.rewarmup(1000, 2e-4, 50, final=0.0, shape="cosine")
    head = S.Schedule(PT.lr[:5001], PT.warmup_steps)
    return cpt_rows(
        "r1",
        head,
        seg,
        ROLES,
        loss_steps=[3000, 5000, 5500, 6000],
        losses={"general": [3.5, 3.4, 3.6, 3.55], "domain": [3.3, 3.2, 2.9, 2.8]},
        replay_ratio=0.25,
    )


def _csv(df, tmp_path, name="cpt.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def test_cpt_table_round_trip_and_curve_info(tmp_path):
    df = read_curves(_csv(_table(), tmp_path))
    info = curve_info(df, "r1", "domain")
    assert info["pt_end"] == 5000 and info["val_role"] == "domain"
    assert info["replay_ratio"] == 0.25


@pytest.mark.parametrize(
    "edit, match",
    [
        (
            lambda d: d.assign(phase=d["phase"].replace("cpt", "finetune")),
            "phase.*expected 'pt' or 'cpt'",
        ),
        (lambda d: d.assign(replay_ratio=1.5), "replay_ratio.*1.5"),
        (
            lambda d: d.assign(replay_ratio=np.where(d["step"] > 5500, 0.5, 0.25)),
            "a run has one replay ratio",
        ),
        (
            lambda d: d.assign(val_role=d["val_role"].replace("domain", "target")),
            "val_role.*'target'",
        ),
        (
            lambda d: d.assign(val_role=np.where(d["val_set"] == "domain", np.nan, d["val_role"])),
            "validation set 'domain', which has no role",
        ),
        (
            lambda d: d.assign(phase=np.where(d["step"] == 3000, "cpt", d["phase"])),
            "CPT row at or before the end of the run's PT",
        ),
    ],
)
def test_cpt_bad_input_names_the_problem(tmp_path, edit, match):
    path = _csv(edit(_table()), tmp_path)
    with pytest.raises(DataError, match=match) as err:
        read_curves(path)
    assert str(path) in str(err.value)


def test_cpt_law_options_follow_the_data():
    df = _table()
    assert cpt_law_options(df) == {
        "replay": False,
        "unknown_pt": False,
        "size_extension": False,
        "checkpoint": False,
    }
    two = pd.concat([df, df.assign(run="r2", replay_ratio=0.5)])
    assert cpt_law_options(two)["replay"] is True
    no_pt = df[df["phase"] == "cpt"].assign(run="base-unknown")
    assert cpt_law_options(pd.concat([df, no_pt]))["unknown_pt"] is True
    assert cpt_law_options(two, replay=False)["replay"] is False


def _one_point_table(transfer=5000):
    """Two replay ratios from one checkpoint, whose loss is the only PT loss."""
    seg = S.cosine(1000, float(PT.lr[transfer]), 2e-5)
    head = S.Schedule(PT.lr[: transfer + 1], PT.warmup_steps)
    steps = [transfer, transfer + 500, transfer + 1000]
    return pd.concat(
        [
            cpt_rows(
                f"r{r}",
                head,
                seg,
                ROLES,
                loss_steps=steps,
                losses={"general": [3.4, 3.6, 3.55], "domain": [3.2, 2.9, 2.8]},
                replay_ratio=r,
            )
            for r in (0.1, 0.5)
        ],
        ignore_index=True,
    )


def test_checkpoint_mode_is_the_same_law_anchored_at_the_checkpoint():
    """Lc = L0 + A S1T^-alpha - C1 S2T and G = A alpha S1T^(-alpha-1) give the full law's curve."""
    seg = S.cosine(3000, float(PT.lr[8000]), 2e-5)
    theta = with_bref(PAPER_FIG3["general"])
    _, full, X = _curve(PAPER_FIG3["general"], "general", 8000, seg)
    s1t, s2t = X["S1pt"][0], X["S2pt"][0]
    lc = theta["L0"] + theta["A"] * s1t ** -theta["alpha"] - theta["C1"] * s2t
    law = CPTLaw(checkpoint=True)
    settings = dict(
        law.default_settings,
        checkpoint_alpha=theta["alpha"],
        checkpoint_loss={"general": lc},
        checkpoint_areas=[s1t, s2t],
    )
    full_sched = S.Schedule(PT.lr[:8001], PT.warmup_steps).then(seg)
    steps = np.arange(8000, full_sched.total_steps + 1)
    Xc = law.design(
        full_sched, steps, settings, {"val_role": "general", "val_set": "general", "pt_end": 8000}
    )
    th = {k: np.asarray(theta[k]) for k in ("C2", "Bref", "E", "beta")}
    th["G"] = np.asarray(theta["A"] * theta["alpha"] * s1t ** (-theta["alpha"] - 1))
    ck = law.mean(np, th, Xc)
    # the PT power law's CPT continuation and the shift agree; only C1's term is frozen at S2T
    np.testing.assert_allclose(ck, full, rtol=1e-10)
    a = law.derived(np, {**th, "Bref": theta["Bref"]}, settings)["A"]
    assert a == pytest.approx(theta["A"])
    other = S.Schedule(PT.lr[:9001], PT.warmup_steps).then(seg)
    with pytest.raises(ValueError, match="checkpoint with PT areas"):
        law.design(
            other,
            np.arange(9000, 9100),
            settings,
            {"val_role": "general", "val_set": "general", "pt_end": 9000, "run": "x"},
        )
    with pytest.raises(ValueError, match="no loss at the checkpoint for validation set 'domain'"):
        law.design(
            full_sched,
            steps,
            settings,
            {"val_role": "domain", "val_set": "domain", "pt_end": 8000, "run": "x"},
        )


def test_checkpoint_mode_follows_the_data_and_refuses_pt_curves():
    from bayescpt.curves.model.config import default_config
    from bayescpt.curves.model.hierarchy import prepare

    one = _one_point_table()
    assert cpt_law_options(one) == {
        "replay": True,
        "unknown_pt": False,
        "size_extension": False,
        "checkpoint": True,
    }
    law = get_law("cpt", checkpoint=True, replay=True)
    settings = default_config(law)["settings"]
    prep = prepare(one, law, settings)
    assert len(prep.points) == 2 + 2 * 2 * 2  # the checkpoint's losses counted once
    assert settings["checkpoint_areas"][0] == pytest.approx(prep.X["S1pt"][0])
    assert settings["checkpoint_loss"] == {"general": 3.4, "domain": 3.2}
    assert settings["replay_ref"] == pytest.approx(0.3)  # the median replay ratio
    with pytest.raises(ValueError, match="run 'r1', step 3000: a PT loss before the transfer"):
        prepare(_table(), law, default_config(law)["settings"])
    with pytest.raises(ValueError, match="does not combine"):
        get_law("cpt", checkpoint=True, unknown_pt=True)


# ---- recovery and the CLI round trip -----------------------------------------------------------


def test_cpt_fit_recovers_the_shift_and_predicts_a_held_out_schedule(cpt_cli_fit):
    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit

    d, truth = cpt_cli_fit
    fit = Fit.load(d / "fit.nc")
    assert fit.law.name == "cpt" and fit.meta["law_options"]["replay"] is False
    diag = fit.diagnostics()
    assert diag.max_rhat < 1.03 and diag.divergences == 0
    post = fit.idata.posterior
    for role in ("general", "domain"):
        bref = post["Bref"].sel(group=role).values.ravel()
        lo, hi = np.quantile(bref, [0.025, 0.975])
        true = float(truth.set_index("val_set").loc[role, "Bref"])
        assert lo <= true <= hi, (role, lo, true, hi)
    held = read_curves(d / "held.csv")
    pred = predict_frame(fit, held, prob=0.9)
    pred = pred[pred["loss"].notna() & (pred["phase"] == "cpt")]
    inside = ((pred["loss"] >= pred["lower"]) & (pred["loss"] <= pred["upper"])).mean()
    mre = (pred["median"] / pred["loss"] - 1).abs().mean()
    assert inside >= 0.8, inside
    assert mre < 0.005, mre


def test_cli_predicts_a_new_cpt_plan_with_its_outlook(cpt_cli_fit, tmp_path, capsys):
    d, _ = cpt_cli_fit
    head = S.Schedule(PT.lr[:8001], PT.warmup_steps)
    plan = cpt_rows(
        "plan",
        head,
        S.rewarmup(3000, 1e-4, 100, final=0.0, shape="linear", decay_steps=600),
        ROLES,
        lr_every=50,
    )
    plan.to_csv(tmp_path / "plan.csv", index=False)
    args = [
        "predict",
        str(d / "fit.nc"),
        "--schedule",
        str(tmp_path / "plan.csv"),
        "--out",
        str(tmp_path / "pred.csv"),
        "--outlook",
        str(tmp_path / "outlook.csv"),
    ]
    assert main(args) == 0
    pred = pd.read_csv(tmp_path / "pred.csv")
    assert set(pred["val_role"]) == {"general", "domain"}
    cpt = pred[pred["phase"] == "cpt"]
    assert cpt["mean"].notna().all() and (cpt["lower"] < cpt["upper"]).all()
    assert pred.loc[pred["step"] < 200, "mean"].isna().all()  # the initial warmup: no law
    out = pd.read_csv(tmp_path / "outlook.csv").set_index("val_set")
    assert out.loc["general", "p_rise"] > 0.9
    assert out.loc["domain", "final_upper"] < out.loc["general", "final_lower"]
    assert (
        out.loc["general", "final_lower"]
        <= out.loc["general", "final_median"]
        <= out.loc["general", "final_upper"]
    )
    assert main(args) == 2  # never overwrites silently
    assert "--force" in capsys.readouterr().err


def test_cli_rejects_cpt_options_for_other_laws(tmp_path, capsys):
    df = validate_curves(_table(), source="t")
    df.to_csv(tmp_path / "d.csv", index=False)
    rc = main(
        [
            "fit",
            str(tmp_path / "d.csv"),
            "--law",
            "annealing",
            "--replay",
            "--out",
            str(tmp_path / "f.nc"),
        ]
    )
    assert rc == 2
    assert "--replay: options of the cpt law" in capsys.readouterr().err
    rc = main(
        [
            "fit",
            str(tmp_path / "d.csv"),
            "--law",
            "annealing",
            "--anchored",
            "--out",
            str(tmp_path / "f.nc"),
        ]
    )
    assert rc == 2
    assert "--anchored: options of the cpt law" in capsys.readouterr().err


def test_other_set_is_a_combination_recovered_and_predicted(cpt_cli_fit):
    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit

    d, _ = cpt_cli_fit
    fit = Fit.load(d / "fit.nc")
    coef = fit.idata.posterior["other_coef"].sel(other_set="c-headers")
    for name, true in zip(("a", "b"), OTHER_AB):
        lo, hi = np.quantile(coef.sel(coef=name).values.ravel(), [0.005, 0.995])
        assert lo <= true <= hi, (name, lo, true, hi)
    held = read_curves(d / "held.csv")
    pred = predict_frame(fit, held, prob=0.9)
    o = pred[(pred["val_set"] == "c-headers") & pred["loss"].notna() & (pred["phase"] == "cpt")]
    assert len(o) > 20
    inside = ((o["loss"] >= o["lower"]) & (o["loss"] <= o["upper"])).mean()
    assert inside >= 0.8, inside
    assert (o["median"] - o["loss"]).abs().mean() < 0.02


def test_checkpoint_mode_samples_longer_by_default_and_options_override():
    from bayescpt.core.sampling import resolve_settings
    from bayescpt.curves.model.config import default_config

    cfg = default_config(get_law("cpt", checkpoint=True))
    assert resolve_settings(cfg["sampler"], "auto")["draws"] == 3000
    assert resolve_settings(cfg["sampler"], "auto", draws=300)["draws"] == 300
    # the full law: 2000 draws (the shift's ridge), the package's tuning
    assert default_config(get_law("cpt"))["sampler"] == {"draws": 2000}


def test_anchored_option_is_the_same_law_with_lr_and_g_at_the_anchor():
    """Lr = L0 + A s^-alpha and G = A alpha s^(-alpha-1) at the anchor area s give the full law's
    curve over PT and CPT, and L0, A come back as derived quantities."""
    seg = S.rewarmup(3000, 2e-4, 100, final=2e-5, shape="cosine")
    theta = with_bref(PAPER_FIG3["domain"])
    law = CPTLaw(anchored=True, replay=True)
    head = S.Schedule(PT.lr[:8001], PT.warmup_steps)
    full_sched = head.then(seg)
    steps = np.arange(300, full_sched.total_steps + 1, 50)
    info = {"val_role": "domain", "val_set": "domain", "pt_end": 8000, "replay_ratio": 0.25}
    plain = CPTLaw(replay=True)
    Xp = plain.design(full_sched, steps, plain.default_settings, info)
    th = {k: np.asarray(v) for k, v in theta.items() if k != "B"}
    th.update(a1=np.asarray(0.3), k=np.asarray(-1.2))
    ref = plain.mean(np, th, Xp)
    df = cpt_rows("r", head, seg, {"domain": "domain"})
    settings = dict(law.default_settings)
    law.settings_from_data(df, settings)
    s = settings["anchor_s1"]
    assert s == pytest.approx(Xp["S1pt"][-1])  # one run: its PT area at the transfer
    Xa = law.design(full_sched, steps, settings, info)
    tha = {k: v for k, v in th.items() if k not in ("L0", "A")}
    tha["Lr"] = np.asarray(theta["L0"] + theta["A"] * s ** -theta["alpha"])
    tha["G"] = np.asarray(theta["A"] * theta["alpha"] * s ** (-theta["alpha"] - 1))
    np.testing.assert_allclose(law.mean(np, tha, Xa), ref, rtol=1e-10)
    d = law.derived(np, tha, settings)
    assert d["L0"] == pytest.approx(theta["L0"]) and d["A"] == pytest.approx(theta["A"])
    assert [p.name for p in law.params][:3] == ["Lr", "G", "alpha"]
    with pytest.raises(ValueError, match="positive anchor_s1"):
        law.design(full_sched, steps, dict(law.default_settings), info)
    with pytest.raises(ValueError, match="anchored option is for data with PT curves"):
        CPTLaw(anchored=True, checkpoint=True)


@pytest.mark.slow  # a recovery study: a full anchored CPT fit of simulated curves
def test_anchored_fit_recovers_lr_g_and_predicts_a_held_out_schedule():
    """Simulated Fig. 3 runs fitted with the anchored option: Lr, G at the anchor area (known
    from the truth) and Bref inside their 99 % intervals (six checks: about 94 % of calibrated
    fits pass all), L0 and A derived, the WSD runs predicted. Data seed 3 as for the plain law's
    CLI fit: on seed 5 the plain law and this option give the same posterior, and both miss the
    general set's Bref (0.158, 99 % up to 0.1706, truth 0.1723), a property of that draw."""
    from bayescpt.cpt.simulate import simulate_cpt
    from bayescpt.curves.forecast.predict import predict_frame
    from bayescpt.curves.model.fit import Fit

    curves, truth = simulate_cpt(seed=3)
    held = curves["run"].str.endswith("/wsd")
    opts = cpt_law_options(curves[~held], anchored=True)
    assert opts["anchored"] is True and opts["checkpoint"] is False
    fit = Fit.run(
        curves[~held],
        law="cpt",
        law_options=opts,
        draws=300,
        tune=500,
        chains=2,
        seed=2,
        progress=False,
    )
    diag = fit.diagnostics()
    assert diag.max_rhat < 1.05 and diag.divergences == 0, diag.problems()
    s = fit.config["settings"]["anchor_s1"]
    post = fit.idata.posterior
    t = truth.set_index("val_set")
    for role in ("general", "domain"):
        th = t.loc[role]
        want = {
            "Lr": th["L0"] + th["A"] * s ** -th["alpha"],
            "G": th["A"] * th["alpha"] * s ** (-th["alpha"] - 1),
            "Bref": th["Bref"],
        }
        for name, true in want.items():
            lo, hi = np.quantile(post[name].sel(group=role).values.ravel(), [0.005, 0.995])
            assert lo <= true <= hi, (role, name, lo, true, hi)
        assert np.isfinite(post["L0"].sel(group=role).values).all()
    pred = predict_frame(fit, curves[held], prob=0.9)
    pred = pred[pred["loss"].notna() & (pred["phase"] == "cpt")]
    inside = ((pred["loss"] >= pred["lower"]) & (pred["loss"] <= pred["upper"])).mean()
    assert inside >= 0.8, inside
    assert (pred["median"] / pred["loss"] - 1).abs().mean() < 0.005


def test_thin_cpt_keeps_the_grid_the_early_shift_and_the_last_step():
    from bayescpt.curves.data.thinning import thin_cpt

    seg = S.rewarmup(130, 2e-4, 10, final=0.0, shape="cosine")
    head = S.Schedule(PT.lr[:301], PT.warmup_steps)
    steps = np.concatenate(
        [
            np.arange(25, 301, 25),
            300 + np.array([1, 2, 4, 8, 12, 18]),
            np.arange(325, 431, 25),
            [430],
        ]
    )
    steps = np.unique(steps)
    df = cpt_rows(
        "r",
        head,
        seg,
        {"general": "general"},
        loss_steps=steps,
        losses={"general": np.linspace(3, 2, steps.size)},
    )
    kept = np.sort(thin_cpt(df, 50).dropna(subset=["loss"])["step"].unique())
    want = [50, 100, 150, 200, 250, 300, 301, 302, 304, 308, 312, 318, 350, 400, 430]
    assert kept.tolist() == want
    assert thin_cpt(df, 0) is df
    assert len(thin_cpt(df, 50)) == len(df)  # rows (the schedule) stay
