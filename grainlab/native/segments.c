/* segments.c — the grain graph builder's segment credit, compiled.
 *
 * Every event row opens a segment credited to the owner running after it
 * (docs/graph-model.md "How each node's time is measured"): the segment
 * goes to that owner's latest *receiving* slot opened at or before the row
 * (grainlab/graph/slots.py, credit_segments). The numpy twin answers with
 * one sort of packed (owner, row) keys and one searchsorted per row: at 28M
 * rows that is a random probe into a 14M-key array per row, plus five
 * row-sized scratch arrays. Here each owner's receiving slots are one
 * contiguous, sorted range (the slots are in chain order), so a row looks
 * only in its owner's range, starting from where that owner's previous row
 * landed: O(rows + slots), no scratch. Loaded through ctypes; the numpy path
 * (GRAINLAB_NATIVE=0, or the library not built) gives the same result,
 * checked on random inputs by tests/test_native_segments.py. */
#include <stdint.h>

/* n rows: owner_running[r] (-1: nobody), grank[r] (the row's global order
 * key; NULL: r itself), seg[r] >= 0 and seg_end[r]. E owners; owner o's
 * receiving slots are positions rbeg[o] .. rend[o]-1 of rrow / rslot, with
 * rrow (their opening row's order key) non-decreasing in that range.
 * Out: slot_of_row[r] = the slot the row's segment goes to (the last of the
 * owner's receiving slots with rrow <= grank[r]), -1 when the row credits
 * nothing (nobody runs, seg == 0, or no such slot); own[s] += seg[r] and
 * last_end[s] = max(last_end[s], seg_end[r]) over those rows (own and
 * last_end hold ns entries the caller initialised). Rows are credited in
 * row order. Returns 0; -2 when an owner or slot id is out of range. */
int gl_credit_segments(int64_t n, const void *owner_running, int64_t owner_wide,
                       const int64_t *grank,
                       const int64_t *seg, const int64_t *seg_end, int64_t E,
                       const int64_t *rbeg, const int64_t *rend, const int64_t *rrow,
                       const int64_t *rslot, int64_t ns, int64_t *slot_of_row,
                       int64_t *own, int64_t *last_end, int64_t *cursor) {
  /* owner_running: int32 (owner_wide 0, the builder's ids while they fit) or int64 */
  const int32_t *run32 = owner_running;
  const int64_t *run64 = owner_running;
  /* cursor: E scratch entries, the position each owner's last row landed at */
  for (int64_t o = 0; o < E; o++) cursor[o] = rbeg[o];
  for (int64_t r = 0; r < n; r++) {
    int64_t o = owner_wide ? run64[r] : (int64_t)run32[r];
    slot_of_row[r] = -1;
    if (o < 0 || seg[r] <= 0) continue;
    if (o >= E) return -2;
    int64_t lo = rbeg[o], hi = rend[o];
    if (lo >= hi) continue;
    int64_t g = grank ? grank[r] : r;
    /* the last position p in [lo, hi) with rrow[p] <= g, or lo - 1 */
    int64_t p = cursor[o];
    if (p < lo || p >= hi) p = lo;
    if (rrow[p] <= g) {
      /* gallop forward from the hint, then bisect */
      int64_t step = 1, a = p, b;
      while (a + step < hi && rrow[a + step] <= g) {
        a += step;
        step <<= 1;
      }
      b = a + step < hi ? a + step : hi;     /* rrow[b] > g or b == hi */
      while (b - a > 1) {
        int64_t m = a + (b - a) / 2;
        if (rrow[m] <= g) a = m; else b = m;
      }
      p = a;
    } else {
      int64_t a = lo - 1, b = p;               /* rrow[b] > g */
      while (b - a > 1) {
        int64_t m = a + (b - a) / 2;
        if (rrow[m] <= g) a = m; else b = m;
      }
      p = a;
      if (p < lo) continue;
    }
    cursor[o] = p;
    int64_t s = rslot[p];
    if (s < 0 || s >= ns) return -2;
    slot_of_row[r] = s;
    own[s] += seg[r];
    if (seg_end[r] > last_end[s]) last_end[s] = seg_end[r];
  }
  return 0;
}

