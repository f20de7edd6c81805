"""Dual-free SDCA and adaptive dual-free SDCA (spec seed3): ``train_dfsdca`` (uniform or
fixed importance sampling) and ``train_adfsdca`` (adfSDCA+ and exact adfSDCA)."""
from .api import train_dfsdca, train_adfsdca

__all__ = ["train_dfsdca", "train_adfsdca"]
