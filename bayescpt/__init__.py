"""bayescpt: Bayesian scaling laws for planning continual pre-training."""

__version__ = "0.1.0"
