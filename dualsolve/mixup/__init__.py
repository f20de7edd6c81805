"""Kernel mixup (spec seed0): mixup augmentation and the data-side building blocks of the
MixupSDCA solvers (kernel columns in ``dualsolve._core.kernels``)."""
from .augment import mixup_augment, MixupPlan

__all__ = ["mixup_augment", "MixupPlan"]
