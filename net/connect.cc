// SPDX-License-Identifier: Apache-2.0
#include "net/connect.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace gicl::net {
namespace {

/// What each rank says of its transport before addresses are exchanged.
struct AddressHeader {
  static constexpr uint32_t kMagic = 0x6e657431;  // "net1"
  uint32_t magic;
  uint8_t backend;
  uint8_t pad[3];
  uint64_t provider_hash;
  uint64_t address_bytes;
  char provider[40];  // for the message naming a rank that differs
};
static_assert(sizeof(AddressHeader) == 64, "exchanged as bytes");

/// FNV-1a: the same on every rank, whatever its build.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Status connect_all(Transport& t, bootstrap::Bootstrap& bs) {
  const int n = bs.nranks(), me = bs.rank();
  const std::string provider = t.provider();
  std::vector<AddressHeader> headers(n);
  AddressHeader& mine = headers[me];
  std::memset(&mine, 0, sizeof(mine));
  mine.magic = AddressHeader::kMagic;
  mine.backend = static_cast<uint8_t>(t.backend());
  mine.provider_hash = fnv1a(provider);
  mine.address_bytes = t.address_bytes();
  std::snprintf(mine.provider, sizeof(mine.provider), "%s", provider.c_str());
  GICL_CHECK(bs.allgather(headers.data(), sizeof(AddressHeader)));
  size_t stride = 0;
  for (int r = 0; r < n; ++r) {
    const AddressHeader& h = headers[r];
    if (h.magic != AddressHeader::kMagic || h.backend != mine.backend ||
        h.provider_hash != mine.provider_hash) {
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "net connect: rank %d opened %s %.40s, this rank %s %s: every rank must use "
                       "the same backend and provider (GICL_NET, GICL_OFI_PROVIDER)",
                       r, backend_name(static_cast<Backend>(h.backend)), h.provider,
                       backend_name(t.backend()), provider.c_str());
    }
    stride = std::max<size_t>(stride, h.address_bytes);
  }
  std::vector<uint8_t> all(stride * n, 0);
  GICL_CHECK(t.local_address(all.data() + stride * me));
  GICL_CHECK(bs.allgather(all.data(), stride));
  return t.connect(all.data(), stride);
}

Status exchange_keys(bootstrap::Bootstrap& bs, const Region& region, std::vector<RemoteKey>* keys) {
  keys->assign(bs.nranks(), RemoteKey{});
  (*keys)[bs.rank()] = region.remote_key();
  return bs.allgather(keys->data(), sizeof(RemoteKey));
}

}  // namespace gicl::net
