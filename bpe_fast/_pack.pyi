"""Type stubs for packing documents as one UTF-8 buffer (bpe_fast/_pack.pyx)."""
from typing import Any

import numpy as np
import numpy.typing as npt


def document_ends(items: list[Any]) -> npt.NDArray[np.int64] | None: ...
def pack_documents(docs: list[str | bytes]) -> tuple[bytes, npt.NDArray[np.int64], bool] | None: ...
def utf8_into(text: str, out: npt.NDArray[np.uint8]) -> int: ...
