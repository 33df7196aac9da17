# cython: language_level=3
"""Token ids as Python lists, one shared Python int per id.

Invariant: a list of ids holds, for id t, the one int ``ints[t]`` the encoder made for it
(``IdInts``), its reference count raised once per item: never an int made per token. The lists'
items are written with plain stores and each int's count added once (bpe_fill_lists says why).
"""
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t, uint32_t
from libc.stdlib cimport calloc, free

from ..core._hash cimport advise_huge  # (its C block, bpe_advise_huge, comes before this one's)

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* Lists of the Python ints ints[ids[i]]: one shared int per id, no int made per token.

       A list of millions of ids would add one to the reference count of one of some 100,000
       ints per id: a read and a write at random over megabytes of int objects. Instead the
       ids are counted (a table of n_ints counters, in the CPU's cache), the items written
       with plain stores, and each int's count added once. Only with the GIL (the free-threaded
       build counts references per thread: Py_INCREF there), and not for immortal objects
       (3.12+), whose counts must not change. */
    #define BPE_COUNTED_IDS 65536
    static void bpe_add_refs(PyObject* o, uint32_t k) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (_Py_IsImmortal(o)) return;
    #endif
        if (Py_REFCNT(o) > ((Py_ssize_t)1 << 30)) {     /* near the limits: the usual way */
            while (k--) Py_INCREF(o);
            return;
        }
        Py_SET_REFCNT(o, Py_REFCNT(o) + (Py_ssize_t)k);
    }
    /* Fill the items of the lists out[0..m) (made, empty of items), list j holding
       ids[offsets[j] - offsets[0] ...], from ints. */
    static void bpe_fill_lists(PyObject* const* lists, Py_ssize_t m, const uint32_t* ids,
                               const int64_t* offsets, PyObject* const* ints, Py_ssize_t n_ints) {
        Py_ssize_t j, i, k = 0, total = (Py_ssize_t)(offsets[m] - offsets[0]);
        uint32_t* counts = NULL;
    #ifndef Py_GIL_DISABLED
        if (total >= BPE_COUNTED_IDS && total >= n_ints / 4 && total < ((Py_ssize_t)1 << 31))
            counts = (uint32_t*)calloc((size_t)n_ints, sizeof(uint32_t));
    #endif
        for (j = 0; j < m; j++) {
            PyObject** items = ((PyListObject*)lists[j])->ob_item;
            Py_ssize_t n = (Py_ssize_t)(offsets[j + 1] - offsets[j]);
            if (counts != NULL) {
                for (i = 0; i < n; i++, k++) {
                    uint32_t t = ids[k];
                    counts[t]++;
                    items[i] = ints[t];
                }
            } else {
                for (i = 0; i < n; i++, k++) {
                    PyObject* o = ints[ids[k]];
                    Py_INCREF(o);
                    items[i] = o;
                }
            }
        }
        if (counts != NULL) {
            for (i = 0; i < n_ints; i++)
                if (counts[i]) bpe_add_refs(ints[i], counts[i]);
            free(counts);
        }
    }
    /* An empty list of n items to fill (NULL items). A list of millions of items gets its item
       array on huge pages where Linux has them: PyList_New's array is fresh memory, mapped 4 KB
       at a time as it is first written (a fault every 512 items, a good part of what the list
       costs over an array) and unmapped again when the list dies. The array comes from
       PyMem_Malloc, as the list's own would, so the list frees it as its own; with the GIL only
       (the free-threaded build lays its arrays out differently). Where memory is fragmented
       the kernel may compact it to find huge pages (an early try measured that as slower);
       in the encoding benchmark, beside other libraries, it is faster (benchmarks/RESULTS.md,
       "Encoding against gigatoken"). */
    #define BPE_HUGE_LIST_ITEMS ((Py_ssize_t)1 << 20)
    static PyObject* bpe_new_list(Py_ssize_t n) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(Py_GIL_DISABLED)
        if (n >= BPE_HUGE_LIST_ITEMS && (size_t)n < PY_SSIZE_T_MAX / sizeof(PyObject*)) {
            size_t bytes = (size_t)n * sizeof(PyObject*);
            PyObject** items = (PyObject**)PyMem_Malloc(bytes);
            PyObject* list;
            if (items == NULL) return PyErr_NoMemory();
            bpe_advise_huge(items, bytes);                      /* (core/_hash.pxd: a hint) */
            memset(items, 0, bytes);                            /* (NULL items until filled) */
            list = PyList_New(0);
            if (list == NULL) {
                PyMem_Free(items);
                return NULL;
            }
            ((PyListObject*)list)->ob_item = items;
            ((PyListObject*)list)->allocated = n;
            Py_SET_SIZE(list, n);
            return list;
        }
    #endif
        return PyList_New(n);
    }
    static PyObject* bpe_list_of_ids(const uint32_t* ids, Py_ssize_t n, PyObject* const* ints, Py_ssize_t n_ints) {
        int64_t offsets[2] = {0, (int64_t)n};
        PyObject* list = bpe_new_list(n);
        if (list == NULL) return NULL;
        bpe_fill_lists(&list, 1, ids, offsets, ints, n_ints);
        return list;
    }
    /* The lists ids[offsets[j]:offsets[j + 1]] for j < m, in a list. */
    static PyObject* bpe_lists_of_ids(const uint32_t* ids, const int64_t* offsets, Py_ssize_t m,
                                      PyObject* const* ints, Py_ssize_t n_ints) {
        PyObject* out = PyList_New(m);
        Py_ssize_t j;
        if (out == NULL) return NULL;
        for (j = 0; j < m; j++) {          /* every list first: a failure leaves nothing counted */
            PyObject* list = bpe_new_list((Py_ssize_t)(offsets[j + 1] - offsets[j]));
            if (list == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(out, j, list);
        }
        if (m)
            bpe_fill_lists(((PyListObject*)out)->ob_item, m, ids + offsets[0], offsets, ints, n_ints);
        return out;
    }
    """
    object bpe_list_of_ids(const uint32_t* ids, Py_ssize_t n, PyObject* const* ints, Py_ssize_t n_ints)
    object bpe_lists_of_ids(const uint32_t* ids, const int64_t* offsets, Py_ssize_t m,
                            PyObject* const* ints, Py_ssize_t n_ints)


cdef struct IdInts:
    PyObject** ints                          # id -> its int (a reference held), or NULL: none yet
    Py_ssize_t n


cdef inline int ints_make(IdInts* out, Py_ssize_t n) except -1:
    """One Python int per id below n, for lists of ids (made on the first list asked for)."""
    cdef Py_ssize_t i
    cdef PyObject** ints = <PyObject**>calloc(n, sizeof(PyObject*))
    cdef object value
    if ints == NULL:
        raise MemoryError()
    for i in range(n):
        value = i
        Py_INCREF(value)
        ints[i] = <PyObject*>value
    out.ints, out.n = ints, n
    return 0


cdef inline void ints_free(IdInts* t) noexcept:
    cdef Py_ssize_t i
    if t.ints != NULL:
        for i in range(t.n):
            Py_XDECREF(t.ints[i])
        free(t.ints)
