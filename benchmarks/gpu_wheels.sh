#!/usr/bin/env bash
# Wheels the GPU machine lacks for benchmarks/samplers.py (it has Python 3.12 with CUDA JAX and
# numpyro, but no PyMC): run here, in the repo root, before a device run that carries `.whl`.
# pymc-extras (fit files store priors as its Prior objects) and what its import needs.
# ~11 MB; the versions are this project's pins (see pyproject.toml and the dev venv).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude || echo '/.whl/' >> .git/info/exclude
python3.11 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    pymc==5.28.5 pytensor==2.38.3 arviz==0.23.4 blackjax==1.5 cachetools==6.2.6 cons==0.4.7 \
    etuples==0.3.10 logical-unification==0.4.7 miniKanren==1.0.5 xarray-einstats==0.9.1 \
    h5netcdf==1.8.2 platformdirs \
    pymc-extras==0.10.0 better-optimize==0.3.2 pydantic==2.14.4 pydantic-core==2.50.5 \
    annotated-types==0.8.0 typing-inspection==0.4.5
ls .whl
