"""liblinear-multicore in a child process (it installs a module named ``liblinear``, as
liblinear-official does, so the two cannot share one interpreter).

Install it apart from the environment, e.g. ``pip install --target DIR
liblinear-multicore``, and name DIR in ``$LIBLINEAR_MULTICORE`` (or ``--multicore``).
The parent calls :func:`run`; the child (this file as a script) loads the bench problem
itself (``datasets.load``, outside the timer), builds liblinear's copy of X once, and for
each job trains with the job's options, timing ``train`` alone, and reports the primal
objective of the model (``0.5||w||^2 + C sum loss`` divided by ``C n``, the bench's scale).
A ladder job tries ``-e`` from loose to tight and stops at the first that reaches the
target suboptimality.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def available(path):
    """Whether ``path`` holds liblinear-multicore's package."""
    return bool(path) and os.path.isfile(os.path.join(path, "liblinear", "liblinear.py"))


def run(path, data, loss, C, pstar, target, jobs):
    """Run ``jobs`` in a child: each ``{"opts": "-s 1 -m 2 -e 0.01"}`` (timed once) or
    ``{"solver": 1, "threads": 2, "ladder": [1e-1, ...]}`` (the loosest -e reaching
    ``target``). Returns one list of runs per job, each ``{opts, seconds, primal,
    subopt}``."""
    return _in_child(path, dict(data=data, loss=loss, C=C, pstar=pstar, target=target,
                                jobs=jobs))


def _in_child(path, spec):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([path, HERE]))
    out = subprocess.run([sys.executable, os.path.abspath(__file__)], input=json.dumps(spec),
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"liblinear-multicore child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling(path, data, split, opts, rounds):
    """liblinear-multicore's own speed-up: ``opts`` (e.g. ``"-s 1 -e 0.1"``) with ``-m 1``
    and ``-m 2`` alternating, ``rounds`` each, in one child on ``data``'s ``split``.
    Returns (seconds with -m 1, seconds with -m 2), round by round."""
    jobs = [{"opts": f"{opts} -m {m}"} for _ in range(rounds) for m in (1, 2)]
    result = _in_child(path, dict(data=data, split=split, loss="squared_hinge", C=1.0,
                                  pstar=None, target=None, jobs=jobs))
    runs = [r[0]["seconds"] for r in result]
    return runs[0::2], runs[1::2]


def _child():
    import datasets
    import peers          # its objective and w reading serve this liblinear too
    from liblinear import liblinear as ll
    from liblinear import liblinearutil as llu
    if "nr_thread" not in dict(ll.parameter._fields_):
        raise RuntimeError(f"{ll.__file__} is not liblinear-multicore's (no -m)")
    spec = json.loads(sys.stdin.read())
    X, y = datasets.load(spec["data"], split=spec.get("split", "all"))
    X, y = peers._as_csr64(X), peers._labels(y)
    prob = ll.problem(y, X)
    C, pstar = spec["C"], spec["pstar"]
    lam = 1.0 / (C * X.shape[0])

    def one(opts):
        param = ll.parameter(f"{opts} -c {C!r} -B -1 -q")
        t0 = time.perf_counter()
        model = llu.train(prob, param)
        dt = time.perf_counter() - t0
        if pstar is None:       # timing only (scaling)
            return dict(opts=opts, seconds=dt)
        p = peers.primal_objective(X, y, peers._ll_w(model, X.shape[1]), lam, spec["loss"])
        return dict(opts=opts, seconds=dt, primal=p, subopt=(p - pstar) / pstar)

    result = []
    for job in spec["jobs"]:
        if "opts" in job:
            result.append([one(job["opts"])])
            continue
        runs = []
        for eps in job["ladder"]:
            runs.append(one(f"-s {job['solver']} -m {job['threads']} -e {eps!r}"))
            if runs[-1]["subopt"] <= spec["target"]:
                break
        result.append(runs)
    print(json.dumps(result))


if __name__ == "__main__":
    _child()
