"""Where per-file work runs: in this process, a local process pool, or a Dask cluster. An index
build's batches (``cellar.retrieval.incremental.prepare_batch``) and a re-render's notebooks
(``cellar.rerender.batch.rerun_task``) both run here; it sits in the lowest layer that both reach.

In: batches of tasks and a function that prepares one batch, the scheduler's name. Out: each
batch's result, handed to ``done`` as batches finish (in any order: the caller sorts, so the
index does not depend on it).

- ``local`` (the default): a ``concurrent.futures`` process pool of ``workers`` processes (the
  machine's cores), or this process alone when there is one batch or one worker. Needs nothing
  beyond the standard library: a user without Dask loses nothing.
- ``dask``: a ``distributed.LocalCluster`` of ``workers`` single-threaded worker processes,
  started for the build and closed after it.
- ``tcp://HOST:PORT``: an existing Dask scheduler; its workers must be able to import cellar and
  read the model folder at the same path.

Dask runs batches as futures (``Client.map`` and ``as_completed``), which suit uneven work better
than ``dask.bag``. Its overhead is about 1 ms a task, so small files are batched (``batches``) into
tasks of a few hundred kilobytes, about 0.1-0.5 s of work each.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")

BATCH_BYTES = 256_000  # about 0.1-0.3 s of chunking and embedding on one core
BATCH_FILES = 64
SMALL_WORK = 1_000_000  # bytes of files: less is prepared in this process, as starting a pool costs more
CONNECT_TIMEOUT = "10s"  # to reach an existing Dask scheduler


class SchedulerError(ValueError):
    """The scheduler named cannot be used (Dask missing, a cluster that does not answer)."""


def check_scheduler(name: str) -> None:
    """Refuse an unknown scheduler name, or Dask when it is not installed, before any work."""
    if name == "local":
        return
    if name != "dask" and not name.startswith("tcp://"):
        raise SchedulerError(f"unknown scheduler {name!r}: use local, dask or tcp://HOST:PORT")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise SchedulerError(
            f"--scheduler {name} needs Dask: pip install 'cellar[dask]' (or use --scheduler local)"
        ) from None


def batches(items: Sequence[T], size: Callable[[T], int], workers: int) -> list[list[T]]:
    """Consecutive groups of ``items`` of about BATCH_BYTES (at most BATCH_FILES), split smaller
    when there would be fewer than four per worker, so that the work spreads."""
    total = sum(size(item) for item in items)
    target = max(1, min(BATCH_BYTES, total // max(1, 4 * workers)))
    groups: list[list[T]] = []
    current: list[T] = []
    weight = 0
    for item in items:
        current.append(item)
        weight += size(item)
        if weight >= target or len(current) >= BATCH_FILES:
            groups.append(current)
            current, weight = [], 0
    if current:
        groups.append(current)
    return groups


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run(
    function: Callable[..., Any],
    work: Sequence[Any],
    done: Callable[[Any], None],
    *,
    scheduler: str = "local",
    workers: int | None = None,
    **kwargs: Any,
) -> None:
    """Call ``function(batch, **kwargs)`` for every batch of ``work`` and ``done(result)`` as each
    finishes."""
    workers = workers or default_workers()
    if not work:
        return
    if scheduler == "local":
        if workers == 1 or len(work) == 1:
            for batch in work:
                done(function(batch, **kwargs))
            return
        with ProcessPoolExecutor(max_workers=min(workers, len(work))) as pool:
            futures = [pool.submit(function, batch, **kwargs) for batch in work]
            for future in as_completed(futures):
                done(future.result())
        return
    check_scheduler(scheduler)
    _run_dask(function, work, done, scheduler, workers, kwargs)


def _run_dask(
    function: Callable[..., Any],
    work: Iterable[Any],
    done: Callable[[Any], None],
    scheduler: str,
    workers: int,
    kwargs: dict[str, Any],
) -> None:
    from distributed import Client, LocalCluster
    from distributed import as_completed as dask_completed

    cluster = None
    try:
        if scheduler == "dask":
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout=CONNECT_TIMEOUT)
            except OSError as error:
                raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
        try:
            # each argument shipped to every worker once (a re-render's blobs), not with every task
            kwargs = {key: client.scatter([value], broadcast=True)[0] for key, value in kwargs.items()}
            futures = client.map(function, list(work), pure=False, **kwargs)
            for future in dask_completed(futures):
                done(future.result())
                future.release()
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
