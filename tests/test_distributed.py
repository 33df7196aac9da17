"""Counting on a Dask cluster (here a LocalCluster of processes) gives exactly the local table."""
from __future__ import annotations

import gzip
import json

import pytest

import bpe_fast

from .conftest import need, small_text


@pytest.fixture(scope="module")
def client():
    distributed = need("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_cluster_counting_equals_local_counting(tmp_path, client):
    (tmp_path / "a.txt").write_text(small_text() * 30)
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write("compressed text, read whole on a worker\n" * 200)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} " * 20}) + "\n" for i in range(100)))
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt.gz", tmp_path / "c.jsonl"]
    local = bpe_fast.count(inputs, workers=1)
    remote = bpe_fast.count(inputs, client=client, block_size=4096)
    assert remote == local and remote.input_bytes == local.input_bytes
    tok = bpe_fast.train(inputs, 600, client=client, block_size=4096)
    assert tok == bpe_fast.train(inputs, 600, workers=1)


def test_standard_input_cannot_go_to_a_cluster(client):
    with pytest.raises(bpe_fast.InputError, match="a stream cannot be counted on a cluster"):
        bpe_fast.count(["-"], client=client)


def test_a_truncated_zst_is_an_input_error_on_the_cluster(tmp_path, client):
    zstandard = need("zstandard")
    whole = zstandard.ZstdCompressor().compress("".join(f"line {i}\n" for i in range(20_000)).encode())
    (tmp_path / "cut.txt.zst").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(bpe_fast.InputError, match="cut.txt.zst: .*truncated"):
        bpe_fast.count([tmp_path / "cut.txt.zst"], client=client)


def test_cluster_counting_normalizes_as_local_counting(tmp_path, client):
    text = "ﬁne ① ＡＢＣ cafe\u0301 x\u00a8y!\n\uff0fz\n" * 300 + small_text()
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt.gz"]
    local = bpe_fast.count(inputs, workers=1, normalize="nfkc")
    remote = bpe_fast.count(inputs, client=client, block_size=512, normalize="nfkc")
    assert remote == local and remote.normalize == "nfkc" and b"fine" in remote.as_dict()


def test_boundless_runs_counted_on_a_cluster_equal_local_ones(tmp_path, client):
    """BoundlessBPE's second pass goes to the cluster too: the units travel in the config."""
    (tmp_path / "a.txt").write_text(small_text() * 30)
    remote = bpe_fast.train([tmp_path / "a.txt"], 530, client=client, superword="boundless", superword_at=500,
                            block_size=4096, progress="none")
    local = bpe_fast.train([tmp_path / "a.txt"], 530, workers=1, superword="boundless", superword_at=500,
                           block_size=4096, progress="none")
    assert remote == local and remote.is_boundless
