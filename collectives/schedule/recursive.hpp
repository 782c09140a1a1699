// SPDX-License-Identifier: Apache-2.0
// Recursive schedules over p = 2^L "virtual" ranks. When n is not a power of two, the first
// 2*(n-p) ranks pair up: each even rank hands its data to the odd rank after it (fold in), sits
// out, and gets the result back at the end (fold out).
#pragma once

#include "collectives/schedule/step.hpp"

namespace gicl::coll::recursive {

struct Fold {
  int p;    // largest power of two <= n
  int rem;  // n - p: ranks folded out
  int log2p;
};

GICL_HD Fold fold_of(int n) {
  Fold f{1, 0, 0};
  while (f.p * 2 <= n) f.p *= 2, ++f.log2p;
  f.rem = n - f.p;
  return f;
}

/// Virtual rank of original rank r, or -1 for a folded-out (even, r < 2 rem) rank.
GICL_HD int vrank(int r, const Fold& f) {
  if (r < 2 * f.rem) return (r % 2) ? r / 2 : -1;
  return r - f.rem;
}
/// Original rank of virtual rank v.
GICL_HD int orig(int v, const Fold& f) {
  return v < f.rem ? 2 * v + 1 : v + f.rem;
}
/// First original rank whose block belongs to virtual rank v's group (v's own lowest block).
GICL_HD int orig_lo(int v, const Fold& f) {
  return v < f.rem ? 2 * v : v + f.rem;
}

/// Elements of the original-rank blocks [i, j) of an n-block partition.
GICL_HD Transfer blocks(int peer, size_t count, int n, int i, int j) {
  size_t lo, hi, len;
  partition(count, n, i, &lo, &len);
  if (j >= n)
    hi = count;
  else
    partition(count, n, j, &hi, &len);
  Transfer t;
  t.peer = peer;
  t.offset = lo;
  t.count = hi - lo;
  return t;
}

/// Elements of the p-chunk partition's chunks [a, b).
GICL_HD Transfer chunks(int peer, size_t count, int p, int a, int b) {
  return blocks(peer, count, p, a, b);
}

GICL_HD int fold_steps(const Fold& f) {
  return f.rem > 0 ? 1 : 0;
}

/// The fold-in step (whole buffer, or for allgather only the folded rank's own block).
GICL_HD Step fold_in(int r, const Fold& f, size_t count, bool allgather, int n) {
  Step st;
  if (r >= 2 * f.rem) return st;
  if (r % 2 == 0)
    st.send = allgather ? blocks(r + 1, count, n, r, r + 1) : whole(r + 1, count);
  else {
    st.recv = allgather ? blocks(r - 1, count, n, r - 1, r) : whole(r - 1, count);
    st.action = allgather ? Action::kCopy : Action::kReduce;
  }
  return st;
}

/// The fold-out step: the result goes back to the folded-out rank.
GICL_HD Step fold_out(int r, const Fold& f, size_t count) {
  Step st;
  if (r >= 2 * f.rem) return st;
  if (r % 2 == 1)
    st.send = whole(r - 1, count);
  else {
    st.recv = whole(r + 1, count);
    st.action = Action::kCopy;
  }
  return st;
}

/// Allreduce by recursive doubling: fold in, log2 p full-buffer exchanges, fold out.
GICL_HD int doubling_allreduce_steps(int n) {
  const Fold f = fold_of(n);
  return f.log2p + 2 * fold_steps(f);
}
GICL_HD Step doubling_allreduce(int r, int n, size_t count, int s) {
  const Fold f = fold_of(n);
  if (f.rem > 0) {
    if (s == 0) return fold_in(r, f, count, false, n);
    if (s == f.log2p + 1) return fold_out(r, f, count);
    --s;
  }
  Step st;
  const int v = vrank(r, f);
  if (v < 0) return st;
  const int partner = orig(v ^ (1 << s), f);
  st.send = whole(partner, count);
  st.recv = whole(partner, count);
  st.action = Action::kReduce;
  return st;
}

/// Allgather by recursive doubling: rank r starts with block r of n. Fold in (block only),
/// log2 p exchanges of growing groups, fold out (whole buffer).
GICL_HD int doubling_allgather_steps(int n) {
  return doubling_allreduce_steps(n);
}
GICL_HD Step doubling_allgather(int r, int n, size_t count, int s) {
  const Fold f = fold_of(n);
  if (f.rem > 0) {
    if (s == 0) return fold_in(r, f, count, true, n);
    if (s == f.log2p + 1) return fold_out(r, f, count);
    --s;
  }
  Step st;
  const int v = vrank(r, f);
  if (v < 0) return st;
  const int size = 1 << s, lo = v & ~(size - 1), plo = lo ^ size;
  const int partner = orig(v ^ size, f);
  // A group of consecutive virtual ranks owns a consecutive range of original blocks; orig_lo(p)
  // is n, so the last group's range ends at the end of the buffer.
  st.send = blocks(partner, count, n, orig_lo(lo, f), orig_lo(lo + size, f));
  st.recv = blocks(partner, count, n, orig_lo(plo, f), orig_lo(plo + size, f));
  st.action = Action::kCopy;
  return st;
}

/// Rabenseifner allreduce: fold in; recursive halving reduce-scatter over p chunks (after it,
/// virtual rank v holds chunk v reduced); recursive doubling allgather of the chunks; fold out.
GICL_HD int rabenseifner_steps(int n) {
  const Fold f = fold_of(n);
  return 2 * f.log2p + 2 * fold_steps(f);
}
GICL_HD Step rabenseifner(int r, int n, size_t count, int s) {
  const Fold f = fold_of(n);
  if (f.rem > 0) {
    if (s == 0) return fold_in(r, f, count, false, n);
    if (s == 2 * f.log2p + 1) return fold_out(r, f, count);
    --s;
  }
  Step st;
  const int v = vrank(r, f);
  if (v < 0) return st;
  const int p = f.p;
  if (s < f.log2p) {
    // Halving step s: the current range has p >> s chunks starting at v with those bits cleared.
    const int size = p >> s, half = size / 2, lo = v & ~(size - 1);
    const int partner = orig(v ^ half, f);
    const bool keep_low = (v & half) == 0;
    const int keep = keep_low ? lo : lo + half, give = keep_low ? lo + half : lo;
    st.send = chunks(partner, count, p, give, give + half);
    st.recv = chunks(partner, count, p, keep, keep + half);
    st.action = Action::kReduce;
    return st;
  }
  // Doubling step k: groups of 2^k chunks merge with the partner's.
  const int k = s - f.log2p, size = 1 << k, lo = v & ~(size - 1), plo = lo ^ size;
  const int partner = orig(v ^ size, f);
  st.send = chunks(partner, count, p, lo, lo + size);
  st.recv = chunks(partner, count, p, plo, plo + size);
  st.action = Action::kCopy;
  return st;
}

}  // namespace gicl::coll::recursive
