"""CoCoA+ (Ma, Smith, Jaggi et al., ICML 2015; Smith et al., JMLR 2018) over shards of
rows: the driver's rounds, the same for a Dask cluster and for the in-process simulation.

Each round sends the global ``w`` to the hosts; every shard returns its sums at ``w``
(which certify the incoming iterate: the duality gap is a sum over shards) and the change
``dw_k = A_k da_k / (lam n)`` of its local solve (``_local.pyx``: SDCA's exact steps on
CoCoA+'s subproblem, sigma' = K for ``aggregation="add"``). The driver adds the changes in
shard order (so a seed fixes the result whatever worker holds what), moves along them by
the step that maximises the dual (``line_search``; CoCoA+'s own step is 1), starts each
round from the best dual point between the shards' duals and those of the current w, and
keeps
the duals of the last completed round: a worker lost in a round costs that round only
(its shards are re-read elsewhere with those duals, the others rolled back to them, and the
round runs again with the same seeds).
"""
import os
import warnings

import numpy as np
import scipy.sparse as sp

from .._core import losses as _losses
from .._core import status as _status
from .._driver import COMMON, check_loss
from .._monitor import EpochMonitor
from .._params import Boolean, Integral, Interval, Options, Real, validate
from .._validation import ConvergenceWarning, check_regularization, check_seed
from ..model import Model, make_history, warm_start_dual
from ..multiclass import class_warm_starts, combine
from ..sdca.api import LOSSES as SDCA_LOSSES
from .hosts import DaskHosts, LocalHosts, WorkerLost

LOSSES = SDCA_LOSSES
AGGREGATION = {"add": "CoCoA+ (sigma' = K, gamma = 1)", "average": "CoCoA (sigma' = 1, gamma = 1/K)"}
#: the line search's steps along the added changes: STEPS from 1/(2K) to MAX_STEP (and the
#: aggregation's own step)
STEPS, MAX_STEP = 24, 8.0
#: the points on the segment from the shards' duals a to the candidates a(w) whose dual
#: value the driver compares each round (0: a itself, 1: a(w))
MIXES = np.linspace(0.0, 1.0, 21)
#: worker losses tolerated in one solve before it gives up
MAX_FAULTS = 16
HISTORY = ("primal", "dual", "gap", "bytes")

PARAMS = {
    "max_rounds": [Interval(Integral, 0, None)],
    "local_epochs": [Interval(Real, 0, None, closed="neither")],
    "aggregation": [Options(*AGGREGATION)],
    "line_search": [Boolean()],
    "fit_intercept": [Boolean()],
    "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
    "n_features": [None, Interval(Integral, 1, None)],
    "zero_based": [Boolean()],
}


