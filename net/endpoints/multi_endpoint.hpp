// SPDX-License-Identifier: Apache-2.0
// One transport made of several endpoints of the same backend (GICL_NET_ENDPOINTS), each
// driven by a thread of its own, so that a provider whose progress runs on the calling CPU (TCP
// sockets) moves data on several cores. Endpoint 0 stays on the calling thread (the proxy), so
// small operations keep its latency, with no hand-over. Operations of at least
// kEndpointSpreadFrom bytes spill to the least busy endpoint once endpoint 0 has kSpillAt
// outstanding; the others, atomics included, go to endpoint 0. flush covers every endpoint.
//
// Every endpoint registers each region, in the same order, so that providers with requested keys
// (tcp, shm) give every endpoint the same key and one RemoteKey reaches a region through any of
// them; a provider that picks its own keys (FI_MR_PROV_KEY: efa, verbs) gives different keys,
// and registering there fails naming the endpoints (GICL_NET_ENDPOINTS=1 is then the setting).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "net/transport.hpp"

namespace gicl::net {

/// Operations from this size on are spread over the endpoints; smaller ones stay on endpoint 0.
constexpr size_t kEndpointSpreadFrom = size_t{64} << 10;
/// ... once endpoint 0 has this many outstanding: fewer in flight, the hand-over's latency shows.
constexpr int kSpillAt = 4;

/// Wraps `endpoints` (at least 2, opened alike, not yet connected) into one transport. Endpoint k
/// >= 1 gets its thread at the first operation or poll; until then `endpoint(k)` may be driven
/// directly (open_connections opens each endpoint's connections that way).
Status open_multi_endpoint(std::vector<std::unique_ptr<Transport>> endpoints, int nranks,
                           int max_inflight, std::unique_ptr<Transport>* out);

}  // namespace gicl::net
