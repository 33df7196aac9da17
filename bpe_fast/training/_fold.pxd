# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The fold: the threads' ledgers of a merge applied to the tracked pairs, then settled.

Invariant: the fold applies the ledgers in range order, and the state it leaves is the
one-thread sweep's, entry for entry:

* counts: sums do not depend on order. An existing pair only loses in a merge, so its count
  fell to 0 during the sweep exactly when it ends at 0; the fold frees its list then, as the
  sweep did.
* ids: the sweep makes a pair at its first use. Ranges follow each other in position order, so
  the first uses are range 0's in its order, then range 1's of the pairs range 0 did not make,
  and so on; the fold gives ids in exactly that order.
* lists: positions increase from range to range, so a range's list goes after the ones before
  (its first gap counted again from the list's last position). The sweep freed a new pair's
  list whenever its running count fell to 0. A new pair loses an occurrence only where it was
  made earlier in the same word (the token before was z), so within a range its count never
  falls below what it was when the range began: it falls to 0 inside range k only if it was 0
  when range k began, and then the list is range k's list from its cut. Otherwise range k's
  whole list is appended. (A pair that ends below ``track_from`` is dropped by settle whatever
  its list: the fold does not move such lists at all.)

Then ``settle`` keeps the new pairs counted at least ``track_from`` times (ids closed up in
creation order) and forgets the others, as rustbpe's loop does after each merge.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

from ..core._pairmap cimport key_left, key_right
from ._pairs cimport Pairs, append, free_list, new_pair, track
from ._rewrite cimport Ledger, Made
from ._varint cimport get_varint


cdef cppclass NewIds:
    # the merge in progress: the ids of the pairs it made, by their other symbol
    vector[int32_t] with_left      # s -> id of (s, z) made by this merge, or -1
    vector[int32_t] with_right     # t -> id of (z, t) made by this merge, or -1
    int32_t zz                     # id of (z, z), or -1


cdef inline int32_t* made_slot(NewIds* ids, Ledger* L, uint64_t key, int32_t z) noexcept:
    """Where the id of a pair this merge made is kept (with_left, with_right or zz); the
    ledger's own entry for it is cleared on the way."""
    cdef int32_t s = key_left(key), t = key_right(key)
    if s == z and t == z:
        L.zz = -1
        return &ids.zz
    if t == z:
        L.with_left[s] = -1
        return &ids.with_left[s]
    L.with_right[t] = -1
    return &ids.with_right[t]


cdef inline void number_made(Pairs* P, NewIds* ids, Ledger* L, int32_t z) noexcept:
    """The pairs one thread made: ids for those no earlier thread made, counts added. A pair
    whose count is 0 when this thread's range begins had its list freed (or not begun): the
    list will begin anew after this thread's cut."""
    cdef size_t i
    cdef int32_t* slot
    for i in range(L.made.size()):
        slot = made_slot(ids, L, L.made[i].key, z)
        if slot[0] < 0:
            slot[0] = new_pair(P, L.made[i].key)
        L.made[i].from_cut = P.count[slot[0]] == 0
        P.count[slot[0]] += L.made[i].count


cdef inline void take_list(Pairs* P, int32_t pid, Made* m, size_t start, int64_t start_last) noexcept:
    """Append m's list from byte ``start`` (its entry there follows position start_last) to
    occ[pid]: the first gap read and written again from occ_last, the rest copied."""
    cdef vector[uint8_t]* dst = &P.occ[pid]
    cdef uint64_t gap
    cdef size_t after, old
    if start >= m.n:
        return
    if start == 0 and dst.empty() and P.occ_last[pid] == 0 and not m.big.empty():
        dst.swap(m.big)                         # both count the first gap from 0
    else:
        after = get_varint(m.data(), start, &gap)
        append(P, pid, start_last + <int64_t>gap)
        old = dst.size()
        dst.resize(old + m.n - after)
        memcpy(dst.data() + old, m.data() + after, m.n - after)
    P.occ_last[pid] = m.last


cdef inline void move_lists(Pairs* P, NewIds* ids, Ledger* L, int32_t z) noexcept:
    """Then their lists, in thread order, for the pairs settle will keep (the others' lists are
    dropped there anyway)."""
    cdef size_t i
    cdef Made* m
    cdef int32_t pid
    for i in range(L.made.size()):
        m = &L.made[i]
        pid = made_slot(ids, L, m.key, z)[0]
        if P.count[pid] < P.track_from:
            continue
        if m.from_cut:
            take_list(P, pid, m, m.cut, m.cut_last)
        else:
            take_list(P, pid, m, 0, 0)
    L.made.clear()


cdef inline void take_side(Pairs* P, vector[int32_t]* lost, vector[int64_t]* loss, const int32_t* id_of,
                           vector[int32_t]* touched) noexcept:
    """One side's losses of one ledger: the pair with other symbol s (id_of[s]) loses loss[s]."""
    cdef size_t i
    cdef int32_t pid, s
    for i in range(lost.size()):
        s = lost[0][i]
        pid = id_of[s]
        P.count[pid] -= loss[0][s]
        loss[0][s] = 0
        touched.push_back(pid)
    lost.clear()


cdef inline void take_losses(Pairs* P, Ledger* ledgers, int n_threads, const int32_t* left_of,
                             const int32_t* right_of) noexcept:
    """Subtract what the existing pairs lost, summed over the threads; free the lists of those
    at 0 (counts of existing pairs only fall in a merge: at 0 now is at 0 during the sweep)."""
    cdef vector[int32_t] touched
    cdef size_t i
    cdef int k
    for k in range(n_threads):
        take_side(P, &ledgers[k].lost_left, &ledgers[k].left_loss, left_of, &touched)
        take_side(P, &ledgers[k].lost_right, &ledgers[k].right_loss, right_of, &touched)
    for i in range(touched.size()):
        if P.count[touched[i]] == 0:
            free_list(P, touched[i])


cdef inline void settle(Pairs* P, NewIds* ids, int32_t pid) noexcept:
    """After the fold: the merged pair is gone; the new pairs counted at least ``track_from``
    times are kept (with ids closed up), the others forgotten."""
    cdef size_t i
    cdef int32_t new, kept
    # rewrite() subtracted only the neighbours' pairs (which may include pid itself, when
    # occurrences overlap as in "aaa"), never the occurrence it replaced; now that every
    # occurrence is replaced or destroyed, none is left anywhere: the count is exactly 0.
    P.count[pid] = 0
    if P.created.empty():
        return
    kept = P.created[0]
    for i in range(P.created.size()):
        new = P.created[i]
        ids.with_left[key_left(P.keys[new])] = -1      # clean for the next merge
        ids.with_right[key_right(P.keys[new])] = -1
        if P.count[new] >= P.track_from:
            if kept != new:
                P.keys[kept] = P.keys[new]
                P.count[kept] = P.count[new]
                P.occ_last[kept] = P.occ_last[new]
                P.occ[kept].swap(P.occ[new])
            track(P, kept)
            kept += 1
    P.keys.resize(kept)
    P.count.resize(kept)
    P.occ_last.resize(kept)
    P.occ.resize(kept)
    P.created.clear()
