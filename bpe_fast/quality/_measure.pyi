"""Type stubs for measuring texts' UTF-8 bytes and words (bpe_fast/quality/_measure.pyx)."""
import numpy as np
import numpy.typing as npt


def measure_texts(texts: list[str],
                  after_space: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def count_ids(ids: npt.NDArray[np.uint32], counts: npt.NDArray[np.int64]) -> None: ...
