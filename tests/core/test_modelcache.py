"""Fitting the same model again reuses its build and compile (bayescpt.core.modelcache), and gives
the draws a fresh build gives."""

import threading

import numpy as np
import pandas as pd
import pytest

from bayescpt.core import modelcache
from bayescpt.core.modelcache import cached, fingerprint


@pytest.fixture(autouse=True)
def empty_cache():
    modelcache.clear()
    yield
    modelcache.clear()


def test_fingerprint_sees_every_value_name_and_type_and_ignores_key_order():
    df = pd.DataFrame({"run": ["a", "a", "b"], "step": [1, 2, 1], "loss": [3.0, 2.5, 3.1]})
    key = fingerprint("law", {"x": 1, "y": [1, 2]}, df)
    assert key == fingerprint("law", {"y": [1, 2], "x": 1}, df.copy())
    other = df.copy()
    other.loc[2, "loss"] = 3.1000000001
    assert fingerprint("law", {"x": 1, "y": [1, 2]}, other) != key
    assert fingerprint("law", {"x": 1, "y": [1, 2]}, df.rename(columns={"loss": "l"})) != key
    assert fingerprint("law", {"x": 1, "y": [1, 2]}, df.astype({"step": float})) != key
    assert fingerprint("law", {"x": 1, "y": [1, 3]}, df) != key
    assert fingerprint("other", {"x": 1, "y": [1, 2]}, df) != key
    assert fingerprint(np.arange(3)) != fingerprint(np.arange(3.0))
    # numpy values inside a configuration count by value, all of them (repr would elide)
    big = np.zeros(5000)
    other_big = big.copy()
    other_big[2500] = 1.0
    assert fingerprint({"w": big}) != fingerprint({"w": other_big})
    assert fingerprint({"w": np.float64(0.5)}) == fingerprint({"w": 0.5})

    # a class counts by identity: one redefined under the same name is another
    class Law:
        pass

    first = fingerprint([Law])

    class Law:  # noqa: F811
        pass

    assert fingerprint([Law]) != first and Law.__qualname__.endswith("Law")
    # a table too large to keep twice in memory: no key
    assert fingerprint(pd.DataFrame({"x": np.zeros(modelcache.MAX_ROWS + 1)})) is None
    big_frame = pd.DataFrame({"x": np.zeros(modelcache.MAX_ROWS + 1)})
    assert fingerprint({"table": big_frame}) is None
    assert fingerprint(pd.DataFrame({"cell": [[1, 2]]})) is None  # unhashable cells
    assert fingerprint(np.array(["a", None], dtype=object)) is None  # bytes are addresses
    # anything without a canonical form: no key, so no cached model
    assert fingerprint({"law": object()}) is None


def test_an_entry_is_built_once_kept_after_success_only_and_the_oldest_goes_first():
    built = []

    def build(tag):
        return lambda: built.append(tag) or tag

    with cached("a", build("a")) as e:
        e.compiled["nutpie"] = "compiled a"
    with cached("a", build("a again")) as e:
        assert e.value == "a" and e.compiled == {"nutpie": "compiled a"}
    assert built == ["a"]
    with pytest.raises(RuntimeError), cached("b", build("b")):
        raise RuntimeError("the fit failed")
    with cached("b", build("b2")) as e:
        assert e.value == "b2"  # the failed one was not kept
    for k in range(modelcache.SIZE):
        with cached(f"k{k}", build(f"k{k}")):
            pass
    with cached("a", build("a rebuilt")) as e:  # evicted by the SIZE newer ones
        assert e.value == "a rebuilt"
    with cached(None, build("none")) as e, cached(None, build("none")) as f:
        assert e is not f  # no key: never kept


def test_an_entry_in_use_is_not_shared_with_another_thread():
    with cached("a", lambda: "first"):
        pass
    seen = []

    def other():
        with cached("a", lambda: "theirs") as e:
            seen.append(e.value)

    with cached("a", lambda: "unused") as mine:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert mine.value == "first" and seen == ["theirs"]


def test_a_fit_from_the_cache_equals_a_fresh_fit_and_compiles_nothing(small_curves, monkeypatch):
    from bayescpt.core import sampling
    from bayescpt.curves.model.fit import Fit

    compiles = []
    real = sampling.compile_nutpie
    monkeypatch.setattr(sampling, "compile_nutpie", lambda m: compiles.append(1) or real(m))
    df = small_curves[0]
    df = df[df["run"].str.startswith("100M/")]
    kw = dict(
        law="annealing",
        chains=2,
        draws=100,
        tune=150,
        warn=False,
        config={"sampler": {"extend": 1}},
    )
    fresh = Fit.run(df, seed=0, **kw)
    Fit.run(df, seed=1, **kw)
    again = Fit.run(df, seed=0, **kw)
    assert len(compiles) == 1 and modelcache.stats["hits"] >= 2
    for v in ("L0", "A", "alpha", "C"):
        np.testing.assert_array_equal(
            again.idata.posterior[v].values, fresh.idata.posterior[v].values
        )
    changed = df.copy()
    changed.loc[changed["loss"].first_valid_index(), "loss"] += 1e-9
    Fit.run(changed, seed=0, **dict(kw, draws=20, tune=20))
    assert len(compiles) == 2  # other data: another model


def test_a_mixture_fit_from_the_cache_equals_a_fresh_one(monkeypatch):
    """The mixture (and hparams) fits take their model from the same cache."""
    from bayescpt.core import sampling
    from bayescpt.mixture import simulate
    from bayescpt.mixture.data import validate_mixture
    from bayescpt.mixture.fit import MixtureFit

    compiles = []
    real = sampling.compile_nutpie
    monkeypatch.setattr(sampling, "compile_nutpie", lambda m: compiles.append(1) or real(m))
    df = validate_mixture(
        simulate.simulate_cpt(seed=3, ratios=(0.2, 0.5, 0.8), tokens=(2000, 6000, 10000))
    )
    kw = dict(chains=2, draws=60, tune=100, seed=4, warn=False, config={"sampler": {"extend": 1}})
    fresh = MixtureFit.run(df, **kw)
    again = MixtureFit.run(df, **kw)
    assert len(compiles) == 1
    for v in fresh.idata.posterior.data_vars:
        np.testing.assert_array_equal(
            again.idata.posterior[v].values, fresh.idata.posterior[v].values
        )
