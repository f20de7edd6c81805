"""Where the shards live: :class:`LocalHosts` (one :class:`ShardHost` in this process, for
the simulation) or :class:`DaskHosts` (one ShardHost actor per Dask worker). Both place
shards on hosts and call a host method on every host at once; the CoCoA+ driver
(``cocoa.py``) does the rest, the same for both."""
import time

from .shards import ShardHost

#: errors of the computation itself (a bad shard, no memory): raised as they are
OWN_ERRORS = (ValueError, TypeError, FileNotFoundError, MemoryError, KeyError)
#: seconds to wait for the scheduler to notice a lost worker
LOST_WAIT = 30.0


class WorkerLost(RuntimeError):
    """Workers holding shards died during a call; ``shards`` lost their rows and duals."""

    def __init__(self, shards):
        super().__init__(f"the workers holding shards {sorted(shards)} were lost")
        self.shards = set(shards)


class LocalHosts:
    """Every shard on one host in this process."""

    def __init__(self):
        self.host = ShardHost()
        self.where = {}

    def place(self, shards):
        for k in shards:
            self.where[k] = 0

    def call(self, method, make_args):
        """``{host: host.method(*make_args(shards of host))}``."""
        mine = sorted(self.where)
        return {0: getattr(self.host, method)(*make_args(mine))}

    def call_on(self, shard, method, *args):
        return getattr(self.host, method)(*args)

    def close(self):
        self.host = None


class DaskHosts:
    """One ShardHost actor per worker of ``client``'s cluster; shards spread evenly."""

    def __init__(self, client):
        self.client = client
        self.actors = {}        # worker address -> actor
        self.where = {}         # shard -> worker address

    def _workers(self):
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def _actor(self, addr):
        if addr not in self.actors:
            fut = self.client.submit(ShardHost, actor=True, workers=[addr],
                                     allow_other_workers=False, pure=False)
            self.actors[addr] = fut.result()
        return self.actors[addr]

    def place(self, shards):
        """Put ``shards`` on the live workers, each on the one holding the fewest."""
        workers = self._workers()
        if not workers:
            raise RuntimeError("the Dask cluster has no workers")
        load = {a: sum(1 for v in self.where.values() if v == a) for a in workers}
        for k in sorted(shards):
            addr = min(workers, key=lambda a: (load[a], a))
            self.where[k] = addr
            load[addr] += 1
            self._actor(addr)

    def _on(self, addr):
        return sorted(k for k, a in self.where.items() if a == addr)

    def call(self, method, make_args):
        futures, failed = {}, None
        for addr in sorted(set(self.where.values())):
            try:
                futures[addr] = getattr(self._actor(addr), method)(*make_args(self._on(addr)))
            except Exception as exc:        # noqa: BLE001 (Dask's: the actor's worker is gone)
                failed = failed or exc
        results = {}
        for addr, fut in futures.items():
            try:
                results[addr] = fut.result()
            except Exception as exc:        # noqa: BLE001 (a lost worker, or our own error)
                failed = failed or exc
        if failed is not None:
            self._raise_lost(failed)
        return results

    def call_on(self, shard, method, *args):
        try:
            return getattr(self._actor(self.where[shard]), method)(*args).result()
        except Exception as exc:            # noqa: BLE001
            self._raise_lost(exc)

    def _raise_lost(self, exc):
        """WorkerLost when a worker holding shards is gone, else ``exc`` itself (an error
        of the computation, e.g. a bad shard). The scheduler may take a moment to see a
        worker go: errors that are not ours wait up to LOST_WAIT seconds for it."""
        deadline = time.monotonic() + (0.0 if isinstance(exc, OWN_ERRORS) else LOST_WAIT)
        while True:
            alive = set(self._workers())
            dead = {a for a in set(self.where.values()) if a not in alive}
            if dead or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if not dead:
            raise exc
        for a in dead:
            self.actors.pop(a, None)
        lost = {k for k, a in self.where.items() if a in dead}
        for k in lost:
            del self.where[k]
        raise WorkerLost(lost) from exc

    def close(self):
        self.actors.clear()
