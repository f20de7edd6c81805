"""Kernel mixup (spec seed0): MixupSDCA (naive / approx / decomp / exact) with linear, RBF,
polynomial and precomputed kernels, its kernel SGD baseline, and mixup augmentation."""
from .augment import mixup_augment, MixupPlan
from .model import KernelModel
from .api import train_mixup_sdca, train_kernel_sgd

__all__ = ["mixup_augment", "MixupPlan", "KernelModel", "train_mixup_sdca", "train_kernel_sgd"]
