// SPDX-License-Identifier: Apache-2.0
// The libfabric backend: one reliable-datagram endpoint per process with a table address vector
// of every rank, one completion queue for what it posts and what peers deliver, and memory
// registered as the provider asks (local descriptors, provider keys, virtual or offset
// addressing, endpoint binding). It follows EFA's rules on every provider: delivery-complete
// writes and atomics, no ordering asked for, no FI_FENCE, FI_EAGAIN answered by progressing.
#pragma once

#include <memory>

#include "net/transport.hpp"

namespace gicl::net {

/// Opens the provider GICL_OFI_PROVIDER names (else the best one here) and its endpoint.
Status open_ofi(const OpenArgs& args, std::unique_ptr<Transport>* out);

}  // namespace gicl::net
