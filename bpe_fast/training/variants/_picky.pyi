"""Type stubs for the Picky BPE kernel and replay encoder (bpe_fast/training/variants/_picky.pyx)."""
from typing import Callable, final

import numpy as np
import numpy.typing as npt

REMOVED: int


def train_picky(symbols: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                n_learned: int, tau: float, min_count: int = 1, max_token_length: int = 0,
                progress: Callable[[int], None] | None = None, progress_every: int = 256,
                stats: dict | None = None, segmentation: list[list[int]] | None = None,
                max_steps: int = -1) -> npt.NDArray[np.int32]: ...


@final
class PickyEncoder:
    def __init__(self, events: npt.NDArray[np.int32], token_ids: npt.NDArray[np.int32]) -> None: ...
    def encode(self, data: bytes | npt.NDArray[np.uint8]) -> list[int]: ...
