"""Stochastic AUC maximisation for linear models (Liu, Yuan, Ying & Yang, ICLR 2020): PPD-SG
and PPD-AdaGrad (and the PGA and SOLAM baselines) on the square-loss AUC surrogate, its exact
optimum, and the exact ROC AUC. See docs/auc.md."""
from .api import train_ppd_sg, train_ppd_adagrad, train_pga, train_solam
from .metrics import auc_score
from .surrogate import auc_surrogate_objective, auc_surrogate_optimum

__all__ = ["train_ppd_sg", "train_ppd_adagrad", "train_pga", "train_solam", "auc_score",
           "auc_surrogate_objective", "auc_surrogate_optimum"]
