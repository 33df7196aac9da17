"""Type stubs for the native pre-tokenizers (bpe_fast/_pretok.pyx)."""
import numpy as np
import numpy.typing as npt

PATTERN_IDS: dict[str, int]


class Scanner:
    def __init__(self, pattern: int, classes: npt.NDArray[np.uint8], fold: npt.NDArray[np.uint8]) -> None: ...
    def boundaries(self, data: bytes | npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]: ...
    def chunks(self, text: str) -> list[str]: ...
