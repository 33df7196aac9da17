"""Type stubs for packing documents as one UTF-8 buffer (bpe_fast/_pack.pyx)."""
import numpy as np
import numpy.typing as npt


def pack_documents(docs: list[str | bytes]) -> tuple[bytes, npt.NDArray[np.int64], bool] | None: ...