def train_cocoa(shards, *, client=None, loss="logistic", lam=None, C=None, tol=1e-6,
                max_rounds=1000, local_epochs=1.0, aggregation="add", line_search=True, seed=0,
                verbose=0, callback=None, warm_start=None, fit_intercept=False,
                intercept_scaling=1.0,
                smoothing=None, epsilon=None, n_features=None, zero_based=False):
    """Train an L2-regularised linear model on rows spread over a Dask cluster, by CoCoA+
    with ``train_sdca``'s coordinate steps as the local solver.

    Solves, with ``n`` rows over all shards::

        min_w  P(w) = (1/n) sum_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    the problem of ``train_sdca`` on the rows of all shards stacked in order, through its
    dual. Each round every shard runs ``local_epochs`` passes of exact dual coordinate
    steps on its CoCoA+ subproblem (the curvature term scaled by sigma' = K, the number of
    shards) from the current ``w``, and ``w`` moves along the sum of their changes; each
    round starts from the best dual point between the shards' duals and the duals
    ``-loss'(x_i.w)`` of the current ``w`` (docs/distributed.md says why). The solve
    stops when the duality gap ``P(w) - D(a)``, summed over the shards at the start of a
    round, is ``<= tol * D(a)`` (after ``w`` is recomputed from the duals), so
    ``(P(w) - P*) / P* <= tol`` is certified, as for ``train_sdca``.

    Parameters
    ----------
    shards : list of paths, or of (X_k, y_k) pairs
        LIBSVM files that the workers read themselves (the driver never holds the rows;
        shards may end at different columns: ``n_features`` is the largest unless given),
        or blocks of rows (CSR matrices of the same number of columns and their labels),
        each sent once to the worker that keeps it. Their order is the order of the rows
        of the stacked problem and of ``Model.dual``.
    client : dask.distributed.Client, optional
        The cluster to run on (e.g. ``Client("tcp://scheduler:8786")``). None starts a
        local cluster of one single-threaded worker process per core, closed afterwards
        (and the ``OMP_NUM_THREADS=1`` its nannies set in this process put back).
    loss, lam, C, tol, seed, verbose, callback, smoothing, epsilon, fit_intercept,
    intercept_scaling
        As in ``train_sdca`` (``C``: ``lam = 1/(C n)``; ``fit_intercept``: the penalised
        constant feature, liblinear's ``-B``). ``callback(info)`` after every round; True
        stops. Ctrl-C stops at the next round and raises KeyboardInterrupt carrying the
        partial model (``exc.model``).
    max_rounds : int >= 0
        Communication rounds (each one local solve per shard); ``Model.n_epochs`` counts
        rounds.
    local_epochs : float > 0
        Passes over its rows each shard makes per round (a fraction: a random subset).
    aggregation : {"add", "average"}
        "add" is CoCoA+ (sigma' = K, the changes added); "average" the original CoCoA
        (sigma' = 1, the changes averaged), slower as K grows.
    line_search : bool
        Move along the added changes by the step that maximises the dual (among 24 steps
        from 1/(2K) to 8, and the aggregation's own: 1 for "add"), computed from one
        conjugate sum per shard and step; False takes the aggregation's step. Either way
        the dual only rises.
    warm_start : Model or array, optional
        Duals to start from (a model of this function on the same shards, e.g. at a nearby
        ``lam``): n entries, or (n, k) for k classes.
    n_features : int, optional
        Columns of the problem (files only: e.g. for a test set's columns).
    zero_based : bool
        Whether the files' feature indices start at 0 (LIBSVM's start at 1).

    Two classes: the larger label is the positive class. More: one-vs-rest, one CoCoA+
    solve per class, one class after the other on the same loaded shards
    (``params["class_stop_reasons"]`` and the class column of ``history``, as in
    ``dualsolve.multiclass``).

    Returns
    -------
    Model
        ``coef``, ``intercept``, ``dual`` (the dual point that certifies ``coef``, the
        shards' rows in order; ``X^T dual / (lam n)`` equals ``coef`` when it is the shards'
        own duals, not when it lies towards ``-loss'(X coef)``), ``history`` (one row
        per round: primal, dual, gap at the round's start, seconds, and ``bytes``, the
        arrays sent both ways in that round; the verbose line and the callback, which come
        before the round's local solves, see the evaluation's share only),
        ``stop_reason`` ("converged" certifies as
        above), ``n_epochs`` (rounds); ``params`` has ``n_shards``, ``sigma``, ``faults``
        (workers lost and recovered) and the cluster's ``n_workers``.
    """
    cfg, loss, loss_param = _options(dict(locals()))
    sources = _check_shards(shards)
    own_cluster = environ = None
    if client is None:
        environ = dict(os.environ)
        client, own_cluster = _local_cluster()
    try:
        hosts = DaskHosts(client)
        return _train(hosts, sources, loss, loss_param, lam, C, warm_start, cfg,
                      n_workers=len(client.scheduler_info(n_workers=-1)["workers"]))
    finally:
        if own_cluster is not None:
            client.close()
            own_cluster.close()
            restore_environ(environ)


