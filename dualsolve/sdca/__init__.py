"""Linear SDCA over CSR rows (the engine the kernel-mixup family extends)."""
from .api import train_sdca

__all__ = ["train_sdca"]
