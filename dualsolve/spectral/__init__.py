"""Spectral risk minimisation (Ge & Jiang 2024, SOREL): spectra, the spectral risk and the
projection onto the permutahedron.

Solvers: ``train_sorel`` (SOREL, the Cython loop in ``_sorel.pyx``; C API in
``_sorel.pxd``), its baselines ``train_lsvrg``, ``train_prospect`` and
``train_spectral_sgd`` (``baselines.py``; loops in ``_baselines.pyx``, C API in
``_baselines.pxd``) and ``spectral_reference`` (a certified optimum by dual accelerated
projected gradient, dense, for small problems).

Order convention: a spectrum sigma weighs the losses sorted ascending, so it is
nondecreasing, nonnegative and sums to 1; R_sigma(l) = sum_i sigma_i l_[i].
"""
from .baselines import train_lsvrg, train_prospect, train_spectral_sgd
from .projection import project_permutahedron
from .reference import SpectralReference, spectral_reference
from .sorel import spectral_objective, train_sorel
from .spectra import SPECTRUM_KINDS, check_spectrum, spectral_risk, spectrum

__all__ = ["spectrum", "spectral_risk", "check_spectrum", "project_permutahedron",
           "SPECTRUM_KINDS", "spectral_reference", "SpectralReference", "train_sorel",
           "spectral_objective", "train_lsvrg", "train_prospect", "train_spectral_sgd"]
