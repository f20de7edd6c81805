"""Primal truncated Newton over CSR rows, certified by the duality gap (the large-C solver)."""
from .api import train_newton

__all__ = ["train_newton"]
