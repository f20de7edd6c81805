"""The worker side of CoCoA+: a :class:`ShardHost` keeps the rows of its shards and their
dual variables between rounds and runs the rounds on them (through ``_local``, the SDCA
engine). On a Dask cluster each worker has one host, a Dask actor; the simulation runs the
hosts in the caller's process. Nothing here imports Dask."""
import os

import numpy as np

from .._core import losses as _losses
from .._validation import check_csr
from ..datasets import load_svmlight
from . import _local

#: a shard with more distinct labels sends none back (a regression target)
MAX_LABELS = 4096


def read_source(source, zero_based):
    """(X, y) of one shard: a LIBSVM file's path (read here, on the worker) or an (X, y)
    pair. Errors name the shard's source."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"shard file {path!r} does not exist (on the worker that "
                                    "reads it)")
        try:
            return load_svmlight(path, zero_based=zero_based)
        except ValueError as exc:
            raise ValueError(f"shard file {path!r}: {exc}") from None
    X, y = source
    return X, y


class _Shard:
    """One shard: its rows with their columns renumbered to the ones it uses (``cols``, in
    order: every vector of the shard has ``len(cols)`` entries, plus the bias feature's,
    whatever the problem's width), labels, squared row norms and dual variables."""

    def __init__(self, data, indices, indptr, cols, sqnorm, y_raw):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.cols = cols                # global column of each local one
        self.width = cols.shape[0]      # local columns (the bias feature, if any, is next)
        self.row_sqnorm = sqnorm        # ||x_i||^2
        self.y_raw = y_raw              # the labels as read
        self.y = None                   # the current problem's labels (float64)
        self.sqnorm = None              # ||x_i||^2 + bias^2
        self.bias = 0.0
        self.alpha = None
        self.candidate = None           # a(w) of the last evaluate
        self.pending = None             # (start, change) of the last step, until its step
                                        # size arrives
        self.task = None
        self.w = None                   # the local w of the last evaluate

    def arrays(self):
        return self.data, self.indices, self.indptr, self.width


def _compact(Xc):
    """(data, indices renumbered to 0..m-1, indptr, the m global columns used): the
    vectors of a shard need only its own columns (news20 in 8 shards: a fifth of them)."""
    used = np.zeros(Xc.shape[1], dtype=bool)      # O(nnz + d): no sort of the indices
    used[Xc.indices] = True
    cols = np.flatnonzero(used)
    position = np.cumsum(used, dtype=Xc.indices.dtype) - 1
    return Xc.data, position[Xc.indices], Xc.indptr, cols.astype(np.int64)


class ShardHost:
    """The shards a worker holds (by shard number) and the rounds on them. Every method
    takes the shards it acts on, so one call serves all the shards of a host. Vectors of
    w travel in a shard's local columns (``cols``, sent at load, plus the bias feature's
    entry last when the problem has one)."""

    def __init__(self):
        self.shards = {}

    def load(self, sources, zero_based=False):
        """Read and check the shards ``{k: source}``; returns per shard what the driver
        checks across shards before the first round: rows, nonzeros, columns, the columns
        used and the distinct labels (None beyond MAX_LABELS: a regression target)."""
        out = {}
        for k, source in sources.items():
            X, y = read_source(source, zero_based)
            where = f"shards[{k}]" + (f" (file {source!r})" if isinstance(source, str) else "")
            Xc = check_csr(X, name=f"{where} X")
            y = np.asarray(y)
            if y.ndim != 1 or y.shape[0] != Xc.shape[0]:
                raise ValueError(f"{where}: y has shape {y.shape} for {Xc.shape[0]} rows "
                                 "of X")
            if y.dtype.kind in "fc" and not np.isfinite(y).all():
                raise ValueError(f"{where}: y contains NaN or infinity")
            data, indices, indptr, cols = _compact(Xc)
            self.shards[k] = _Shard(data, indices, indptr, cols, Xc.sqnorm, y)
            labels = np.unique(y)
            out[k] = dict(n=Xc.shape[0], nnz=int(Xc.indptr[-1]), d=Xc.shape[1], cols=cols,
                          labels=labels if labels.shape[0] <= MAX_LABELS else None)
        return out

    def configure(self, task, alphas):
        """Set the problem (``task``: loss, loss_param, bias, and the positive label, None
        for regression) of the shards ``{k: duals or None}`` and their duals (zeros
        for None); returns per shard sum_i phi(0; y_i), its share of n P(0)."""
        out = {}
        for k, alpha in alphas.items():
            s = self.shards[k]
            if task["positive"] is None:
                s.y = np.ascontiguousarray(s.y_raw, dtype=np.float64)
            else:
                s.y = np.where(s.y_raw == task["positive"], 1.0, -1.0)
            s.bias = task["bias"]
            s.sqnorm = s.row_sqnorm + s.bias * s.bias
            s.task = task
            n_k = s.indptr.shape[0] - 1
            s.alpha = np.zeros(n_k) if alpha is None else np.array(alpha, dtype=np.float64)
            s.pending = None
            if s.alpha.shape != (n_k,):
                raise ValueError(f"warm_start gives shards[{k}] {s.alpha.shape} duals for "
                                 f"{n_k} rows")
            conj = _losses.conjugate(task["loss"], s.alpha, s.y, task["loss_param"])
            if not np.isfinite(conj).all():
                raise ValueError(f"warm_start: the duals of shards[{k}] lie outside the dual "
                                 "domain of the loss for its labels (another loss or labels?)")
            out[k] = float(np.sum(_losses.value(task["loss"], np.zeros(n_k), s.y,
                                                task["loss_param"])))
        return out

    def set_alpha(self, alphas):
        """Restore duals ``{k: alpha}`` (a round that did not complete is rolled back)."""
        for k, a in alphas.items():
            self.shards[k].alpha = np.array(a, dtype=np.float64)
            self.shards[k].pending = None

    def _sums(self, s, w, alpha):
        t = s.task
        return _local.score_sums(*s.arrays(), s.y, t["loss"], t["loss_param"], None, s.bias,
                                 alpha, w)

    def evaluate(self, ws, lam, n_total, gamma, mixes):
        """A round's first half, at the global w (``ws``: shard -> its local entries):
        first the last round's duals are completed with the driver's step ``gamma``
        (``a_start + gamma da``); then per shard (loss_sum, conj_sum) of its duals ``a``;
        the candidate duals ``a(w) = -phi'(x_i.w)`` (the dual point of the primal iterate)
        with ``conj[j]``, the conjugate sum of ``a + mixes[j] (a(w) - a)``, and their part
        of w(a(w)), ``A_k a(w) / (lam n)`` in local columns (both None where a(w) leaves
        the dual domain). The candidate is kept for :meth:`step` and :meth:`mixed`."""
        out = {}
        for k, w in ws.items():
            s = self.shards[k]
            t = s.task
            s.w = np.asarray(w, dtype=np.float64)
            if s.pending is not None:
                start, change = s.pending
                s.alpha = start + gamma * change
                s.pending = None
            loss_sum, conj_sum, z = self._sums(s, s.w, s.alpha)
            cand = -_losses.derivative(t["loss"], z, s.y, t["loss_param"])
            toward = cand - s.alpha
            conj = np.array([np.sum(_losses.conjugate(t["loss"], s.alpha + m * toward, s.y,
                                                      t["loss_param"])) for m in mixes])
            s.candidate, part = None, None
            if np.isfinite(conj).all():
                s.candidate = cand
                part = _local.dual_primal(*s.arrays(), s.y, s.bias, lam, n_total, cand)
            out[k] = (loss_sum, conj_sum, conj if part is not None else None, part)
        return out

    def mixed(self, mix, shards):
        """The duals ``a + mix (a(w) - a)`` of the last :meth:`evaluate`'s candidate."""
        return {k: self._mix(self.shards[k], mix) for k in shards}

    @staticmethod
    def _mix(s, mix):
        return s.candidate.copy() if mix == 1.0 else s.alpha + mix * (s.candidate - s.alpha)

    def step(self, ws, mix, lam, n_total, sigma, passes, seeds, steps):
        """A round's second half: on the shards ``{k: seed}``, from the global w (``ws``:
        shard -> its local entries, or None: the w of :meth:`evaluate`) and the duals
        ``a + mix (a(w) - a)`` (``mix = 0``: their own), the local solve. Returns per shard
        (dw, conj, da, start): ``dw = A_k da / (lam n)`` in local columns, ``conj[j]`` the
        conjugate sum of ``start + steps[j] da`` (the driver picks its step from them), the
        change ``da`` and, when ``mix > 0``, the start. The duals stay at the start until
        :meth:`evaluate` gets the step."""
        steps = np.asarray(steps, dtype=np.float64)
        out = {}
        for k, seed in seeds.items():
            s = self.shards[k]
            t = s.task
            w = s.w if ws is None else np.asarray(ws[k], dtype=np.float64)
            if mix > 0:
                s.alpha = self._mix(s, mix)
            local = s.alpha.copy()
            v = w.copy()
            _local.local_update(*s.arrays(), s.y, t["loss"], t["loss_param"], None, s.sqnorm,
                                s.bias, lam, n_total, sigma, local, v, passes, seed)
            v -= w
            v /= sigma
            change = local - s.alpha
            conj = np.array([np.sum(_losses.conjugate(t["loss"], s.alpha + g * change, s.y,
                                                      t["loss_param"])) for g in steps])
            s.pending = (s.alpha, change)
            out[k] = (v, conj, change, s.alpha if mix > 0 else None)
        return out

    def sums(self, ws):
        """(loss_sum, conj_sum) of each shard's duals at w (``ws``: its local entries)."""
        return {k: self._sums(self.shards[k], np.asarray(w, dtype=np.float64),
                              self.shards[k].alpha)[:2] for k, w in ws.items()}

    def primal(self, lam, n_total, shards):
        """A_k a_k / (lam n) of each shard, in local columns: its part of w(a), from
        scratch."""
        return {k: _local.dual_primal(*self.shards[k].arrays(), self.shards[k].y,
                                      self.shards[k].bias, lam, n_total, self.shards[k].alpha)
                for k in shards}
