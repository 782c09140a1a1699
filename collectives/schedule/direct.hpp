// SPDX-License-Identifier: Apache-2.0
// Direct schedules: every rank exchanges with every other rank in n-1 steps (step s: send to
// r+s+1, receive from r-s-1), the message pattern of the one-shot and two-shot load/store kernels.
#pragma once

#include "collectives/schedule/step.hpp"

namespace gicl::coll::direct {

GICL_HD int steps(int n) {
  return n - 1;
}

/// One-shot allreduce: every rank gets every peer's whole input and reduces.
GICL_HD Step one_shot_allreduce(int r, int n, size_t count, int s) {
  Step st;
  st.send = whole(mod(r + s + 1, n), count);
  st.recv = whole(mod(r - s - 1, n), count);
  st.action = Action::kReduce;
  return st;
}

/// Reduce-scatter: block j goes to rank j, which reduces it.
GICL_HD Step reduce_scatter(int r, int n, size_t count, int s) {
  Step st;
  const int to = mod(r + s + 1, n), from = mod(r - s - 1, n);
  st.send = block(to, count, n, to);
  st.recv = block(from, count, n, r);
  st.action = Action::kReduce;
  return st;
}

/// Allgather: rank r's block r goes to everyone.
GICL_HD Step allgather(int r, int n, size_t count, int s) {
  Step st;
  const int to = mod(r + s + 1, n), from = mod(r - s - 1, n);
  st.send = block(to, count, n, r);
  st.recv = block(from, count, n, from);
  st.action = Action::kCopy;
  return st;
}

/// Push mode (two-shot, reduce-scatter with a staged buffer): each rank's staging is its inbox,
/// one slot per sender holding that sender's part of the rank's block. Slots are the launch's
/// largest rank block rounded to 16 bytes, so each starts aligned.
GICL_HD size_t inbox_stride(size_t block_elems, size_t esize) {
  return (block_elems * esize + 15) / 16 * 16;
}
/// Largest rank block (elements) whose n inbox slots fit a staging buffer of `stage_bytes`.
GICL_HD size_t inbox_block_limit(size_t stage_bytes, int n, size_t esize) {
  return stage_bytes / static_cast<size_t>(n) / 16 * 16 / esize;
}

/// In-place alltoall by swaps (direct.cu, swap_blocks): at step k of n, rank r trades blocks with
/// (k - r) mod n, whose partner at step k is r again, so every step is a matching and no rank
/// waits for one busy with a third. Each rank meets every other once and itself once (it sits
/// that step out).
GICL_HD int swap_partner(int k, int r, int n) {
  return mod(k - r, n);
}

/// Two-shot allreduce: reduce-scatter, then allgather of the reduced blocks.
GICL_HD int two_shot_steps(int n) {
  return 2 * (n - 1);
}

/// Rank j's block of a two-shot or NVLS allreduce of `count` elements of `esize` bytes: whole
/// 16-byte packs (partition_packs), so no rank's copies start mid-pack; the kernels cut with it.
/// esize 0: element-wise (partition), the type-agnostic shape.
GICL_HD Transfer two_shot_block(int peer, size_t count, int n, int j, size_t esize) {
  Transfer t;
  t.peer = peer;
  if (esize == 0)
    partition(count, n, j, &t.offset, &t.count);
  else
    partition_packs(count, n, j, esize, &t.offset, &t.count);
  return t;
}

GICL_HD Step two_shot_allreduce(int r, int n, size_t count, size_t esize, int s) {
  Step st;
  if (s < n - 1) {  // reduce-scatter: block j goes to rank j, which reduces it
    const int to = mod(r + s + 1, n), from = mod(r - s - 1, n);
    st.send = two_shot_block(to, count, n, to, esize);
    st.recv = two_shot_block(from, count, n, r, esize);
    st.action = Action::kReduce;
  } else {  // allgather of the reduced blocks
    s -= n - 1;
    const int to = mod(r + s + 1, n), from = mod(r - s - 1, n);
    st.send = two_shot_block(to, count, n, r, esize);
    st.recv = two_shot_block(from, count, n, from, esize);
    st.action = Action::kCopy;
  }
  return st;
}

/// Broadcast: the root sends the whole buffer to root+s+1 at step s.
GICL_HD Step broadcast(int r, int n, size_t count, int root, int s) {
  Step st;
  const int target = mod(root + s + 1, n);
  if (r == root) st.send = whole(target, count);
  if (r == target) {
    st.recv = whole(root, count);
    st.action = Action::kCopy;
  }
  return st;
}

/// Reduce: rank root+s+1 sends its whole buffer to the root at step s, which reduces it.
GICL_HD Step reduce(int r, int n, size_t count, int root, int s) {
  Step st;
  const int source = mod(root + s + 1, n);
  if (r == source) st.send = whole(root, count);
  if (r == root) {
    st.recv = whole(source, count);
    st.action = Action::kReduce;
  }
  return st;
}

/// Alltoall (separate input and output): input block j goes to rank j; output block i comes from
/// rank i. Offsets: the send offset is in the input, the receive offset in the output.
GICL_HD Step alltoall(int r, int n, size_t count, int s) {
  Step st;
  const int to = mod(r + s + 1, n), from = mod(r - s - 1, n);
  st.send = block(to, count, n, to);
  st.recv = block(from, count, n, from);
  st.action = Action::kCopy;
  return st;
}

}  // namespace gicl::coll::direct
