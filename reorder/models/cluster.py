"""Many files over a Dask cluster: one task per file, run where a worker is free. The files
must be reachable under the same paths on every worker (a shared file system)."""
from ._extras import require
from .progress import Bar, wanted


def _job(src, dst, target, kw):
    from .runner import convert_file
    return convert_file(src, dst, target, progress=False, **kw)


def connect(address):
    """A Client for a scheduler address (tcp://host:port)."""
    distributed = require("distributed", "--scheduler")
    return distributed.Client(address)


def run_on_cluster(client, srcs, dsts, target, progress, kw):
    distributed = require("distributed", "converting on a Dask cluster")
    futures = client.map(_job, srcs, dsts, target=target, kw=kw, pure=False)
    bar = Bar(len(futures), "files", wanted(progress), unit="file")
    try:
        for _ in distributed.as_completed(futures):
            bar.update(1)
    finally:
        bar.close()
    return client.gather(futures)