/* Who runs after each row, and the row's segment (grainlab/graph/events.py,
 * running_segments). n rows in per-thread time order: ev[r] (event code),
 * first[r] (1: the first row of its thread; rows of one thread are
 * consecutive), time[r], task_owner[r] / other_owner[r]
 * (owner of the row's task / other, -1: none; int32, or int64 when
 * owner_wide). decides[256]: the event
 * decides who runs after it (TASK_CREATE: the `other`, else the `task`);
 * nobody[256]: nobody runs after it. A thread's first row decides (or runs
 * nobody) whatever its event; other rows keep the thread's running owner.
 * clip[E]: an owner's segments end no later than this.
 * Out: owner_running[r] (-1: nobody; of the owners' width); seg_end[r] = min(the thread's next
 * row's time, or this row's at its last row; clip[owner]) and seg[r] =
 * max(seg_end - time, 0), 0 when nobody runs. Returns 0; -2 when an owner
 * is out of range. */
int gl_running_segments(int64_t n, const uint8_t *ev, const uint8_t *first,
                        const int64_t *time, const void *task_owner,
                        const void *other_owner, int64_t owner_wide, const uint8_t *decides,
                        const uint8_t *nobody, int64_t create_event, int64_t E,
                        const int64_t *clip, void *owner_running, int64_t *seg,
                        int64_t *seg_end) {
  /* owners as the builder keeps them: int32 while ids fit (owner_wide 0),
   * read in place rather than widened into two row-sized int64 copies, and
   * the running owner written at the same width */
  const int32_t *task32 = task_owner, *other32 = other_owner;
  const int64_t *task64 = task_owner, *other64 = other_owner;
  int32_t *run32 = owner_running;
  int64_t *run64 = owner_running;
  int64_t running = -1;
  for (int64_t r = 0; r < n; r++) {
    uint8_t e = ev[r];
    if (nobody[e]) {
      running = -1;
    } else if (decides[e]) {
      if (e == create_event)
        running = owner_wide ? other64[r] : (int64_t)other32[r];
      else
        running = owner_wide ? task64[r] : (int64_t)task32[r];
    } else if (first[r]) {
      running = -1;
    }
    if (running >= E) return -2;
    if (owner_wide)
      run64[r] = running;
    else
      run32[r] = (int32_t)running;
    int last = r + 1 == n || first[r + 1];
    int64_t end = last ? time[r] : time[r + 1];
    if (running >= 0 && clip[running] < end) end = clip[running];
    seg_end[r] = end;
    int64_t s = end - time[r];
    seg[r] = running < 0 || s < 0 ? 0 : s;
  }
  return 0;
}

/* Fork weights (slots.py, _gap_to_next_runtime_row): for each of m row
 * positions idx[k], the time from it to the next row of the same thread that
 * is not a dependence row (event dep_a or dep_b: those belong to the
 * creation), at least 0; 0 when the thread has no such row. Rows are in
 * per-thread time order. The numpy twin makes a row-sized running minimum
 * and three more row-sized arrays; here each create looks only at the rows
 * after it (its own dependence rows). Returns 0; -2: a position out of range. */
int gl_gap_to_next(int64_t n, const uint8_t *event, const uint16_t *thread,
                   const int64_t *time, int64_t m, const int64_t *idx,
                   int64_t dep_a, int64_t dep_b, int64_t *gap) {
  for (int64_t k = 0; k < m; k++) {
    int64_t i = idx[k];
    if (i < 0 || i >= n) return -2;
    int64_t j = i + 1;
    while (j < n && (event[j] == dep_a || event[j] == dep_b)) j++;
    int64_t d = 0;
    if (j < n && thread[j] == thread[i]) d = time[j] - time[i];
    gap[k] = d > 0 ? d : 0;
  }
  return 0;
}
