"""bayescpt cv and sbc on a real Dask engine (one in-process LocalCluster for the module): the
cross-validated numbers equal a fit and prediction of the same fold by hand; SBC ranks are the
ranks of the simulated truth; the uniformity test tells uniform from skewed ranks."""

import numpy as np
import pandas as pd
import pytest

from bayescpt.cli.main import main
from bayescpt.core.tables import DataError
from bayescpt.curves.data.validate import read_curves
from bayescpt.curves.evaluate.scores import score
from bayescpt.curves.forecast.predict import predict_frame
from bayescpt.curves.model.fit import Fit
from bayescpt.parallel.cv import group_labels, make_folds, run_cv
from bayescpt.parallel.engine import Cluster
from bayescpt.parallel.sbc import rank_of, run_sbc, uniformity
from bayescpt.parallel.spec import StudyFit

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.xdist_group("parallel/test_cv_sbc")]
SAMPLER = {"chains": 2, "draws": 200, "tune": 200}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0", silence_logs=40
    )
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def curves_csv(tmp_path_factory, small_curves):
    df = small_curves[0]
    path = tmp_path_factory.mktemp("cvdata") / "curves.csv"
    df[df["model_size"] < 4e8].to_csv(path, index=False)  # 2 sizes x 3 schedules
    return path


def test_groups_and_folds(curves_csv):
    df = read_curves(curves_csv)
    sched = group_labels(df, "schedule")
    assert sched.nunique() == 3 and not sched.str.contains("/").any()
    assert group_labels(df, "model_size").nunique() == 2
    folds = make_folds(sched, "schedule")
    assert [f.held_out for f in folds] == [(g,) for g in dict.fromkeys(sched)]
    one = make_folds(sched, "schedule", train=list(dict.fromkeys(sched))[:2])
    assert len(one) == 1 and len(one[0].held_out) == 1
    with pytest.raises(DataError, match="--train: no schedule 'nope'") as err:
        make_folds(sched, "schedule", train=["nope"])
    assert "\n" not in str(err.value)
    with pytest.raises(DataError, match="needs at least two groups"):
        make_folds(pd.Series(["a", "a"]), "run")


@pytest.mark.slow  # a study: every fold fitted twice (on Dask and by hand)
def test_cv_equals_the_fold_fitted_and_predicted_by_hand_and_resumes(tmp_path, curves_csv, client):
    out = tmp_path / "cv"
    res = run_cv(
        curves_csv,
        out,
        StudyFit("annealing", sampler=SAMPLER, seed=2),
        by="schedule",
        cluster=Cluster(client=client),
    )
    df = read_curves(curves_csv)
    labels = group_labels(df, "schedule")
    groups = list(dict.fromkeys(labels))
    assert len(res.fits) == 3 and set(res.table["group"]) == set(groups)
    assert len(res.table) == 3 * 2  # every fold x model size
    assert (out / "cv.csv").is_file() and (out / "predictions.csv.gz").is_file()
    # fold 1 by hand: fit the other schedules, predict the held-out one, score it
    held = labels == groups[1]
    fit = Fit.run(df[~held], law="annealing", seed=2, warn=False, **SAMPLER)
    by_hand = score(predict_frame(fit, df[held], prob=0.9, seed=2))
    got = res.table[res.table["group"] == groups[1]].reset_index(drop=True)
    for col in (
        "points",
        "mean_rel_err",
        "worst_rel_err",
        "coverage",
        "rel_width",
        "interval_score",
    ):
        np.testing.assert_allclose(got[col], by_hand[col], rtol=1e-12)
    # the law is right for these data: held-out schedules are predicted within a few per mille
    assert res.table["mean_rel_err"].max() < 0.01
    assert res.by_size["coverage"].min() > 0.5
    # a rerun fits nothing (every fold's output holds its inputs)
    again = run_cv(
        curves_csv,
        out,
        StudyFit("annealing", sampler=SAMPLER, seed=2),
        by="schedule",
        cluster=Cluster(client=client),
    )
    assert list(again.fits["status"]) == ["done"] * 3
    pd.testing.assert_frame_equal(again.table, res.table)


