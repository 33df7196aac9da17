"""Type stubs for parity-aware BPE's corpus (bpe_fast/training/variants/_parity.pyx)."""
from collections.abc import Sequence
from typing import overload

import numpy as np
import numpy.typing as npt


class ParityCorpus:
    def __init__(self, tokens: npt.NDArray[np.int32], offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                 langs: npt.NDArray[np.int32], n_langs: int, token_bytes: Sequence[bytes | None], heaps: bool = True,
                 hf_ties: bool = False, max_token_length: int = 0, track_global: bool = False,
                 byte_rank: npt.NDArray[np.uint8] | None = None) -> None: ...
    def best(self, lang: int) -> tuple[int, int, int] | None: ...
    def stop_global(self) -> None: ...
    @overload
    def merge(self, x: int, y: int, lengths: None = None) -> npt.NDArray[np.int64]: ...
    @overload
    def merge(self, x: int, y: int, lengths: npt.NDArray[np.int64]) -> None: ...
    def count_of(self, lang: int, x: int, y: int) -> int: ...


def least_compressed(initial: npt.NDArray[np.float64], ratio: npt.NDArray[np.float64] | None,
                     lengths: npt.NDArray[np.int64], exhausted: npt.NDArray[np.uint8]) -> int: ...
def least_compressed_with_room(initial: npt.NDArray[np.float64], ratio: npt.NDArray[np.float64] | None,
                               lengths: npt.NDArray[np.int64], exhausted: npt.NDArray[np.uint8],
                               in_window: npt.NDArray[np.int64], window_size: int, threshold: float) -> int: ...
