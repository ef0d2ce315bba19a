"""Many files over a Dask cluster: one task per file, run where a worker is free. The files
must be reachable under the same paths on every worker (a shared file system)."""
from ._extras import require
from .progress import Bar, wanted


def connect(address):
    """A Client for a scheduler address (tcp://host:port)."""
    distributed = require("distributed", "--scheduler")
    return distributed.Client(address)


def run_on_cluster(client, job, srcs, dsts, target, progress, kw):
    """job(src, dst, target, kw) on the cluster for each pair of files, the results in order.
    `job` must be a module-level function: a worker imports it by name."""
    distributed = require("distributed", "converting on a Dask cluster")
    futures = client.map(job, srcs, dsts, target=target, kw=kw, pure=False)
    bar = Bar(len(futures), "files", wanted(progress), unit="file")
    try:
        for _ in distributed.as_completed(futures):
            bar.update(1)
    finally:
        bar.close()
    return client.gather(futures)
