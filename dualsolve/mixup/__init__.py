"""Kernel mixup: MixupSDCA (Obi, Saito, Sasaki & Kato, 2025; naive / approx / decomp, and our
exact step) with linear, RBF, polynomial and precomputed kernels, its kernel SGD baseline,
and mixup augmentation. See docs/mixup.md."""
from .augment import mixup_augment, MixupPlan
from .model import KernelModel
from .api import train_mixup_sdca, train_kernel_sgd

__all__ = ["mixup_augment", "MixupPlan", "KernelModel", "train_mixup_sdca", "train_kernel_sgd"]
