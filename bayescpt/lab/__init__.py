"""The CPT lab: real continual pre-training (CPT) loss curves from tiny language models on a CPU.

A small decoder-only transformer over bytes is pre-trained (PT) on one corpus, checkpointed at
several transfer steps, and continued (CPT) from each checkpoint on a second corpus, with a
learning-rate schedule built by :mod:`bayescpt.core.schedules` and used exactly, step by step;
PT-only runs train a size from its initialisation under each of several schedules instead. The
output is the CPT data model (``run, step, lr, loss, val_set, val_role, phase, replay_ratio,
model_size``) plus a manifest.

Modules: :mod:`.config` (the TOML experiment file; its value checks in :mod:`.config_values`,
its run grids in :mod:`.grids`), :mod:`.corpora` (the two text distributions and their splits),
:mod:`.model` (the transformer), :mod:`.train` (one size's training), :mod:`.runner` (the runs
and the output), :mod:`.plots`, :mod:`.phenomena`; the commands ``bayescpt lab run|plot`` live in
:mod:`bayescpt.cli.lab`. torch (the optional extra ``lab``) is imported only by
:func:`require_torch`, when a run starts, and handed to :mod:`.model`, :mod:`.train` and
:mod:`.runner`; every module of the lab imports without it.
"""

INSTALL_HINT = (
    "the lab needs PyTorch: install the optional extra with "
    "`pip install 'bayescpt[lab]'` (or `pip install torch==2.13.0`)"
)


def require_torch():
    """Import torch, or raise a one-line ValueError that says how to install it."""
    try:
        import torch
    except ImportError:
        raise ValueError(INSTALL_HINT) from None
    return torch
