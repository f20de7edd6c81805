"""Linear primal-dual family (Wang & Xiao 2017; docs/primal_dual.md).

Batch (one ``X @ x`` and one ``X.T @ y`` per iteration, ``batch.py``): ``train_bpd``,
``train_ada_bpd``, ``train_df_bpd``. Randomized (O(nnz of the row) per step, the dense part
of the prox applied just in time; engine ``spdc_run`` in ``_spdc.pyx``, API in ``spdc.py``):
``train_spdc``, ``train_ada_spdc``, ``train_df_spdc``, ``train_adf_spdc``. Primal baselines
of the paper's figures (engine ``svrg_run`` in ``_svrg.pyx``, API in ``baselines.py``):
``train_svrg``, ``train_katyusha``.
"""
from .batch import train_bpd, train_ada_bpd, train_df_bpd
from .spdc import train_spdc, train_ada_spdc, train_df_spdc, train_adf_spdc
from .baselines import train_svrg, train_katyusha

__all__ = ["train_bpd", "train_ada_bpd", "train_df_bpd", "train_spdc", "train_ada_spdc",
           "train_df_spdc", "train_adf_spdc", "train_svrg", "train_katyusha"]