def simulate_cocoa(X, y, n_shards, *, loss="logistic", lam=None, C=None, tol=1e-6,
                   max_rounds=1000, local_epochs=1.0, aggregation="add", line_search=True,
                   seed=0, verbose=0,
                   callback=None, warm_start=None, fit_intercept=False, intercept_scaling=1.0,
                   smoothing=None, epsilon=None):
    """``train_cocoa``'s rounds on ``X``'s rows cut into ``n_shards`` contiguous blocks of
    near-equal size, all in this process (no Dask): the same round logic, seeds and
    results, for studying rounds against shards (``bench/distributed.py``)."""
    cfg, loss, loss_param = _options(dict(locals(), n_features=None, zero_based=False))
    n_shards = validate("n_shards", n_shards, [Interval(Integral, 1, None)])
    sources = split_rows(X, y, n_shards)
    return _train(LocalHosts(), sources, loss, loss_param, lam, C, warm_start, cfg,
                  n_workers=1)


def split_rows(X, y, n_shards):
    """``n_shards`` (X_k, y_k) blocks of consecutive rows, sizes differing by at most one."""
    X = sp.csr_matrix(X)
    y = np.asarray(y)
    n = X.shape[0]
    if n_shards > n:
        raise ValueError(f"n_shards={n_shards} exceeds the {n} rows of X")
    cuts = np.linspace(0, n, n_shards + 1).round().astype(int)
    return [(X[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _options(args):
    """(the validated shared and CoCoA+ options, loss, its parameter) of a call."""
    cfg = {k: validate(k, args[k], COMMON[k]) for k in ("tol", "seed", "verbose", "callback")}
    cfg.update({k: validate(k, args[k], c) for k, c in PARAMS.items()})
    return (cfg,) + check_loss("train_cocoa", LOSSES, args["loss"], args["smoothing"],
                               args["epsilon"])


def _check_shards(shards):
    if isinstance(shards, (str, bytes, os.PathLike)) or not hasattr(shards, "__len__"):
        raise TypeError("shards must be a list of LIBSVM file paths or of (X, y) pairs; got "
                        f"{type(shards).__name__}")
    if len(shards) == 0:
        raise ValueError("shards is empty: give at least one file or (X, y) pair")
    out = []
    for k, s in enumerate(shards):
        if isinstance(s, (str, os.PathLike)):
            out.append(os.fspath(s))
        elif isinstance(s, tuple) and len(s) == 2:
            out.append(s)
        else:
            raise TypeError(f"shards[{k}] must be a file path or an (X, y) pair; got "
                            f"{type(s).__name__}")
    kinds = {isinstance(s, str) for s in out}
    if len(kinds) > 1:
        raise ValueError("shards mixes file paths and (X, y) pairs: give one kind")
    return out


def restore_environ(saved):
    """Put back the variables of ``saved`` (a copy of ``os.environ``) that changed since.
    Dask's nannies set ``OMP_NUM_THREADS=1`` (and MKL's, OpenBLAS's) in this process's
    environment before they spawn their workers and leave them there; a cluster that
    ``train_cocoa`` started for itself must not leave every later child process of the
    caller one thread."""
    for key in set(os.environ) | set(saved):
        if key not in saved:
            del os.environ[key]
        elif os.environ.get(key) != saved[key]:
            os.environ[key] = saved[key]


def _local_cluster():
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("train_cocoa runs on Dask: pip install 'dualsolve[distributed]' "
                          "(dask.distributed)") from None
    from .._threads import usable_cores
    cluster = LocalCluster(n_workers=usable_cores(), threads_per_worker=1, processes=True,
                           dashboard_address=":0")      # any free port: never a clash
    return Client(cluster), cluster


class _Run:
    """The state of one solve on the hosts: shards, sizes, the current task, checkpoint."""

    def __init__(self, hosts, sources, zero_based):
        self.hosts = hosts
        self.sources = sources
        self.zero_based = zero_based
        self.K = len(sources)
        self.faults = 0
        self.task = None
        self.ckpt = None
        self.n_features = None
        self.cols = None        # shard -> the global columns it uses
        self.idx = None         # shard -> where its local vectors sit in w (bias: last)

    def local(self, w):
        """``make_args`` piece: each shard's entries of the global vector w."""
        return lambda ks: {k: w[self.idx[k]] for k in ks}

    def call(self, method, make_args):
        """Per-shard results of ``method`` on every host, merged."""
        merged = {}
        for res in self.hosts.call(method, make_args).values():
            merged.update(res or {})
        return merged

    def load(self):
        self.hosts.place(range(self.K))
        return self.call("load", lambda ks: ({k: self.sources[k] for k in ks},
                                             self.zero_based))

    def recover(self, lost):
        """Put the lost shards on live hosts with the checkpoint's duals; roll the others
        back to it."""
        self.faults += 1
        if self.faults > MAX_FAULTS:
            raise RuntimeError(f"train_cocoa lost workers {self.faults} times; giving up")
        self.hosts.place(lost)
        for k in sorted(lost):
            self.hosts.call_on(k, "load", {k: self.sources[k]}, self.zero_based)
            if self.task is not None:
                self.hosts.call_on(k, "configure", self.task, {k: self.ckpt[k]})
        if self.task is not None:
            self.call("set_alpha", lambda ks: ({k: self.ckpt[k] for k in ks if k not in lost},))

    def retrying(self, fn):
        """``fn()``, again after recovering from each lost worker."""
        while True:
            try:
                return fn()
            except WorkerLost as exc:
                self.recover(exc.shards)


def _train(hosts, sources, loss, loss_param, lam, C, warm_start, cfg, n_workers):
    run = _Run(hosts, sources, cfg["zero_based"])
    try:
        metas = run.retrying(run.load)
        d = _check_metas(metas, sources, cfg["n_features"])
        run.n_features = d
        run.cols = {k: metas[k]["cols"] for k in range(run.K)}
        n_rows = [metas[k]["n"] for k in range(run.K)]
        n = int(sum(n_rows))
        lam = check_regularization(lam, C, n)
        classes = _classes(metas, loss)
        bias = cfg["intercept_scaling"] if cfg["fit_intercept"] else 0.0
        seed = check_seed(cfg["seed"])
        starts = _warm_starts(warm_start, n, classes)
        positives = [None] if classes is None else (
            [classes[1]] if classes.shape[0] == 2 else list(classes))
        models = []
        for c, positive in enumerate(positives):
            task = dict(loss=loss, loss_param=loss_param, bias=bias, positive=positive)
            label = "" if len(positives) == 1 else f" (class {positive!r} vs rest)"
            if label and cfg["verbose"]:
                print(f"train_cocoa: class {positive!r} ({c + 1}/{len(positives)}) vs rest")
            try:
                models.append(_solve(run, task, _split(starts[c], n_rows), n_rows, d, lam,
                                     seed + c, cfg, label))
            except BaseException as exc:
                partial = getattr(exc, "model", None)
                if partial is not None and len(positives) > 1:
                    exc.model = combine(models + [partial], classes, d)
                raise
            if models[-1].stop_reason in ("callback", "interrupted"):
                break
        model = models[0] if len(positives) == 1 else combine(models, classes, d)
        if classes is not None and classes.shape[0] == 2:
            model.classes = classes
        model.params.update(n_workers=n_workers, faults=run.faults)
        return model
    finally:
        hosts.close()


def _check_metas(metas, sources, n_features):
    K = len(sources)
    widths = [metas[k]["d"] for k in range(K)]
    files = isinstance(sources[0], str)
    if not files and len(set(widths)) > 1:
        raise ValueError(f"the shards' X have different numbers of columns ({widths}): every "
                         "block must have the problem's n_features columns")
    d = max(widths)
    if n_features is not None:
        if files and n_features < d:
            k = widths.index(d)
            raise ValueError(f"n_features={n_features} but shard file {sources[k]!r} has "
                             f"column {d} (counting from 1)")
        if not files and n_features != d:
            raise ValueError(f"n_features={n_features} but the shards' X have {d} columns")
        d = n_features
    return d


def _classes(metas, loss):
    if loss in _losses.REGRESSION_LOSSES:
        return None
    labels = [metas[k]["labels"] for k in sorted(metas)]
    if any(lab is None for lab in labels):
        raise ValueError(f"loss={loss!r} classifies, but a shard's y has more than "
                         "4096 distinct values (a regression target?)")
    classes = np.unique(np.concatenate(labels))
    if classes.shape[0] < 2:
        raise ValueError(f"y has one class only ({classes[0]!r}) over all shards; two are needed")
    return classes


def _warm_starts(warm_start, n, classes):
    """The duals to start each class's solve from (None: zeros), checked as every solver's
    (``warm_start_dual``; more than two classes: ``dualsolve.multiclass``'s split of a
    one-vs-rest Model)."""
    if warm_start is None:
        return [None] * (1 if classes is None or classes.shape[0] == 2 else classes.shape[0])
    if classes is None or classes.shape[0] == 2:
        return [warm_start_dual(warm_start, n)]
    return [warm_start_dual(m, n) for m in class_warm_starts(warm_start, classes)]


def _split(alpha, n_rows):
    cuts = np.cumsum([0] + n_rows)
    return {k: None if alpha is None else alpha[cuts[k]:cuts[k + 1]] for k in range(len(n_rows))}


def _round_seed(seed, t, k):
    """The seed of shard k's local solve in round t: fixed by (seed, t, k) alone, so a
    rerun round (after a lost worker) repeats itself exactly."""
    return int(np.random.SeedSequence([seed, t, k]).generate_state(1, np.uint64)[0])


def _solve(run, task, alphas, n_rows, d, lam, seed, cfg, label):
    """One certified CoCoA+ solve of ``task`` on the loaded shards. Each round: the hosts
    evaluate the current w (the gap of their duals, and the candidate duals a(w) with
    their part of w(a(w))); the driver certifies with the best dual point on the segment
    from the duals to a(w), reports, and the round's local solves start from that point
    (the dual only rises; it undoes the slow exchange of dual mass between shards that
    CoCoA+ alone needs many rounds for); then the local solves, and
    the step along their added changes (``_best_step``), which the hosts apply to their
    duals at the next evaluation."""
    K, n = run.K, int(sum(n_rows))
    sigma, gamma = (float(K), 1.0) if cfg["aggregation"] == "add" else (1.0, 1.0 / K)
    steps = np.array([gamma])
    if cfg["line_search"]:
        steps = np.union1d(np.geomspace(1.0 / (2 * K), MAX_STEP, STEPS), steps)
    d_w = d + (1 if task["bias"] else 0)
    run.idx = {k: np.append(run.cols[k], d) if task["bias"] else run.cols[k] for k in range(K)}
    mon = EpochMonitor(HISTORY, callback=cfg["callback"], verbose=cfg["verbose"])
    run.task = task
    run.ckpt = {k: (np.zeros(n_rows[k]) if a is None else np.array(a, dtype=np.float64))
                for k, a in alphas.items()}

    def configure():
        return run.call("configure", lambda ks: (task, {k: run.ckpt[k] for k in ks}))

    p0 = sum(v for _, v in sorted(run.retrying(configure).items())) / n
    floor = _status.floor(p0)
    warm = any(a is not None for a in alphas.values())
    w = run.retrying(lambda: _exact_w(run, lam, n, d_w)) if warm else np.zeros(d_w)
    status, t, dual_out, step_size = _status.MAX_EPOCHS, 0, None, None
    primal = dual = gap = np.nan
    try:
        while True:
            update = t < cfg["max_rounds"]
            ev = run.retrying(lambda: _evaluate(run, w, lam, n, d_w, cfg["tol"], floor,
                                                step_size))
            primal, dual, gap = ev["values"]
            sent = ev["bytes"]
            if ev["certified"]:
                w, dual_out, status = ev["w"], ev["duals"], _status.CONVERGED
                mon.step(t, (primal, dual, gap, float(sent)))
                break
            if ev["w"] is not None:         # a failed certification gave the exact w(a)
                w = ev["w"]
            stop = mon.step(t, (primal, dual, gap, float(sent)))
            if stop:
                status = stop
                break
            if not update:
                break
            mix, start = ev["mix"], ev["w_start"]
            seeds = {k: _round_seed(seed, t, k) for k in range(K)}
            faults = run.faults

            def local_solves():
                resend = mix > 0 or ev["w"] is not None or run.faults != faults
                if run.faults != faults and mix > 0:    # the recovered shards lost a(w)
                    _evaluate(run, w, lam, n, d_w, 0.0, floor, step_size)
                return run.call("step", lambda ks: (run.local(start)(ks) if resend else None,
                                                    mix, lam, n,
                                                    sigma, cfg["local_epochs"],
                                                    {k: seeds[k] for k in ks}, steps))

            out = run.retrying(local_solves)
            change = _apply(np.zeros(d_w), out, run.idx)
            step_size = _best_step(steps, out, start, change, lam, n, K)
            w = start + step_size * change
            run.ckpt = {k: (run.ckpt[k] if out[k][3] is None else out[k][3])
                        + step_size * out[k][2] for k in range(K)}
            mon.rows[-1] = mon.rows[-1][:-1] + (float(sent + _bytes_step(out, mix > 0,
                                                                         run)),)
            t += 1
    except KeyboardInterrupt as exc:
        status = _status.INTERRUPTED
        exc.model = _model(run, w, None, task, status, t, mon, lam, n, d, sigma, cfg)
        raise
    model = _model(run, w, dual_out, task, status, t, mon, lam, n, d, sigma, cfg)
    if mon.error is not None:
        if isinstance(mon.error, KeyboardInterrupt):
            mon.error.model = model
        raise mon.error
    if status == _status.MAX_EPOCHS and cfg["tol"] > 0 and cfg["max_rounds"] > 0:
        warnings.warn(f"train_cocoa{label} stopped at max_rounds={cfg['max_rounds']} with the "
                      f"duality gap {gap:.3e} > tol * D = {cfg['tol'] * dual:.3e}; increase "
                      "max_rounds or local_epochs", ConvergenceWarning, stacklevel=4)
    return model


def _best_step(steps, out, start, change, lam, n, K):
    """The step along the shards' added changes that maximises the dual, among ``steps``
    (the dual is concave along them: conjugate sums from the shards, the quadratic here)."""
    conj = sum(out[k][1] for k in range(K))
    ss, sc, cc = float(start @ start), float(start @ change), float(change @ change)
    dual = -conj / n - 0.5 * lam * (ss + 2 * steps * sc + steps * steps * cc)
    dual = np.where(np.isfinite(dual), dual, -np.inf)
    return float(steps[int(np.argmax(dual))])


def _evaluate(run, w, lam, n, d_w, tol, floor, step_size=None):
    """A round's first half: P(w) and the best dual value on the segment from the shards'
    duals ``a`` to the candidates ``a(w)`` (``a + mix (a(w) - a)``, MIXES; concave along
    it: conjugate sums from the shards, the quadratic here, since w(a) is linear), its
    gap; certified (with ``w`` and ``duals`` to return) or not (``w``: the exact w(a)
    when a check of the shards' own duals failed; ``mix`` and ``w_start``: where the local
    solves start); ``bytes`` sent both ways."""
    ev = run.call("evaluate", lambda ks: (run.local(w)(ks), lam, n, step_size, MIXES))
    sent = sum(2 * 8 * run.idx[k].shape[0] + 24 + MIXES.nbytes for k in range(run.K))
    primal, dual, _ = _gap(ev, w, lam, n)
    res = dict(values=(primal, dual, primal - dual), certified=False, w=None, duals=None,
               mix=0.0, w_start=w, bytes=sent)
    if all(ev[k][2] is not None for k in range(run.K)):
        w_cand = _apply(np.zeros(d_w), {k: (ev[k][3],) for k in range(run.K)}, run.idx)
        conj = sum(ev[k][2] for k in range(run.K))
        toward = w_cand - w
        duals = _segment_duals(conj, w, toward, MIXES, lam, n)
        j = int(np.argmax(duals))
        if MIXES[j] > 0 and duals[j] > dual:
            res.update(values=(primal, duals[j], primal - duals[j]), mix=float(MIXES[j]),
                       w_start=w + MIXES[j] * toward if MIXES[j] < 1 else w_cand)
    primal, best, gap = res["values"]
    if not _status.certifies(gap, best, tol, floor):
        return res
    mix = res["mix"]
    w_exact = _exact_w(run, lam, n, d_w)        # w(a) from scratch: no rounding drift
    if mix == 0.0:      # the shards' own duals, at the exact w(a)
        primal, dual, gap = _gap(run.call("sums", lambda ks: (run.local(w_exact)(ks),)),
                                 w_exact, lam, n)
        res.update(values=(primal, dual, gap), w=w_exact, w_start=w_exact,
                   certified=_status.certifies(gap, dual, tol, floor))
        if res["certified"]:
            res["duals"] = run.ckpt
        return res
    # w(a) and w(a(w)) both from scratch: the mixed dual's value, exactly; it certifies w
    j = int(np.flatnonzero(MIXES == mix)[0])
    best = float(_segment_duals(conj[j:j + 1], w_exact, w_cand - w_exact, MIXES[j:j + 1],
                                lam, n)[0])
    res.update(values=(primal, best, primal - best),
               certified=_status.certifies(primal - best, best, tol, floor))
    if res["certified"]:
        res.update(w=w, duals=run.call("mixed", lambda ks: (mix, ks)))
    return res


def _segment_duals(conj, w, toward, mixes, lam, n):
    """D(a + m (a(w) - a)) for each m in ``mixes``, from the conjugate sums ``conj`` and
    w(a) = ``w``, w(a(w)) - w(a) = ``toward`` (NaN and inf conjugates give -inf)."""
    ww, wt, tt = float(w @ w), float(w @ toward), float(toward @ toward)
    duals = -conj / n - 0.5 * lam * (ww + 2 * mixes * wt + mixes * mixes * tt)
    return np.where(np.isfinite(duals), duals, -np.inf)


def _bytes_step(out, resent, run):
    """The step's arrays: the local changes and duals back, each shard's part of its start
    out when it moved."""
    back = sum(v[0].nbytes + v[1].nbytes + v[2].nbytes + (0 if v[3] is None else v[3].nbytes)
               for v in out.values())
    return back + (sum(8 * i.shape[0] for i in run.idx.values()) if resent else 0)


def _gap(sums, w, lam, n):
    loss_sum = sum(sums[k][0] for k in sorted(sums))
    conj_sum = sum(sums[k][1] for k in sorted(sums))
    wn = float(w @ w)
    primal = loss_sum / n + 0.5 * lam * wn
    dual = -conj_sum / n - 0.5 * lam * wn
    return primal, dual, (loss_sum + conj_sum) / n + lam * wn


def _exact_w(run, lam, n, d_w):
    """w(a) = sum_k A_k a_k / (lam n) from scratch, added in shard order."""
    return _apply(np.zeros(d_w), {k: (v,) for k, v in run.call("primal", lambda ks: (
        lam, n, ks)).items()}, run.idx)


def _apply(w, out, idx):
    """w plus every shard's change ``out[k][0]`` (in its local columns), in shard order."""
    w = w.copy()
    for k in range(len(idx)):
        w[idx[k]] += out[k][0]
    return w


def _model(run, w, duals, task, status, t, mon, lam, n, d, sigma, cfg):
    bias = task["bias"]
    duals = run.ckpt if duals is None else duals
    dual = np.concatenate([duals[k] for k in range(run.K)])
    params = dict(loss=task["loss"], loss_param=task["loss_param"], lam=lam,
                  C=1.0 / (lam * n), tol=cfg["tol"], max_rounds=cfg["max_rounds"],
                  local_epochs=cfg["local_epochs"], aggregation=cfg["aggregation"],
                  line_search=cfg["line_search"],
                  sigma=sigma, n_shards=run.K, seed=cfg["seed"],
                  fit_intercept=cfg["fit_intercept"], intercept_scaling=cfg["intercept_scaling"])
    classes = None if task["positive"] is None else np.array([-1.0, 1.0])
    return Model(coef=w[:d].copy(), intercept=float(w[d] * bias) if bias else 0.0, dual=dual,
                 history=make_history(mon.rows, extra_fields=HISTORY[3:]),
                 stop_reason=_status.STOP_REASON[status], n_epochs=t, solver="cocoa",
                 params=params, classes=classes)