def test_cv_command_prints_the_table_and_draws_it(tmp_path, curves_csv, capsys, client):
    out = tmp_path / "cvcli"
    df = read_curves(curves_csv)
    train = ",".join(list(dict.fromkeys(group_labels(df, "schedule")))[:2])
    rc = main(
        [
            "cv",
            str(curves_csv),
            "--law",
            "annealing",
            "--by",
            "schedule",
            "--train",
            train,
            "--out",
            str(out),
            "--chains",
            "2",
            "--draws",
            "200",
            "--tune",
            "200",
            "--scheduler",
            client.scheduler.address,
            "--quiet",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "coverage_%" in text and "interval_score_%" in text
    assert (out / "cv.png").stat().st_size > 10_000
    table = pd.read_csv(out / "cv.csv")
    assert len(table) == 2 and table["fold"].nunique() == 1
    rc = main(
        [
            "cv",
            str(curves_csv),
            "--law",
            "annealing",
            "--by",
            "schedule",
            "--train",
            "nope",
            "--out",
            str(tmp_path / "x"),
            "--quiet",
        ]
    )
    assert rc == 2 and "--train: no schedule 'nope'" in capsys.readouterr().err


def test_uniformity_tells_uniform_from_skewed_ranks():
    rng = np.random.default_rng(0)
    uniform = pd.DataFrame({"a": rng.integers(0, 100, 200)})
    skewed = pd.DataFrame({"a": np.minimum(rng.integers(0, 100, 200), rng.integers(0, 100, 200))})
    assert uniformity(uniform, ["a"], 99, 10)["p_value"].iloc[0] > 0.01
    assert uniformity(skewed, ["a"], 99, 10)["p_value"].iloc[0] < 1e-6


@pytest.mark.slow  # simulation-based calibration: a study of many fits
def test_sbc_ranks_the_simulated_truth_among_the_posterior_draws(tmp_path, curves_csv, client):
    design = read_curves(curves_csv)
    design = design[design["run"].str.startswith("25M/")]
    out = tmp_path / "sbc"
    res = run_sbc(
        design,
        out,
        StudyFit("annealing", sampler=SAMPLER, seed=5),
        sims=4,
        ranks=49,
        bins=5,
        cluster=Cluster(client=client),
    )
    assert len(res.ranks) == 4 and res.ranks_max == 49
    labels = list(res.tests["quantity"])
    assert {"L0_mu", "A_tau", "log_sigma_mu"} <= set(labels)
    assert res.ranks[labels].to_numpy().min() >= 0 and res.ranks[labels].to_numpy().max() <= 49
    assert ((res.tests["p_value"] >= 0) & (res.tests["p_value"] <= 1)).all()
    # the ranks are those of the saved truth among the saved fits' draws
    truth = pd.read_csv(out / "truth.csv")
    sim = read_curves(out / "sims" / "sim_0002.csv")
    assert sim["loss"].notna().sum() == design["loss"].notna().sum()
    fit = Fit.load(out / "fits" / "sbc__sim0002.nc")
    from bayescpt.curves.model.config import make_config
    from bayescpt.curves.model.hierarchy import build_model, prepare
    from bayescpt.curves.model.laws import get_law
    from bayescpt.parallel.sbc import checked_quantities

    law = get_law("annealing")
    cfg = make_config(law)
    model = build_model(law, prepare(sim, law, cfg["settings"]), cfg)
    again = rank_of(fit, checked_quantities(model, law), truth.iloc[2], 49)
    assert again == {k: int(res.ranks.iloc[2][k]) for k in labels}
    # the fit learns from the simulated curve: the truth of L0 lies within 4 posterior sds
    group = [k for k in labels if k.startswith("L0[")][0]
    draws = fit.idata.posterior["L0"].values.reshape(-1)
    assert abs(draws.mean() - truth[group].iloc[2]) < 4 * draws.std()
