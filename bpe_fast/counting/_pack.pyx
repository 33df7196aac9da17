# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Documents packed for the counting workers: a list of str (or bytes) as one UTF-8 buffer and
the offsets of each document, in one C loop.

Sending a batch of documents this way costs one copy of their bytes; a list of str would be
encoded to pickle it, decoded into new str objects in the worker, and encoded again there to be
scanned, at a Python call or more per document. A str is read through its canonical
representation (PEP 393, as the encoder reads it: core/_text.pxd): an ASCII str is copied as
it is, the others are measured and converted by the encoder's own converter (``bpe_utf8_size``,
``bpe_to_utf8``: whole blocks of ASCII or 2-byte characters). A surrogate has no UTF-8, so a batch
holding one is not packed: the caller sends it as it is, and the worker reports or replaces the
surrogate as the user's ``errors`` says.
"""
import numpy as np
cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy

from ..core._text cimport bpe_str_view, bpe_to_utf8, bpe_utf8_size, set_utf8_wide, utf8_wide

cnp.import_array()


def document_ends(list items):
    """Where each document would end if the items were laid end to end, counting characters
    (bytes for bytes): int64, one per item, in one C loop. None if an item is not a document
    (str or bytes): a batch, a record or None, which the caller unpacks in Python."""
    cdef Py_ssize_t n = len(items), i, total = 0
    ends = np.empty(n, np.int64)
    cdef int64_t[::1] at = ends
    for i in range(n):
        item = items[i]
        if isinstance(item, str):
            total += PyUnicode_GET_LENGTH(item)
        elif PyBytes_Check(item):
            total += PyBytes_GET_SIZE(item)
        else:
            return None
        at[i] = total
    return ends


cdef inline Py_ssize_t str_utf8_size(str text) except -2:
    """The bytes of text's UTF-8, or -1 if it holds a surrogate (it has none)."""
    cdef const void* data
    cdef Py_ssize_t length
    cdef int kind
    bpe_str_view(text, &data, &length, &kind)
    return length if kind == 0 else bpe_utf8_size(data, kind, length)


cdef inline int put_str_utf8(str text, uint8_t* out) except -1:
    """Write text's UTF-8 (no surrogate: str_utf8_size >= 0) at out, no byte past it."""
    cdef const void* data
    cdef Py_ssize_t length
    cdef int kind
    bpe_str_view(text, &data, &length, &kind)
    if kind == 0:                       # ASCII: already UTF-8
        memcpy(out, data, length)
    else:
        bpe_to_utf8(data, kind, length, out)
    return 0


def pack_documents(list docs):
    """``(data, offsets, all_str)``: the UTF-8 of every document one after another (bytes as they
    are), where each starts (int64, one more than the documents: the last is the end), and
    whether every document was a str (so all of it is valid UTF-8; bytes are not checked here).
    None if a str holds a surrogate; TypeError for a document that is neither str nor bytes."""
    cdef Py_ssize_t n = len(docs), i, size, total = 0
    cdef bint all_str = True
    offsets = np.empty(n + 1, np.int64)
    cdef int64_t[::1] at = offsets
    for i in range(n):                  # first the sizes, so that the buffer is made once
        doc = docs[i]
        if PyBytes_Check(doc):
            size = PyBytes_GET_SIZE(doc)
            all_str = False
        elif isinstance(doc, str):
            size = str_utf8_size(doc)
            if size < 0:
                return None
        else:
            raise TypeError(f"document {i} of the batch is {type(doc).__name__}, not str or bytes")
        at[i] = total
        total += size
    at[n] = total
    data = PyBytes_FromStringAndSize(NULL, total)
    cdef uint8_t* out = <uint8_t*>PyBytes_AS_STRING(data)
    for i in range(n):
        doc = docs[i]
        if PyBytes_Check(doc):
            memcpy(out + at[i], PyBytes_AS_STRING(doc), at[i + 1] - at[i])
            continue
        put_str_utf8(doc, out + at[i])  # no surrogate: sized above
    return data, offsets, all_str


def utf8_into(str text, uint8_t[::1] out):
    """For tests: the UTF-8 of text (no surrogate) written by the packer's converter at the start
    of out (at least that long); its length. The converter writes no byte past it (documents are
    packed back to back in a buffer of their exact size), which a test checks by filling the rest
    of out with a mark."""
    cdef Py_ssize_t size = str_utf8_size(text)
    if size < 0:
        raise ValueError("text holds a surrogate: it has no UTF-8")
    if out.shape[0] < size:
        raise ValueError(f"out has {out.shape[0]} bytes, the UTF-8 needs {size}")
    if size:
        put_str_utf8(text, &out[0])
    return size


def _utf8_wide(on=None):
    """For tests: whether this module's converter takes 16 code points at a time (AVX-512 VBMI2,
    where the processor has it); with ``on``, set it (never to a route the processor lacks) and
    return the previous setting, so that a test can take both routes on one machine."""
    if on is None:
        return bool(utf8_wide())
    return bool(set_utf8_wide(1 if on else 0))
