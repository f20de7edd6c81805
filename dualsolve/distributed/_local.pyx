# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A CoCoA+ worker's three operations on its shard, each one call into the SDCA engine
(``dualsolve.sdca._sdca``, cimported: the same exact coordinate steps as ``train_sdca``).

The shard holds rows P_k of the global problem ``min_w (1/n) sum_i c_i phi(x_i.w) +
(lam/2)||w||^2`` (n rows in all). Its local subproblem (Ma, Smith, Jaggi et al. 2015, eq. 9)
at the global ``w`` is, over the change ``da`` of its duals,

    max_da  -(1/n) sum_{i in P_k} c_i h((a_i + da_i) / c_i) - (1/n) w.(A_k da)
            - (lam sigma / 2) ||A_k da / (lam n)||^2

which is plain SDCA on the shard's rows started at ``v = w``, with the step scale
``sigma / (lam n)`` in place of ``1 / (lam n)``: the engine with ``P.lam = lam n / (sigma
n_k)`` over its ``n_k`` rows. Afterwards ``A_k da / (lam n) = (v - w) / sigma``.
"""
import numpy as np

from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport make_loss
from dualsolve._core.buffers cimport double_ptr
from dualsolve.sdca._sdca cimport (SdcaProblem, sdca_problem_init, sdca_local_passes,
                                   sdca_score_sums, sdca_resync)


cdef void _problem(SdcaProblem* P, Py_ssize_t d, const double[::1] y, str loss, double param,
                   double lam, double bias, double* w, double* alpha,
                   double* sqnorm, double[::1] z, Py_ssize_t[::1] index, weight) except *:
    # (w and alpha as pointers: score_sums reads them only, from arrays that may be
    # read-only, as arrays that arrive from another process are)
    sdca_problem_init(P, y.shape[0], d, &y[0], make_loss(loss, param), lam, bias, w, alpha,
                      sqnorm, &z[0], &index[0])
    P.sqnorm_given = 1
    P.weight = double_ptr(weight, y.shape[0], "weight")


def local_update(const floating[::1] data, const index_t[::1] indices,
                 const index_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
                 str loss, double param, weight, const double[::1] sqnorm, double bias,
                 double lam, Py_ssize_t n_total, double sigma, double[::1] alpha,
                 double[::1] v, double passes, unsigned long long seed):
    """The local solver: ``passes`` passes of SDCA on the subproblem above, from ``v`` =
    the global w (overwritten with the local iterate) and ``alpha`` (updated in place).
    ``sqnorm``: the rows' squared norms, bias^2 included."""
    cdef SdcaProblem P
    cdef Py_ssize_t n_k = y.shape[0]
    z = np.empty(n_k)
    index = np.empty(n_k, dtype=np.intp)
    _problem(&P, n_features, y, loss, param, lam * n_total / (sigma * n_k), bias, &v[0],
             &alpha[0], <double*>&sqnorm[0], z, index, weight)
    with nogil:
        sdca_local_passes(&data[0], &indices[0], &indptr[0], &P, passes, seed)


def score_sums(const floating[::1] data, const index_t[::1] indices,
               const index_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
               str loss, double param, weight, double bias, const double[::1] alpha,
               const double[::1] w):
    """(sum_i c_i phi(x_i.w), sum_i c_i h(a_i / c_i), scores x_i.w) over the shard,
    the sums compensated: its shares of n P(w) and of -n D(a)."""
    cdef SdcaProblem P
    cdef Py_ssize_t n_k = y.shape[0]
    cdef double loss_sum, conj_sum
    cdef double[::1] sqnorm = np.empty(n_k)
    z = np.empty(n_k)
    index = np.empty(n_k, dtype=np.intp)
    _problem(&P, n_features, y, loss, param, 1.0, bias, <double*>&w[0], <double*>&alpha[0],
             &sqnorm[0], z, index, weight)
    with nogil:
        sdca_score_sums(&data[0], &indices[0], &indptr[0], &P, &loss_sum, &conj_sum)
    return loss_sum, conj_sum, z


def dual_primal(const floating[::1] data, const index_t[::1] indices,
                const index_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
                double bias, double lam, Py_ssize_t n_total, const double[::1] alpha):
    """The shard's share of w(a), ``A_k a_k / (lam n)``, from scratch (d (+1) entries)."""
    cdef SdcaProblem P
    cdef Py_ssize_t n_k = y.shape[0]
    out = np.zeros(n_features + (1 if bias != 0.0 else 0))
    cdef double[::1] out_v = out
    cdef double[::1] sqnorm = np.empty(n_k)
    z = np.empty(n_k)
    index = np.empty(n_k, dtype=np.intp)
    _problem(&P, n_features, y, "squared", 0.0, lam * n_total / n_k, bias, &out_v[0],
             <double*>&alpha[0], &sqnorm[0], z, index, None)
    with nogil:
        sdca_resync(&data[0], &indices[0], &indptr[0], &P)
    return out
