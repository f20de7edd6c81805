"""Exact ROC AUC: ties count one half, O(n log n).

    AUC = (1/(n+ n-)) sum_{i: y_i=+1} sum_{j: y_j=-1} ( I[s_i > s_j] + 0.5 I[s_i == s_j] )

the Mann-Whitney U statistic divided by n+ n-, equal to the trapezoidal area under the ROC
curve and to ``sklearn.metrics.roc_auc_score``.
"""
import numpy as np

from .._validation import check_labels


def _check_scores(scores, n, name):
    s = np.asarray(scores)
    if s.ndim == 2 and 1 in s.shape:
        s = s.ravel()
    if s.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {s.shape}")
    if s.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric; got dtype {s.dtype}")
    s = np.asarray(s, dtype=np.float64)
    if s.shape[0] != n:
        raise ValueError(f"{name} has {s.shape[0]} values but y has {n} labels")
    if not np.isfinite(s).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return s


def auc_score(y, scores, sample_weight=None):
    """Area under the ROC curve of ``scores`` for the binary labels ``y``, exactly.

    ``AUC = (1/(n+ n-)) sum_{i in +} sum_{j in -} (I[s_i > s_j] + I[s_i == s_j] / 2)``,
    computed by one stable sort and a sweep over groups of equal scores: each group with
    ``P`` positives and ``N`` negatives above ``N_below`` negatives adds
    ``P (2 N_below + N)`` to an integer count U2, and ``AUC = U2 / (2 n+ n-)`` (exact
    integer arithmetic, Python integers when ``2 n+ n-`` could overflow int64).
    O(n log n). Equals ``sklearn.metrics.roc_auc_score(y, scores)``.

    Parameters
    ----------
    y : array (n,)
        Two distinct values ({0, 1}, {-1, +1}, bool, ...); the larger one (1 / True) is the
        positive class.
    scores : array (n,)
        Finite real scores (higher means more positive), e.g. ``model.decision_function(X)``.
    sample_weight : array (n,) of weights >= 0, optional
        Weighted AUC: ``sum_{i+, j-} w_i w_j (I[s_i > s_j] + I[s_i == s_j]/2) /
        (sum_+ w_i sum_- w_j)`` (float sums).

    Returns
    -------
    float in [0, 1]; 0.5 for constant scores.

    Raises
    ------
    ValueError
        ``y`` with one class only or more than two values, NaN/inf in ``scores``,
        mismatched lengths, negative or all-zero weights of a class.
    """
    y_pm, _ = check_labels(y, np.asarray(y).size, "binary", name="y")
    n = y_pm.shape[0]
    s = _check_scores(scores, n, "scores")
    order = np.argsort(s, kind="mergesort")
    ss = s[order]
    pos = y_pm[order] > 0
    # group starts: first index of every run of equal sorted scores
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    if sample_weight is None:
        pos_g = np.add.reduceat(pos.astype(np.int64), starts)
        cnt_g = np.diff(np.r_[starts, n]).astype(np.int64)
        neg_g = cnt_g - pos_g
        n_pos = int(pos_g.sum())
        n_neg = n - n_pos
        neg_below = np.cumsum(neg_g) - neg_g
        if 2 * n_pos * n_neg < (1 << 62):
            u2 = int(np.sum(pos_g * (2 * neg_below + neg_g)))
        else:                                        # exact, without int64 overflow
            u2 = sum(int(a) * (2 * int(b) + int(c)) for a, b, c in zip(pos_g, neg_below, neg_g))
        return u2 / (2 * n_pos * n_neg)
    w = np.asarray(sample_weight)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"sample_weight must be 1-D with {n} values; got shape {w.shape}")
    w = np.asarray(w, dtype=np.float64)
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and >= 0")
    ws = w[order]
    wpos_g = np.add.reduceat(np.where(pos, ws, 0.0), starts)
    wneg_g = np.add.reduceat(np.where(pos, 0.0, ws), starts)
    Wp, Wn = wpos_g.sum(), wneg_g.sum()
    if not (Wp > 0 and Wn > 0):
        raise ValueError("sample_weight gives a total weight of zero to one class")
    wneg_below = np.cumsum(wneg_g) - wneg_g
    return float(np.sum(wpos_g * (wneg_below + 0.5 * wneg_g)) / (Wp * Wn))
