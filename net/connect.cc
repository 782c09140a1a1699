// SPDX-License-Identifier: Apache-2.0
#include "net/connect.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/deadline.hpp"

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

namespace {
/// Every pair's connection, opened from the lower rank and then used once from the higher one.
/// The second half matters: `ofi_rxm` completes an accepted connection only in its connection
/// manager's progress, every FI_OFI_RXM_CM_PROGRESS_INTERVAL (10 ms by default), so the higher
/// rank's first write would otherwise wait that long inside the first collective.
Status open_endpoint_connections(Transport& t, bootstrap::Bootstrap& bs, int64_t timeout_ms) {
  const int n = bs.nranks(), me = bs.rank();
  constexpr uint64_t kHello = uint64_t{0xa5} << 24;  // | the sender's rank (below 2^24)
  constexpr uint64_t kReply = uint64_t{0x5a} << 24;  // | the sender's rank
  GICL_ARG_CHECK(n < (1 << 24), "net open_connections: %d ranks", n);
  // Slot r of a rank's scratch takes rank r's write (a hello from below, a reply from above); its
  // own slot is the source. (An empty write does not do: shm in libfabric 1.17 never completes
  // it at the sender.)
  std::vector<uint64_t> scratch(n, 0);
  std::unique_ptr<Region> region;
  GICL_CHECK(t.register_memory(scratch.data(), scratch.size() * 8, MemKind::kHost, &region));
  std::vector<RemoteKey> keys;
  GICL_CHECK(exchange_keys(bs, *region, &keys));
  const Deadline deadline = Deadline::after_ms(timeout_ms);
  std::vector<uint8_t> heard(n, 0);
  int lower = 0, higher = 0, done = 0;
  auto poll = [&](const char* waiting) -> Status {
    Event ev[64];
    int k = 0;
    GICL_CHECK(t.poll(ev, 64, &k));
    for (int i = 0; i < k; ++i) {
      const Event& e = ev[i];
      if (e.kind == EventKind::kImmediate) {
        const int from = static_cast<int>(e.value & 0xffffff);
        const uint64_t kind = e.value & ~uint64_t{0xffffff};
        if (from >= n || heard[from]) continue;
        if (kind == kHello && from < me) heard[from] = 1, ++lower;
        if (kind == kReply && from > me) heard[from] = 1, ++higher;
      } else if (e.status != GICL_SUCCESS) {
        return GICL_FAIL(e.status, "net: connecting to rank %d failed: %s", e.peer,
                         gicl_get_error_string(e.status));
      } else {
        ++done;
      }
    }
    if (k == 0 && deadline.expired()) {
      int missing = -1;
      for (int r = 0; r < n && missing < 0; ++r)
        if (r != me && !heard[r]) missing = r;
      return GICL_FAIL(GICL_TIMEOUT, "net: connecting: %s within %lld ms (GICL_NET_TIMEOUT)%s%s",
                       waiting, static_cast<long long>(timeout_ms),
                       missing >= 0 ? "; first silent: rank " : "",
                       missing >= 0 ? std::to_string(missing).c_str() : "");
    }
    return GICL_SUCCESS;
  };
  auto write = [&](int to, uint64_t kind) {
    return t.write_imm(to, *region, &scratch[me], keys[to], 8 * static_cast<uint64_t>(me), 8,
                       kind | me, to, Completion::kDelivered);
  };
  for (int j = me + 1; j < n; ++j) GICL_CHECK(write(j, kHello));
  while (lower < me) GICL_CHECK(poll("not every lower rank's first write arrived"));
  // The connections from below are accepted here: use each once in this direction.
  for (int j = 0; j < me; ++j) GICL_CHECK(write(j, kReply));
  while (higher < n - 1 - me) GICL_CHECK(poll("not every higher rank's reply arrived"));
  // Every rank has heard from all the others; its own writes may still await the peers'
  // progress, which each gives in the loop below.
  GICL_CHECK(bs.barrier());
  while (done < n - 1) GICL_CHECK(poll("this rank's first writes did not complete"));
  return GICL_SUCCESS;
}

}  // namespace

Status open_connections(Transport& t, bootstrap::Bootstrap& bs, int64_t timeout_ms) {
  for (int k = 0; k < t.endpoints(); ++k)
    GICL_CHECK(open_endpoint_connections(t.endpoint(k), bs, timeout_ms));
  return GICL_SUCCESS;
}

}  // namespace gicl::net
