"""Type stubs for the Cython training kernel (bpe_fast/training/_kernel.pyx)."""
from typing import Callable

import numpy as np
import numpy.typing as npt

_Symbols = npt.NDArray[np.uint8] | npt.NDArray[np.int32]


def check_word_table(symbols: _Symbols, offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> None: ...
def by_falling_count(counts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int32], int]: ...
def default_track_from(offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], n_merges: int,
                       min_count: int) -> int: ...
def kernel_positions(offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...


class Trainer:
    max_merges: int
    min_count: int
    first_id: int
    def __init__(self, symbols: _Symbols, offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                 n_merges: int, min_count: int = 1, byte_ranks: npt.NDArray[np.integer] | None = None,
                 track_from: int = 0, max_token_length: int = 0, start: npt.NDArray[np.int32] | None = None,
                 token_lengths: npt.NDArray[np.int32] | None = None, first_id: int = 256,
                 setup_progress: Callable[[int], None] | None = None, threads: int = 1,
                 parallel_from: int = ..., kernel_order: bool = False) -> None: ...
    def count_pairs(self) -> None: ...
    def learn(self, progress: Callable[[int], None] | None = None, progress_every: int = 256,
              stats: dict | None = None) -> npt.NDArray[np.int32]: ...
    def memory(self) -> dict[str, int]: ...
    @property
    def counts(self) -> npt.NDArray[np.int64]: ...


def train_merges(symbols: _Symbols, offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                 n_merges: int, min_count: int = 1, progress: Callable[[int], None] | None = None,
                 progress_every: int = 256, stats: dict | None = None,
                 byte_ranks: npt.NDArray[np.integer] | None = None, track_from: int = 0,
                 max_token_length: int = 0, threads: int = 1, parallel_from: int = ...) -> npt.NDArray[np.int32]: ...
