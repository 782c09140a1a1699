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

/// Establishes every pair's connection before the first operation, the lower rank of each pair
/// first: each rank writes 8 bytes with an immediate into a scratch region of every higher rank
/// (registered here for this alone, and released before it returns) and polls until it has
/// heard from every lower one; after a barrier, it polls until its own writes completed.
/// Each endpoint of the transport (Transport::endpoints) is opened so. Connection-oriented
/// providers under the RDM endpoint (`tcp;ofi_rxm`) otherwise set up a connection at a pair's first
/// operation, from both ends at once where both send first. Every rank calls it, with the transport
/// otherwise idle.
Status open_connections(Transport& t, bootstrap::Bootstrap& bs, int64_t timeout_ms);

}  // namespace gicl::net
