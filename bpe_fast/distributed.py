"""Counting past one machine, on a Dask cluster: ``bpe_fast.count(files, client=client)``.

Every piece of input becomes a Dask task that counts it into a word table on a cluster worker:
a block of a text file, a whole compressed or JSON-lines file (read as a stream there), a
Parquet row group. The tables add up in a tree on the cluster (``WordTable.merge``, in native
code) and only the final table comes back here, where the merging (the kernel) runs. The
result is exactly the local one: the same tasks, the same table.

The workers read the files themselves, so the paths must mean the same files there: a shared
filesystem, or the same copy on every machine. Standard input cannot be counted on a cluster.
Needs ``pip install 'bpe_fast[dask]'``.
"""
from __future__ import annotations

from dataclasses import replace

from .counting import CountConfig, chunk_counter
from .errors import require
from .inputs import Source
from .wordtable import WordTable


def count_task(task, config: CountConfig) -> WordTable:
    """Run on a cluster worker: one task's word table."""
    counter = chunk_counter(config)
    counter.run(task)
    return counter.result()


def add_tables(*tables: WordTable) -> WordTable:
    return WordTable.merge(tables)


def count_on_cluster(client, found: list[Source], config: CountConfig, block_size: int,
                     fan_in: int = 8) -> WordTable:
    """Count every source on the cluster; add the tables there, ``fan_in`` at a time."""
    require("dask.distributed", "dask", "counting on a Dask cluster")
    splitter = config.splitter
    tasks = [t for source in found for t in source.cluster_tasks(config.cut, block_size)]
    if not tasks:
        return WordTable.from_counts({}, splitter.pattern, splitter.special_tokens, normalize=splitter.normalize)
    config = CountConfig(splitter, config.errors, units=config.units)          # no spilling there
    futures = client.map(count_task, tasks, config=config, pure=False)
    while len(futures) > 1:
        futures = [client.submit(add_tables, *futures[i:i + fan_in], pure=False)
                   for i in range(0, len(futures), fan_in)]
    table = futures[0].result()
    return replace(table, input_bytes=sum(t.size for t in tasks))
