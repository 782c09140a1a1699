// SPDX-License-Identifier: Apache-2.0
// Names of collectives and algorithms, for logs, error messages and the simulator's reports.
#include "collectives/common/names.hpp"

namespace gicl::coll {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllToAll:
      return "alltoall";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case Algorithm::kRabenseifner:
      return "rabenseifner";
    case Algorithm::kOneShot:
      return "one_shot";
    case Algorithm::kTwoShot:
      return "two_shot";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kCopyEngine:
      return "copy_engine";
    case Algorithm::kSendRecv:
      return "send_recv";
  }
  return "?";
}

}  // namespace gicl::coll
