"""Short runs of the fuzz harnesses in tests/fuzz/ (the long runs: tests/fuzz/README.md).

With atheris installed (the ``fuzz`` extra), each harness runs a few thousand
coverage-guided executions in a subprocess, which must end normally. Without it, and
always for a few hundred inputs so the fallback cannot rot, a plain-Python loop feeds
mutants of the seed corpus to the same property check."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

FUZZ = pathlib.Path(__file__).parent / "fuzz"
HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None
HARNESSES = {"fuzz_svmlight": 5000, "fuzz_model": 3000}


@pytest.fixture(scope="module")
def harnesses():
    sys.path.insert(0, str(FUZZ))           # the harnesses import their _common helper
    try:
        mods = {}
        for name in HARNESSES:
            spec = importlib.util.spec_from_file_location(f"dualsolve_{name}", FUZZ / f"{name}.py")
            mods[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mods[name])
        yield mods, sys.modules["_common"]
    finally:
        sys.path.remove(str(FUZZ))


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_seeds_and_mutants_hold_the_property(name, harnesses):
    mods, common = harnesses
    mod = mods[name]
    seeds = mod.seeds()
    assert len(seeds) >= 8
    for s in seeds:
        mod.check(s)                        # valid files: accepted, round trip / oracle
    n = 300 if HAVE_ATHERIS else HARNESSES[name] // 2
    assert common.random_loop(mod.check, seeds, n, seed=1,
                              mutator=getattr(mod, "mutate", None)) == n


def test_the_checks_catch_a_bug(harnesses, monkeypatch):
    """The property fails on a wrong parse and on a wrong exception type."""
    import dualsolve
    mods, _ = harnesses
    good = bytes([1, 0]) + b"1 1:2\n"
    real = dualsolve.load_svmlight
    monkeypatch.setattr(dualsolve, "load_svmlight",
                        lambda *a, **k: (lambda X, y: (X * 2, y))(*real(*a, **k)))
    with pytest.raises(AssertionError):
        mods["fuzz_svmlight"].check(good)
    monkeypatch.setattr(dualsolve, "load_model", lambda p: {}["missing"])
    with pytest.raises(KeyError):
        mods["fuzz_model"].check(b"PK")


@pytest.mark.skipif(not HAVE_ATHERIS, reason="atheris not installed (pip install '.[fuzz]')")
@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_atheris_short_run(name, tmp_path):
    runs = HARNESSES[name]
    proc = subprocess.run([sys.executable, str(FUZZ / f"{name}.py"), str(tmp_path),
                           # -timeout=60: libFuzzer's hang check is a SIGALRM every
                           # timeout/2 + 1 s; with 5 its tick (3 s) met the end of a run
                           # slowed by a busy machine and killed the exiting process
                           # (rc -14 after "Done 5000"); a 3 s run now never sees a tick
                           f"-atheris_runs={runs}", "-seed=1", "-timeout=60"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Done {runs} " in proc.stderr, proc.stderr[-3000:]
    assert len(list(tmp_path.iterdir())) >= 8          # the seeds, plus what it found


# ---------------------------------------------------------------------------------------
# reproducers of what the fuzzers found


@pytest.mark.parametrize("suffix,name", [(".xz", "xz"), (".gz", "gzip"), (".bz2", "bzip2")])
def test_damaged_compressed_svmlight_is_a_value_error(suffix, name, tmp_path):
    """Was LZMAError / BadGzipFile / OSError / EOFError out of load_svmlight."""
    import io

    import dualsolve
    magic = {".xz": b"\xfd7zXZ\x00", ".gz": b"\x1f\x8b", ".bz2": b"BZh"}[suffix]
    path = tmp_path / ("f" + suffix)
    for raw in (b"1 1:2\n", magic, magic + b"junk"):
        path.write_bytes(raw)
        for src in (path, io.BytesIO(magic + raw)):
            with pytest.raises(ValueError, match=f"not valid {name} data"):
                dualsolve.load_svmlight(src)
