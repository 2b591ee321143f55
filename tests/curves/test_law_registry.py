"""The law registry: a law added in one module is picked up by get_law, the CLI and the model.

``PowerLaw`` is the worked example of the README's "How to add a law" (there registered with the
``@register_law`` decorator; here inside a fixture, so that other tests see the built-in laws only).
"""

from __future__ import annotations

import numpy as np
import pytest

from bayescpt.curves.model.laws import (
    LAWS,
    CPTLaw,
    CPTMode,
    Law,
    LawOption,
    Param,
    cli_options,
    get_law,
    law_names,
    register_law,
    resolve_law_options,
    unregister_law,
)
from bayescpt.curves.model.laws.base import check_steps


class PowerLaw(Law):
    """L(S1) = L0 + A * S1^(-alpha): the forward-area power law without an annealing term."""

    name = "power"
    default_settings = {"lam": 0.999, "warmup": "exact"}
    options = (
        LawOption(
            "floor",
            True,
            "sample the irreducible loss L0 (--no-floor: L0 = 0)",
            group="power law option (default on)",
        ),
    )

    def __init__(self, floor: bool = True):
        self.floor = bool(floor)
        self.params = ((Param("L0", True, np.log(2.5), 0.5, 0.1, 0.1),) if floor else ()) + (
            Param("A", True, np.log(0.5), 1.0, 0.3, 0.3, 0.04),
            Param("alpha", True, np.log(0.5), 0.5, 0.2, 0.2),
        )

    def design(self, schedule, steps, settings, info=None):
        steps = check_steps(schedule, steps)
        s1, _ = schedule.areas(
            lam=settings.get("lam", 0.999), warmup=settings.get("warmup", "exact")
        )
        return {"S1": s1[steps]}

    def mean(self, xp, theta, X):
        floor = theta["L0"] if "L0" in theta else 0.0
        return floor + theta["A"] * X["S1"] ** (-theta["alpha"])


@pytest.fixture
def power_law():
    register_law(PowerLaw)
    yield PowerLaw
    unregister_law("power")


def _args(*argv):
    from bayescpt.cli.main import build_parser

    return build_parser().parse_args(["fit", "d.csv", "--out", "f.nc", *argv])


def test_builtin_laws_are_registered_in_cli_order():
    assert law_names() == ["annealing", "multipower", "cpt"]
    flags = [o.cli_flag for o in cli_options()]
    assert flags == [
        "--replay",
        "--unknown-pt",
        "--size-extension",
        "--checkpoint",
        "--anchored",
        "--drop-progress",
    ]
    assert "size_extension" in {o.name for o in LAWS["annealing"].options}  # library only
    with pytest.raises(ValueError, match="already registered"):
        register_law(type("Other", (Law,), {"name": "cpt"}))


def test_a_registered_law_reaches_get_law_the_cli_and_its_options(power_law):
    from bayescpt.cli.curves import _law_options

    assert law_names()[-1] == "power"
    assert [p.name for p in get_law("power", floor=False).params] == ["A", "alpha"]
    a = _args("--law", "power", "--no-floor")
    assert a.floor is False and _law_options(a, None) == {"floor": False}
    assert _law_options(_args("--law", "power"), None) == {}
    assert _law_options(_args("--law", "power", "--floor"), None) == {}  # the default: not saved
    with pytest.raises(ValueError, match="--floor: options of the power law, not of --law cpt"):
        _law_options(_args("--law", "cpt", "--no-floor"), None)
    with pytest.raises(ValueError, match="--replay: options of the cpt law, not of --law power"):
        resolve_law_options("power", None, {"replay": True})
    unregister_law("power")
    assert "power" not in law_names()
    with pytest.raises(SystemExit):
        _args("--law", "power")


def test_a_registered_law_builds_the_hierarchical_model(power_law):
    from bayescpt.curves.evaluate import simulate
    from bayescpt.curves.model.config import default_config
    from bayescpt.curves.model.hierarchy import build_model, prepare

    law = get_law("power")
    df, _ = simulate.simulate_hierarchy(
        law,
        {"L0": 2.8, "A": 0.55, "alpha": 0.5},
        {"L0": 0.05, "A": 0.1, "alpha": 0.05},
        [25e6, 100e6, 400e6],
        simulate.default_schedules(total=2000),
        points=12,
        seed=3,
    )
    cfg = default_config(law)
    prep = prepare(df, law, cfg["settings"])
    model = build_model(law, prep, cfg)
    names = {v.name for v in model.free_RVs}
    assert {"L0_mu", "A_mu", "A_tau", "alpha_u", "log_sigma"} <= names
    assert "alpha_tau" not in names  # run_sd 0: no schedule deviation
    logp = model.compile_logp()(model.initial_point())
    assert np.isfinite(logp)


def test_cpt_mode_is_one_validated_value():
    mode = CPTMode(replay=1, checkpoint=True)
    assert mode.replay is True and mode.form == "checkpoint"
    assert CPTLaw(mode=mode).params == CPTLaw(replay=True, checkpoint=True).params
    assert CPTMode(anchored=True).form == "anchored" and CPTMode().form == "full"
    assert [p.name for p in CPTMode(checkpoint=True).params()] == ["G", "C2", "Bref", "E", "beta"]
    with pytest.raises(ValueError, match="does not combine"):
        CPTMode(checkpoint=True, size_extension=True)
    with pytest.raises(ValueError, match="anchored option"):
        CPTMode(checkpoint=True, anchored=True)
    assert CPTMode(checkpoint=True).options() == {
        "replay": False,
        "size_extension": False,
        "unknown_pt": False,
        "checkpoint": True,
        "anchored": False,
    }


def test_checkpoint_design_is_pure_and_needs_the_areas():
    from bayescpt.core import schedules as S

    law = CPTLaw(checkpoint=True)
    pt = S.constant(3000, 2e-4, warmup_steps=100)
    sched = pt.then(S.cosine(500, 2e-4, 2e-5))
    info = {"val_role": "general", "val_set": "g", "pt_end": 3000, "run": "r"}
    settings = dict(law.default_settings, checkpoint_loss={"g": 3.0})
    before = dict(settings)
    with pytest.raises(ValueError, match="needs the setting checkpoint_areas"):
        law.design(sched, np.arange(3000, 3400), settings, info)
    assert settings == before
    s1, s2 = S.Schedule(sched.lr[:3001], 100).areas(lam=0.999, warmup="exact")
    settings["checkpoint_areas"] = [float(s1[-1]), float(s2[-1])]
    before = {k: (list(v) if isinstance(v, list) else v) for k, v in settings.items()}
    X1 = law.design(sched, np.arange(3000, 3400), settings, info)
    X2 = law.design(sched, np.arange(3000, 3400), settings, info)
    assert settings == before
    assert all(np.array_equal(X1[k], X2[k]) for k in X1)


def test_bool_options_become_boolean_flags():
    opts = {o.name: o for o in cli_options()}
    assert opts["progress"].cli_flag == "--drop-progress"
    a = _args("--law", "multipower", "--no-drop-progress")
    assert a.progress is False


def test_the_readme_example_is_this_law():
    """The README's "How to add a law" block registers the same law as PowerLaw above."""
    import inspect
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "class PowerLaw" in b)
    ns: dict = {}
    try:
        exec(compile(block, "README.md", "exec"), ns)
        cls = LAWS["power"]
        assert cls is ns["PowerLaw"]
        src = inspect.getsource(PowerLaw)
        assert block[block.index("class PowerLaw") :].strip() == src.strip()
    finally:
        unregister_law("power")
