"""Fixtures of the core tests."""

import pytest


@pytest.fixture
def jax_x64_restored():
    """PyMC's JAX samplers switch JAX to float64 for the whole process; later tests (the plan's
    JAX evaluation) check that nothing else did, so the setting is put back."""
    import jax

    before = bool(jax.config.jax_enable_x64)
    yield
    jax.config.update("jax_enable_x64", before)
