// SPDX-License-Identifier: Apache-2.0
// Argument checks every backend runs before posting: a bad peer, a local buffer outside its
// registration, a remote range outside the peer's region or a key of another backend is an
// error naming the argument, never a provider fault or a write to the wrong place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "net/transport.hpp"

namespace gicl::net {

Status check_peer(const char* op, int peer, int nranks);
Status check_local(const char* op, const char* arg, const Region& region, const void* ptr,
                   size_t bytes);
Status check_remote(const char* op, int peer, Backend backend, const RemoteKey& key,
                    uint64_t offset, size_t bytes);
/// The 8-byte aligned remote word of an atomic.
Status check_atomic(const char* op, int peer, Backend backend, const RemoteKey& key,
                    uint64_t offset);

}  // namespace gicl::net
