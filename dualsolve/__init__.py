"""dualsolve: Cython dual and primal-dual solvers for sparse linear and kernel models.

Procedural API: ``train_<method>(X, y, *, lam, loss, ...)`` returns a :class:`Model`.
Every objective is ``P(w) = (1/n) sum_i loss(y_i, x_i.w) + (lam/2) ||w||^2`` plus the
family's own terms; liblinear's ``C`` maps to ``lam = 1 / (C n)``.
"""
import os as _os

__version__ = "0.1.0.dev0"


def get_include():
    """Directory to add to Cython's include path to ``cimport dualsolve`` modules.

    Example (setup.py of an extension)::

        Extension("mymod", ["mymod.pyx"], include_dirs=[dualsolve.get_include(), numpy.get_include()])

    and in ``mymod.pyx``: ``from dualsolve.sdca._sdca cimport sdca_run``.
    """
    return _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))


from ._validation import ConvergenceWarning
from .datasets import load_svmlight, dump_svmlight
from .model import Model, load_model
from .sdca import train_sdca
from .newton import train_newton
from .linear import train_linear
from .mixup import train_mixup_sdca, train_kernel_sgd, mixup_augment, KernelModel
from .primal_dual import (train_bpd, train_ada_bpd, train_df_bpd, train_spdc, train_ada_spdc,
                          train_df_spdc, train_adf_spdc, train_svrg, train_katyusha)
from .adfsdca import train_dfsdca, train_adfsdca
from .auc import (train_ppd_sg, train_ppd_adagrad, train_solam, train_pga, auc_score,
                  auc_surrogate_optimum, auc_surrogate_objective)
from .spectral import (spectrum, spectral_risk, check_spectrum, project_permutahedron, train_sorel,
                       spectral_reference, SpectralReference, spectral_objective, train_lsvrg,
                       train_prospect, train_spectral_sgd)
from .selection import regularization_path, cross_validate
from . import datasets

__all__ = ["train_linear", "train_sdca", "train_newton", "train_mixup_sdca", "train_kernel_sgd", "mixup_augment",
           "train_bpd", "train_ada_bpd", "train_df_bpd", "train_spdc", "train_ada_spdc",
           "train_df_spdc", "train_adf_spdc", "train_svrg", "train_katyusha", "train_dfsdca",
           "train_adfsdca", "train_ppd_sg", "train_ppd_adagrad", "train_solam", "train_pga", "auc_score",
           "auc_surrogate_optimum", "auc_surrogate_objective", "spectrum", "spectral_risk",
           "check_spectrum", "project_permutahedron", "train_sorel", "spectral_reference",
           "SpectralReference", "spectral_objective", "train_lsvrg", "train_prospect",
           "train_spectral_sgd", "Model",
           "KernelModel", "load_model", "load_svmlight", "dump_svmlight", "datasets",
           "ConvergenceWarning", "get_include", "__version__", "regularization_path",
           "cross_validate"]
