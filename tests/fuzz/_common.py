"""What the fuzz harnesses share: instrumenting already-imported code, seed corpora, the
atheris entry point, and a plain-Python mutation loop for when atheris is absent."""
import inspect
import os
import random
import sys
import tempfile


def scratch_dir():
    """Where a harness writes its per-input files: FUZZ_TMPDIR, else a RAM disk when there is
    one (creating a file on a disk can cost milliseconds, the whole budget of an input)."""
    d = os.environ.get("FUZZ_TMPDIR") or "/dev/shm"
    return d if os.path.isdir(d) else None


def instrument(atheris, *modules):
    """Coverage instrumentation of every Python function and method defined in ``modules``
    (imported before atheris, so ``instrument_imports`` would not see them)."""
    for mod in modules:
        for obj in list(vars(mod).values()):
            funcs = [obj] if inspect.isfunction(obj) else (
                [f for f in vars(obj).values() if inspect.isfunction(f)]
                if inspect.isclass(obj) else [])
            for f in funcs:
                if f.__module__ == mod.__name__:
                    atheris.instrument_func(f)


def fuzz(argv, check, seeds, modules, name, mutator=None, defaults=("-timeout=5",)):
    """Run libFuzzer through atheris on ``check``. The seeds are written into the first
    corpus directory given (a fresh temporary one when none is), where libFuzzer also
    keeps the new inputs it finds. ``-plain_runs=N`` instead replays the seeds and the
    corpus files and checks N mutants of them without atheris (e.g. under AddressSanitizer,
    whose coverage symbols would shadow libFuzzer's)."""
    plain = [a for a in argv if a.startswith("-plain_runs=")]
    if plain:
        n = int(plain[-1].split("=")[1])
        corpus = list(seeds) + [open(os.path.join(d, f), "rb").read()
                                for d in argv[1:] if os.path.isdir(d)
                                for f in sorted(os.listdir(d))]
        for data in corpus:
            check(data)
        random_loop(check, corpus, n, mutator=mutator)
        print(f"{name}: {len(corpus)} corpus inputs and {n} mutants checked")
        return
    import atheris
    instrument(atheris, *modules)
    argv = list(argv) + [d for d in defaults if not any(a.startswith(d.split("=")[0] + "=")
                                                            for a in argv)]
    dirs = [a for a in argv[1:] if not a.startswith("-")]
    if not dirs:
        dirs = [tempfile.mkdtemp(prefix=f"{name}_corpus_")]
        argv.append(dirs[0])
    os.makedirs(dirs[0], exist_ok=True)
    for i, s in enumerate(seeds):
        with open(os.path.join(dirs[0], f"seed{i:03d}"), "wb") as f:
            f.write(s)
    if mutator is None:
        atheris.Setup(argv, check)
    else:
        atheris.Setup(argv, check, custom_mutator=lambda data, max_size, seed: mutator(
            data, max_size, seed, atheris.Mutate))
    atheris.Fuzz()


def byte_mutate(data, max_size, rng):
    """A few libFuzzer-like byte edits (the stand-in for atheris.Mutate)."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            b[pos:pos] = bytes([rng.choice(b" \t\n:#.-+eE0123456789qidnafINF\x00\xff")])
        elif op == 2 and b:
            del b[pos:pos + rng.randint(1, 8)]
        elif op == 3 and b:
            k = rng.randrange(len(b))
            b[pos:pos] = b[k:k + rng.randint(1, 16)]
        elif op == 4 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        else:
            b[pos:pos] = rng.choice([b"0", b"4294967296", b"9223372036854775807", b"-1",
                                     b"1e308", b"nan", b"inf", b"\xff\xff\xff\x7f"])
    return bytes(b[:max_size])


def random_loop(check, seeds, n, seed=0, mutator=None, max_size=1 << 16):
    """``n`` mutated inputs through ``check`` (each mutant of a random seed or of an earlier
    mutant); returns the number of inputs checked."""
    rng = random.Random(seed)
    pool = list(seeds)
    for i in range(n):
        parent = rng.choice(pool)
        if mutator is None:
            child = byte_mutate(parent, max_size, rng)
        else:
            child = mutator(parent, max_size, rng.randrange(2 ** 32),
                            lambda d, m: byte_mutate(d, m, rng))
        check(child)
        if len(pool) < 500 and rng.random() < 0.2:
            pool.append(child)
    return n


if __name__ == "__main__":          # pragma: no cover
    sys.exit("a helper module: run fuzz_svmlight.py or fuzz_model.py")
