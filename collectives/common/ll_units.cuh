// SPDX-License-Identifier: Apache-2.0
// The 8-byte units the LL protocols carry: loads and stores of any alignment and length (a rank
// block need not be a multiple of 8 bytes), where rank block j of a buffer starts, and the wait
// for a unit's two (data, flag) entries. Shared by the LL (ll.cu), LL128 (ll128.cu) and
// point-to-point LL (collectives/pipe/p2p.cu) kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/schedule/ll_flag.hpp"
#include "gicl/device.cuh"

namespace gicl::coll {

/// Whether the unit at byte `off` of `p` is one aligned 8-byte word within `bytes`.
__device__ __forceinline__ bool whole_word(const char* p, size_t off, size_t bytes) {
  return off + 8 <= bytes && (reinterpret_cast<uintptr_t>(p + off) & 7) == 0;
}

/// 8 bytes of `p` from byte `off` (zero past `bytes`), any alignment.
__device__ __forceinline__ uint64_t load_unit(const char* p, size_t off, size_t bytes) {
  if (whole_word(p, off, bytes)) return *reinterpret_cast<const uint64_t*>(p + off);
  uint64_t v = 0;
  for (int k = 0; k < 8 && off + k < bytes; ++k)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[off + k])) << (8 * k);
  return v;
}

__device__ __forceinline__ void store_unit(char* p, size_t off, size_t bytes, uint64_t v) {
  if (whole_word(p, off, bytes)) {
    *reinterpret_cast<uint64_t*>(p + off) = v;
    return;
  }
  for (int k = 0; k < 8 && off + k < bytes; ++k) p[off + k] = static_cast<char>(v >> (8 * k));
}

/// Where one block of units goes or comes from: rank blocks of `bb` bytes.
__device__ __forceinline__ const char* blk(const char* p, int j, size_t bb) {
  return p + static_cast<size_t>(j) * bb;
}

/// Stores unit `v` at `to` as two (4 data bytes, flag) entries in one 16-byte store: a reader that
/// sees `flag` in both entries has the whole unit (ll_wait).
__device__ __forceinline__ void ll_store(uint64_t* to, uint64_t v, uint32_t flag) {
  const uint64_t lo = (v & 0xffffffffull) | (static_cast<uint64_t>(flag) << 32);
  const uint64_t hi = (v >> 32) | (static_cast<uint64_t>(flag) << 32);
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(to), "l"(lo), "l"(hi) : "memory");
}

/// Rewrites units [from, row_units) of an LL row (`row`: the receiver's, as mapped here) with
/// data 0 and `flag`, unit first, first + stride, ... of the calling thread (ll_refresh). Out of
/// line: it runs once every 2^31 calls of a row, and inlined it took registers from every call.
static __device__ __noinline__ void ll_refresh_row(uint64_t* row, size_t from, size_t row_units,
                                                   uint32_t flag, size_t first, size_t stride) {
  for (size_t v = from + first; v < row_units; v += stride) ll_store(row + 2 * v, 0, flag);
}

/// This rank's LL rows of epoch e's parity at every peer rewritten whole with data 0 and e's flag
/// by the calling block (ll_refresh), in the kernels that advance the collective epoch without
/// carrying LL data (direct, LL128): a refresh point that fell on one of them used to refresh
/// nothing, so a unit could outlive its flag's repeat. The caller has waited for every peer to
/// complete epoch e - 2 (the last launch that could read these rows); the stores are complete
/// (fenced) on return, before this rank's epoch e lets a peer's next launch of the parity read.
/// Inline, a plain store loop: an out-of-line call here made the LL128 kernels keep registers
/// across it (fp16/bf16 spills 8 -> 52 bytes).
__device__ __forceinline__ void refresh_own_ll_rows(const gicl_device_comm_t& c, uint64_t* ll,
                                                    size_t ll_entries, uint64_t e) {
  const int n = c.nranks, me = c.rank;
  uint64_t* const mine = ll + ((e & 1) * n + me) * ll_entries;
  const uint32_t flag = ll_flag(e);
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    uint64_t* const row = dev::peer_ptr(c, mine, j);
    for (size_t v = threadIdx.x; v < ll_entries / 2; v += blockDim.x)
      ll_store(row + 2 * v, 0, flag);
  }
  dev::detail::fence_system();
}

/// Spins until both entries of a unit carry `flag` (ll_store); false on timeout or abort
/// (reported).
__device__ inline bool ll_wait(const gicl_device_comm_t& c, const uint64_t* e2, uint32_t flag,
                               int peer, uint64_t* out) {
  dev::detail::Deadline deadline;
  for (uint32_t spin = 0;; ++spin) {
    uint64_t a, b;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                 : "=l"(a), "=l"(b)
                 : "l"(e2)
                 : "memory");
    if (static_cast<uint32_t>(a >> 32) == flag && static_cast<uint32_t>(b >> 32) == flag) {
      *out = (a & 0xffffffffull) | (b << 32);
      return true;
    }
    if ((spin & 1023) == 1023 && deadline.expired(dev::detail::reporter(c), GICL_OP_SIGNAL_WAIT,
                                                  peer, e2, flag, a >> 32, GICL_CMP_EQ))
      return false;
  }
}

}  // namespace gicl::coll
