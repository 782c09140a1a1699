// SPDX-License-Identifier: Apache-2.0
// Ring schedules. The buffer is cut into n blocks (partition); rank r sends to r+1 and receives
// from r-1 at every step.
#pragma once

#include "collectives/schedule/step.hpp"

namespace gicl::coll::ring {

/// Reduce-scatter: after n-1 steps rank r holds block r fully reduced.
/// Step s: send block r-s-1, receive block r-s-2 and reduce into it.
GICL_HD int reduce_scatter_steps(int n) {
  return n - 1;
}
GICL_HD Step reduce_scatter(int r, int n, size_t count, int s) {
  Step st;
  st.send = block(mod(r + 1, n), count, n, mod(r - s - 1, n));
  st.recv = block(mod(r - 1, n), count, n, mod(r - s - 2, n));
  st.action = Action::kReduce;
  return st;
}

/// Allgather: rank r starts with block r. Step s: send block r-s, receive block r-s-1.
GICL_HD int allgather_steps(int n) {
  return n - 1;
}
GICL_HD Step allgather(int r, int n, size_t count, int s) {
  Step st;
  st.send = block(mod(r + 1, n), count, n, mod(r - s, n));
  st.recv = block(mod(r - 1, n), count, n, mod(r - s - 1, n));
  st.action = Action::kCopy;
  return st;
}

/// Allreduce: reduce-scatter, then allgather of the reduced blocks.
GICL_HD int allreduce_steps(int n) {
  return 2 * (n - 1);
}
GICL_HD Step allreduce(int r, int n, size_t count, int s) {
  return s < n - 1 ? reduce_scatter(r, n, count, s) : allgather(r, n, count, s - (n - 1));
}

/// Broadcast as a pipelined chain root -> root+1 -> ... -> root-1 of `chunks` pieces: the rank at
/// distance d from the root forwards piece s-d at step s (and receives piece s-d+1... from d-1).
GICL_HD int broadcast_steps(int n, int chunks) {
  return n > 1 ? chunks + n - 2 : 0;
}
GICL_HD Step broadcast(int r, int n, size_t count, int root, int chunks, int s) {
  Step st;
  const int d = mod(r - root, n);
  const int send_piece = s - d, recv_piece = s - d + 1;
  if (d < n - 1 && send_piece >= 0 && send_piece < chunks)
    st.send = block(mod(r + 1, n), count, chunks, send_piece);
  if (d > 0 && recv_piece >= 0 && recv_piece < chunks) {
    st.recv = block(mod(r - 1, n), count, chunks, recv_piece);
    st.action = Action::kCopy;
  }
  return st;
}

/// Reduce as the mirror of broadcast: a pipelined chain root+1 -> root+2 -> ... -> root of
/// `chunks` pieces. The rank at distance d from root+1 reduces piece s-d+1 (from d-1) into its
/// buffer at step s and forwards piece s-d, reduced the step before; the root ends the chain. Each
/// link carries the buffer once, where a ring allreduce carries it twice.
GICL_HD Step reduce(int r, int n, size_t count, int root, int chunks, int s) {
  Step st = broadcast(r, n, count, mod(root + 1, n), chunks, s);
  if (st.recv.peer >= 0) st.action = Action::kReduce;
  return st;
}

}  // namespace gicl::coll::ring
