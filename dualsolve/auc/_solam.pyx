# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SOLAM (Ying, Wen & Lyu 2016; spec seed2 section 2.5), the OAUC baseline: projected
primal-dual SGD on the saddle function F with steps zeta/sqrt(t), the running estimate
p_t of Pr(y = +1) (the current sample included) and the gamma_t-weighted average of the
pre-update iterates. Step t on row i::

    p_t = ((t-1) p_{t-1} + I[y_i=+1]) / t,   gamma_t = zeta / sqrt(t)
    vbar += gamma_t (w_t, a_t, b_t), alphabar += gamma_t alpha_t     (normalised at the end)
    w_{t+1} = Proj_{||w|| <= R}(w_t - gamma_t c x_i),  a, b clipped to [-kappa R, kappa R]
    alpha_{t+1} = clip(alpha_t + gamma_t dF/dalpha, -2 kappa R, 2 kappa R)

O(nnz) per step (spec 3.4): w = sigma z is a ScaledVec (the projection is a rescale of
sigma, its norm is kept incrementally), and the weighted sum of the iterates is kept per
feature with the prefix sum Ps = sum_t gamma_t sigma_t: S_j += z_j (Ps - lastP_j) before
z_j changes.
"""
from libc.math cimport sqrt, fabs
from libc.stdint cimport int64_t

import numpy as np

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below
from dualsolve._core.lazy cimport (ScaledVec, sv_init, sv_scale, sv_dot, sv_add, sv_sqnorm,
                                   sv_renormalize)

cdef extern from *:
    """
    #define DS_SOLAM_RENORM 1e-6
    """
    const double SOLAM_RENORM "DS_SOLAM_RENORM"   # fold sigma into z below this
from dualsolve.auc._ppd cimport auc_grads


ctypedef struct SolamState:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    double zeta
    double R
    double kR                 # kappa R (bound on |a|, |b|); 2 kappa R on |alpha|
    ScaledVec sv              # w = sv.scale * z
    double* S                 # d: weighted sums of z_j sigma_t
    double* lastP             # d: Ps when S_j was last brought up to date
    double Ps
    double a, b, alpha
    double suma, sumb, sumal, gbar
    double p_hat
    int64_t t                 # steps done
    Py_ssize_t* trace
    Py_ssize_t trace_len
    rng_state rng


cdef inline void _flush_S(SolamState* st) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(st.d):
        st.S[j] += st.sv.v[j] * (st.Ps - st.lastP[j])
        st.lastP[j] = st.Ps


cdef void solam_steps(const floating* data, const index_t* indices, const index_t* indptr,
                      SolamState* st, int64_t steps) noexcept nogil:
    cdef int64_t s
    cdef Py_ssize_t i, q, start, nnz, j
    cdef double gt, h, c, ga, gb, gal, sig, nrm, lim
    for s in range(steps):
        i = <Py_ssize_t>rng_below(&st.rng, <unsigned long long>st.n)
        if st.trace != NULL and st.t < st.trace_len:
            st.trace[st.t] = i
        st.t += 1
        st.p_hat = ((st.t - 1) * st.p_hat + (1.0 if st.y[i] > 0 else 0.0)) / st.t
        gt = st.zeta / sqrt(<double>st.t)
        start = indptr[i]
        nnz = indptr[i + 1] - start
        h = sv_dot(&st.sv, data + start, indices + start, nnz)
        auc_grads(h, st.y[i], st.a, st.b, st.alpha, st.p_hat, st.p_hat * (1.0 - st.p_hat),
                  &c, &ga, &gb, &gal)
        # the average takes the pre-update iterate
        st.gbar += gt
        st.Ps += gt * st.sv.scale
        st.suma += gt * st.a
        st.sumb += gt * st.b
        st.sumal += gt * st.alpha
        for q in range(start, start + nnz):
            j = indices[q]
            st.S[j] += st.sv.v[j] * (st.Ps - st.lastP[j])
            st.lastP[j] = st.Ps
        sv_add(&st.sv, -gt * c, data + start, indices + start, nnz)
        nrm = sqrt(sv_sqnorm(&st.sv))
        if nrm > st.R:
            sig = st.R / nrm
            if fabs(st.sv.scale * sig) < SOLAM_RENORM:
                # fold sigma into z before it gets small: Ps - lastP_j would otherwise
                # cancel (relative error ~ eps / sigma; spec 3.4)
                _flush_S(st)
                sv_scale(&st.sv, sig)
                sv_renormalize(&st.sv)
                for j in range(st.d):
                    st.lastP[j] = 0.0
                st.Ps = 0.0
            else:
                sv_scale(&st.sv, sig)
        lim = st.kR
        st.a = min(max(st.a - gt * ga, -lim), lim)
        st.b = min(max(st.b - gt * gb, -lim), lim)
        st.alpha = min(max(st.alpha + gt * gal, -2.0 * lim), 2.0 * lim)


def _fit(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
         Py_ssize_t n_features, const double[::1] y, double zeta, double R, double kappa,
         Py_ssize_t n_epochs, unsigned long long seed, report, trace=None):
    """Run n_epochs epochs of n steps; report(epoch, wbar, abar, bbar, alphabar) after
    each (and at the start, with zeros) returns True to stop. Returns (wbar, abar, bbar,
    alphabar, epochs_done, p_hat)."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, e
    cdef SolamState st
    dd = max(d, 1)
    z = np.zeros(dd)
    S = np.zeros(dd)
    lastP = np.zeros(dd)
    cdef double[::1] zv = z, Sv = S, lv = lastP
    sv_init(&st.sv, &zv[0], d)
    st.n = n
    st.d = d
    st.y = &y[0]
    st.zeta = zeta
    st.R = R
    st.kR = kappa * R
    st.S = &Sv[0]
    st.lastP = &lv[0]
    st.Ps = 0.0
    st.a = st.b = st.alpha = 0.0
    st.suma = st.sumb = st.sumal = st.gbar = 0.0
    st.p_hat = 0.0
    st.t = 0
    st.trace = NULL
    st.trace_len = 0
    st.trace = intp_out(trace, &st.trace_len)
    rng_seed(&st.rng, seed)
    wbar = np.zeros(d)
    done = 0
    if not report(0, wbar, 0.0, 0.0, 0.0):
        for e in range(n_epochs):
            with nogil:
                solam_steps(&data[0], &indices[0], &indptr[0], &st, n)
                _flush_S(&st)
            wbar = S[:d] / st.gbar
            done = e + 1
            if report(e + 1, wbar, st.suma / st.gbar, st.sumb / st.gbar, st.sumal / st.gbar):
                break
    if done == 0:
        return wbar, 0.0, 0.0, 0.0, 0, st.p_hat
    return wbar, st.suma / st.gbar, st.sumb / st.gbar, st.sumal / st.gbar, done, st.p_hat
