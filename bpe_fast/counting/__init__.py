"""Stage 2, counting: inputs read as tasks (inputs.py), counted by worker processes
(workers.py, _table.pyx) or a Dask cluster (distributed.py) into a WordTable (wordtable.py);
corpus.py holds the entry points, ``count`` and ``count_from_iterator``."""
