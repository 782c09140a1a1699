// SPDX-License-Identifier: Apache-2.0
#include "net/op_checks.hpp"

namespace gicl::net {

Status check_peer(const char* op, int peer, int nranks) {
  GICL_ARG_CHECK(peer >= 0 && peer < nranks, "net %s: peer %d is not a rank of [0, %d)", op, peer,
                 nranks);
  return GICL_SUCCESS;
}

Status check_local(const char* op, const char* arg, const Region& region, const void* ptr,
                   size_t bytes) {
  GICL_ARG_CHECK(region.contains(ptr, bytes),
                 "net %s: %s %p + %zu bytes lies outside its registered region %p + %zu bytes", op,
                 arg, ptr, bytes, region.base(), region.bytes());
  return GICL_SUCCESS;
}

Status check_remote(const char* op, int peer, Backend backend, const RemoteKey& key,
                    uint64_t offset, size_t bytes) {
  GICL_ARG_CHECK(key.version == RemoteKey::kVersion && key.backend == static_cast<uint8_t>(backend),
                 "net %s to rank %d: the remote key is not a key of the %s backend, version %u "
                 "(version %u, backend %u)",
                 op, peer, backend_name(backend), RemoteKey::kVersion, key.version, key.backend);
  GICL_ARG_CHECK(offset <= key.bytes && bytes <= key.bytes - offset,
                 "net %s to rank %d: offset %llu + %zu bytes exceeds the remote region's %llu "
                 "bytes",
                 op, peer, static_cast<unsigned long long>(offset), bytes,
                 static_cast<unsigned long long>(key.bytes));
  return GICL_SUCCESS;
}

Status check_atomic(const char* op, int peer, Backend backend, const RemoteKey& key,
                    uint64_t offset) {
  GICL_CHECK(check_remote(op, peer, backend, key, offset, 8));
  GICL_ARG_CHECK((key.addr + offset) % 8 == 0,
                 "net %s to rank %d: offset %llu is not 8-byte aligned in the remote region", op,
                 peer, static_cast<unsigned long long>(offset));
  return GICL_SUCCESS;
}

}  // namespace gicl::net
