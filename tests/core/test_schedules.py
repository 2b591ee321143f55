import numpy as np
import pytest

from bayescpt.core import schedules as S


def brute_force_areas(lr, lam):
    """O(T^2) reference straight from LAWS.md section 0 (closed form of S2)."""
    T = lr.size - 1
    s1 = np.array([lr[1 : s + 1].sum() for s in range(T + 1)])
    s2 = np.zeros(T + 1)
    for s in range(1, T + 1):
        k = np.arange(1, s + 1)
        s2[s] = np.sum((lr[k - 1] - lr[k]) * (1 - lam ** (s - k + 1)) / (1 - lam))
    return s1, s2


ALL = [
    S.constant(300, 3e-4, warmup_steps=20),
    S.cosine(300, 3e-4, 3e-5, warmup_steps=20),
    S.wsd(300, 3e-4, decay_steps=60, final=3e-5, shape="linear", warmup_steps=10),
    S.wsd(300, 3e-4, decay_steps=60, final=3e-5, shape="cosine"),
    S.wsd(300, 3e-4, decay_steps=60, final=3e-5, shape="exponential"),
    S.wsd(300, 3e-4, decay_steps=60, final=0.0, shape="1-sqrt"),
    S.multistep(300, 3e-4, milestones=[100, 200], factors=[0.3, 0.1]),
    S.cyclic(300, 3e-4, period=100, low=3e-5, rewarmup_steps=10),
    S.cosine(200, 3e-4, 1e-5, warmup_steps=10).then(S.rewarmup(100, 2e-4, 10, start_lr=1e-5)),
]


@pytest.mark.parametrize("sched", ALL, ids=lambda s: s.name)
@pytest.mark.parametrize("lam", [0.0, 0.9, 0.999])
def test_areas_match_quadratic_reference(sched, lam):
    for warmup in ("none", "peak"):
        s1, s2 = sched.areas(lam=lam, warmup=warmup)
        lr = sched.lr.copy()
        if warmup == "peak" and sched.warmup_steps:
            lr[: sched.warmup_steps] = lr[sched.warmup_steps]
        r1, r2 = brute_force_areas(lr, lam)
        np.testing.assert_allclose(s1, r1, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(s2, r2, rtol=1e-8, atol=1e-12)


def test_warmup_conventions():
    sch = S.constant(1000, 3e-4, warmup_steps=100)
    s1_peak, s2_peak = sch.areas(warmup="peak")
    s1_exact, s2_exact = sch.areas(warmup="exact")
    s1_none, s2_none = sch.areas(warmup="none")
    # peak: as if the LR had been at its peak from step 1
    assert s1_peak[-1] == pytest.approx(1000 * 3e-4)
    # exact: the true warmup area eta_max * W / 2 (+ half a step for the discrete ramp)
    assert s1_exact[-1] == pytest.approx(900 * 3e-4 + 3e-4 * 101 / 2)
    # no annealing anywhere for a constant schedule, except the raw warmup rise (negative S2)
    assert np.all(s2_peak == 0) and np.all(s2_exact == 0)
    assert s2_none[-1] < 0


def test_rewarmup_gives_negative_s2_and_cpt_starts_from_last_pt_lr():
    pt = S.wsd(1000, 3e-4, decay_steps=200, final=3e-5, warmup_steps=50)
    seg = S.rewarmup(500, 3e-4, warmup_steps=100, final=0.0, start_lr=pt)
    full = pt.then(seg)
    assert full.total_steps == 1500
    assert full.lr[1000] == pytest.approx(3e-5)
    assert full.lr[1001] > full.lr[1000]  # re-warmup from the last PT learning rate
    # the CPT segment's own areas (eta_0 = last PT LR, fresh momentum) are negative while re-warming
    s1_cpt, s2_cpt = S.areas(full.lr[1000:], warmup="none")
    assert np.all(s2_cpt[1:101] < 0) and s1_cpt[100] > 0
    assert full.warmup_steps == 50  # only the initial warmup is clamped


def test_decay_shapes_end_points():
    for shape in S.DECAY_SHAPES:
        v = S.decay_curve([0.0, 1.0], 3e-4, 3e-5, shape)
        np.testing.assert_allclose(v, [3e-4, 3e-5])
    sch = S.wsd(100, 1e-3, decay_steps=50, final=1e-4, shape="1-sqrt")
    assert sch.lr[50] == pytest.approx(1e-3) and sch.lr[100] == pytest.approx(1e-4)


def test_from_points_interpolates_and_detects_warmup():
    sch = S.from_points([0, 100, 200, 400], [0.0, 2e-4, 2e-4, 1e-5])
    assert sch.total_steps == 400
    assert sch.lr[50] == pytest.approx(1e-4)
    assert sch.lr[300] == pytest.approx((2e-4 + 1e-5) / 2)
    assert sch.warmup_steps == 100
    with pytest.raises(ValueError, match="from step 5"):
        S.from_points([5, 10], [1e-4, 1e-4])
    with pytest.raises(ValueError, match="increasing"):
        S.from_points([0, 10, 10], [1e-4, 1e-4, 1e-4])


def test_bad_builder_arguments():
    with pytest.raises(ValueError, match="peak"):
        S.constant(100, -1e-4)
    with pytest.raises(ValueError, match="decay_steps"):
        S.wsd(100, 1e-4, decay_steps=0)
    with pytest.raises(ValueError, match="non-negative"):
        S.Schedule(np.array([1e-4, -1e-4]))
    with pytest.raises(ValueError, match="warmup convention"):
        S.areas(np.ones(3) * 1e-4, warmup="linear")
