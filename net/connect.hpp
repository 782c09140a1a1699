// SPDX-License-Identifier: Apache-2.0
// Connecting a job's transports and sharing registrations, through the bootstrap.
#pragma once

#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "net/transport.hpp"

namespace gicl::net {

/// Allgathers every rank's endpoint address and connects. Every rank must have opened the same
/// backend and provider: a rank that did not is named, and no rank connects.
Status connect_all(Transport& transport, bootstrap::Bootstrap& bs);

/// Allgathers a region's remote key: (*keys)[r] is rank r's.
Status exchange_keys(bootstrap::Bootstrap& bs, const Region& region, std::vector<RemoteKey>* keys);

}  // namespace gicl::net
