// SPDX-License-Identifier: Apache-2.0
// The ibverbs backend: reliable-connected queue pairs, one per peer, on one RDMA port, one
// completion queue for what this rank posts and what peers deliver, memory registered by virtual
// address (host memory with ibv_reg_mr, GPU memory as a DMA-BUF). Every rdma-core call goes
// through the VerbsApi table (common/verbs_api.hpp), so the library loads without rdma-core and
// a mock table drives the tests (tests/unit/net_verbs_test.cc). It has never run on an RDMA NIC.
//
// How it keeps the transport's guarantees: an RC write completes when the responder acknowledged
// it, after the data was placed (delivery complete); a write with immediate consumes a receive
// the target keeps posted (64 per peer, reposted as used; a burst beyond them waits in the
// responder's RNR retries, never fails); swap, which verbs lacks, is compare-swap repeated with
// the value last seen until it lands; the old value of a fetching atomic is converted where the
// adapter returns it big-endian (Mellanox on little-endian hosts).
#pragma once

#include <memory>

#include "net/transport.hpp"

namespace gicl::net {

/// Opens the port GICL_VERBS_DEVICE names (else the first active one) and a queue pair per rank.
Status open_verbs(const OpenArgs& args, std::unique_ptr<Transport>* out);

}  // namespace gicl::net
