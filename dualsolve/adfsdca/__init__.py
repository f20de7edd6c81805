"""Dual-free SDCA (Shalev-Shwartz 2016) and adaptive dual-free SDCA (He, Tappenden & Takac
2018): ``train_dfsdca`` (uniform or fixed importance sampling) and ``train_adfsdca``
(adfSDCA+, exact adfSDCA and its mini-batches). See docs/adfsdca.md."""
from .api import train_dfsdca, train_adfsdca

__all__ = ["train_dfsdca", "train_adfsdca"]
