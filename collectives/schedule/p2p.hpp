// Message order of a point-to-point group (p2p_kernel), shared by the kernel and the protocol
// model in tests/unit/coll_pipe_protocol_test.cc. Each (peer, direction) pair is one stream: the
// group's operations with that peer in that direction, in group order, each cut into messages.
// Round k carries message k of every stream, sends before receives. One message per FIFO per
// round keeps every group deadlock-free whatever the number of sends to one peer: a send of round
// k waits only for the receiver to have consumed round k - kPipeSlots, which it did in an earlier
// round of its own, and receives wait only for sends, which never wait on the current round.
#pragma once

#include <cstddef>

#include "collectives/schedule/step.hpp"

namespace ccl::coll {

/// Messages of the earlier operations in operation i's stream: operation i carries, in round k,
/// its message k - p2p_stream_offset(...) when that is in [0, msgs[i]).
template <typename Op>
CCL_HD size_t p2p_stream_offset(const Op* ops, const size_t* msgs, int i) {
  size_t off = 0;
  for (int j = 0; j < i; ++j)
    if (ops[j].peer == ops[i].peer && (ops[j].is_send != 0) == (ops[i].is_send != 0))
      off += msgs[j];
  return off;
}

}  // namespace ccl::coll
