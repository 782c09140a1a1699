// SPDX-License-Identifier: Apache-2.0
// Implementation of gicl/device/coll.cuh, which includes it inside namespace gicl::dev where
// it stands (after the types it uses). Not part of the contract; not self-contained.
#pragma once

namespace detail {

/// A team as a member list (or the whole communicator when `team` is null).
struct Members {
  const DeviceTeam* team;
  int nranks;
  __device__ int size() const { return team ? team->size : nranks; }
  __device__ int rank(int i) const { return team ? team->members[i] : i; }
};

template <Scope S>
__device__ __forceinline__ bool team_barrier(const DeviceComm& c, const DeviceTeam* t) {
  return t ? barrier<S>(c, *t) : barrier<S>(c);
}

/// Whether a member is on the network path (its memory cannot be loaded from here): the
/// reductions then stage through the communicator's collective scratch.
__device__ __forceinline__ bool any_network(const DeviceComm& c, const Members& m) {
  if (c.net == nullptr) return false;
  for (int k = 0; k < m.size(); ++k)
    if (c.paths[m.rank(k)] == GICL_PATH_NETWORK) return true;
  return false;
}

/// One element reduced over `n` members in order, member k's read through L2 at `at(k)`.
template <gicl_redop_t Op, typename T, typename At>
__device__ __forceinline__ T reduce_loaded(int n, At&& at) {
  using A = AccOf<T>;
  A acc{};
  for (int k = 0; k < n; ++k) {
    const T* p = at(k);
    T v;
    if constexpr (sizeof(T) == 8)
      *reinterpret_cast<unsigned long long*>(&v) =
          __ldcg(reinterpret_cast<const unsigned long long*>(p));
    else if constexpr (sizeof(T) == 4)
      *reinterpret_cast<unsigned int*>(&v) = __ldcg(reinterpret_cast<const unsigned int*>(p));
    else if constexpr (sizeof(T) == 2)
      *reinterpret_cast<unsigned short*>(&v) = __ldcg(reinterpret_cast<const unsigned short*>(p));
    else
      *reinterpret_cast<unsigned char*>(&v) = __ldcg(reinterpret_cast<const unsigned char*>(p));
    const A a = to_acc<T, A>(v);
    acc = k == 0 ? a : combine<Op, A>(acc, a);
  }
  return from_acc<T, A>(finish<Op, A, T>(acc, n));
}

/// Element i reduced over the members in order, read through L2 from each member's `src`.
template <gicl_redop_t Op, typename T>
__device__ __forceinline__ T reduce_element(const DeviceComm& c, const Members& m, const T* src,
                                            size_t i) {
  return reduce_loaded<Op, T>(m.size(), [&](int k) { return peer_ptr(c, src, m.rank(k)) + i; });
}

/// Packs [lo, lo + len) of `src` (16 bytes each) reduced over the members in order, each handed
/// to `store(pack index, pack)`; thread r of the scope's `threads`. The same arithmetic as
/// reduce_element, element for element, so results do not depend on the path. Each thread keeps
/// kUnroll packs' loads in flight per member: element-wise loads left the peers' latency exposed.
template <gicl_redop_t Op, typename T, typename Store>
__device__ __forceinline__ void reduce_packs(const DeviceComm& c, const Members& m, const T* src,
                                             size_t lo, size_t len, int r, int threads,
                                             Store store) {
  constexpr int kPack = 16 / sizeof(T), kUnroll = 4;
  using A = AccOf<T>;
  const int n = m.size();
  const size_t stride = static_cast<size_t>(threads);
  for (size_t base = r; base < len; base += stride * kUnroll) {
    A acc[kUnroll][kPack];
    for (int k = 0; k < n; ++k) {
      const uint4* from = reinterpret_cast<const uint4*>(peer_ptr(c, src, m.rank(k))) + lo;
      uint4 raw[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const size_t q = base + u * stride;
        raw[u] = q < len ? __ldcg(from + q) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const T* v = reinterpret_cast<const T*>(&raw[u]);
#pragma unroll
        for (int e = 0; e < kPack; ++e) {
          const A a = to_acc<T, A>(v[e]);
          acc[u][e] = k == 0 ? a : combine<Op, A>(acc[u][e], a);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t q = base + u * stride;
      if (q >= len) break;
      uint4 out;
      T* o = reinterpret_cast<T*>(&out);
#pragma unroll
      for (int e = 0; e < kPack; ++e) o[e] = from_acc<T, A>(finish<Op, A, T>(acc[u][e], n));
      store(lo + q, out);
    }
  }
}

/// Below this many bytes, where no thread of the scope has more than two elements to reduce, the
/// reductions go element by element: small allreduces measured faster so at block and warp scope
/// (one H100, two ranks under MPS), and packs won from 2 KiB. Each element a thread reduces is a
/// round trip to every member, so one thread alone (thread scope) packs from 16 bytes.
constexpr size_t kPackedFrom = 2048;

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

/// Completion::kLocal's one round: this member's puts are performed (the fence orders them before
/// its arrivals), it counts one arrival at every other member when `send`, and waits for one from
/// every other member, or only from member `from` when from >= 0. The counters are the barrier's
/// (one per sender), so these rounds and barriers may follow each other in any order that all
/// members share.
template <Scope S>
__device__ bool arrivals(const DeviceComm& c, const Members& m, int me, bool send, int from) {
  const int n = m.size();
  if (n > 1) fence_system();
  scope_sync<S>();
  bool ok = true;
  if (scope_leader<S>()) {
    // The members' puts to network peers returned complete at the target: the arrivals follow.
    for (int k = 1; k < n && send && ok; ++k) ok = arrive(c, m.rank((me + k) % n), GICL_OP_SYNC);
    for (int k = 1; k < n && ok; ++k) {
      const int j = (me + k) % n;
      if (from >= 0 && j != from) continue;
      const int r = m.rank(j);
      const uint64_t expected = ++c.sync_expected[r];
      ok = wait(reporter(c), GICL_OP_SYNC, arrival_word(c, r), Cmp::kAtLeast, expected, r,
                static_cast<uint64_t*>(nullptr));
    }
  }
  return scope_broadcast<S>(ok);
}

template <Scope S, Completion C, typename T>
__device__ bool broadcast_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                               size_t count, int root) {
  const Members m{t, c.nranks};
  if constexpr (C == Completion::kLocal) {
    // The root pushes to every member and counts an arrival at each; the others wait for it.
    const int me = t ? t->my_index : c.rank, n = m.size();
    if (me == root)
      for (int k = 0; k < n; ++k) put<S>(c, dst, src, count, m.rank((me + k) % n));
    return arrivals<S>(c, m, me, me == root, root);
  }
  if (!team_barrier<S>(c, t)) return false;
  // Every member pulls from the root: the root's outgoing links carry the data once per member.
  get<S>(c, dst, src, count, m.rank(root));
  return team_barrier<S>(c, t);
}

template <Scope S, Completion C, typename T>
__device__ bool fcollect_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                              size_t count) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (C == Completion::kAll && !team_barrier<S>(c, t)) return false;
  for (int k = 0; k < n; ++k) {
    const int j = (me + k) % n;  // start with the next member: spread the traffic
    put<S>(c, dst + static_cast<size_t>(me) * count, src, count, m.rank(j));
  }
  if constexpr (C == Completion::kLocal) return arrivals<S>(c, m, me, true, -1);
  return team_barrier<S>(c, t);
}

template <Scope S, Completion C, typename T>
__device__ bool alltoall_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                              size_t count) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (C == Completion::kAll && !team_barrier<S>(c, t)) return false;
  for (int k = 0; k < n; ++k) {
    const int j = (me + k) % n;
    put<S>(c, dst + static_cast<size_t>(me) * count, src + static_cast<size_t>(j) * count, count,
           m.rank(j));
  }
  if constexpr (C == Completion::kLocal) return arrivals<S>(c, m, me, true, -1);
  return team_barrier<S>(c, t);
}

/// kAll: every member reduces its share and stores it to every member (allreduce, two-shot);
/// kScatter: member i reduces block i into its own dst (reduce-scatter); kRoot: the root reduces
/// everything into its dst (reduce).
enum class ReduceShape { kAll, kScatter, kRoot };

/// reduce_impl where a member is on the network path: in pieces of the collective scratch's
/// share per member, every member puts its piece into its slot of the scratch of each member
/// that reduces it (every member for kAll, member i for block i with kScatter, the root for
/// kRoot), one round of arrivals, then each reducing member reduces the slots in member order
/// (reduce_loaded: the same arithmetic as the NVLink path, so the results are bitwise equal) into
/// its dst; a barrier before the next piece reuses the scratch. In place is safe: a piece of
/// `src` is in every scratch before that piece of `dst` is written.
template <gicl_redop_t Op, ReduceShape Shape, Scope S, typename T>
__device__ bool reduce_staged(const DeviceComm& c, const DeviceTeam* t, const Members& m, int me,
                              T* dst, const T* src, size_t count, int root) {
  const int n = m.size();
  const size_t per = c.coll_scratch_bytes / n / 16 * 16 / sizeof(T);  // elements per slot
  if (c.coll_scratch == nullptr || per == 0) {
    if (scope_leader<S>())
      report(reporter(c), GICL_DEVICE_ERROR_NO_TRANSPORT, GICL_OP_COLLECTIVE, -1, dst,
             c.coll_scratch_bytes, 0, 0);
    return false;
  }
  T* scratch = static_cast<T*>(c.coll_scratch);
  const int r = scope_rank<S>(), threads = scope_size<S>();
  // Before the first piece too: a member of another team's reduction may still read its scratch.
  for (size_t off = 0; off < count; off += per) {
    const size_t len = count - off < per ? count - off : per;
    if (!team_barrier<S>(c, t)) return false;  // every member read the last piece
    for (int k = 0; k < n; ++k) {
      const int j = (me + k) % n;  // start with the next member: spread the traffic
      if (Shape == ReduceShape::kRoot && j != root) continue;
      const T* piece =
          (Shape == ReduceShape::kScatter ? src + static_cast<size_t>(j) * count : src) + off;
      put<S>(c, scratch + static_cast<size_t>(me) * per, piece, len, m.rank(j));
    }
    if (!arrivals<S>(c, m, me, true, -1)) return false;
    if (Shape != ReduceShape::kRoot || me == root)
      for (size_t i = r; i < len; i += threads)
        dst[off + i] = reduce_loaded<Op, T>(n, [&](int k) { return scratch + k * per + i; });
  }
  return team_barrier<S>(c, t);
}

template <gicl_redop_t Op, ReduceShape Shape, Scope S, typename T>
__device__ bool reduce_impl(const DeviceComm& c, const DeviceTeam* t, T* dst, const T* src,
                            size_t count, int root) {
  const Members m{t, c.nranks};
  const int me = t ? t->my_index : c.rank, n = m.size();
  if (any_network(c, m)) return reduce_staged<Op, Shape, S>(c, t, m, me, dst, src, count, root);
  if (!team_barrier<S>(c, t)) return false;
  const int r = scope_rank<S>(), threads = scope_size<S>();
  constexpr size_t kPack = 16 / sizeof(T);
  // 16-byte packs where every member's buffers are aligned to them (the heap places a buffer at
  // the same offset on every member, so this member's alignment is everyone's), except for small
  // buffers that no thread of the scope reduces more than two elements of (kPackedFrom).
  const T* block = Shape == ReduceShape::kScatter ? src + static_cast<size_t>(me) * count : src;
  const size_t spread = static_cast<size_t>(threads) * (Shape == ReduceShape::kAll ? n : 1);
  const bool small = count * sizeof(T) < kPackedFrom && count <= 2 * spread;
  const bool packed = !small && aligned16(block) && aligned16(dst);
  if constexpr (Shape == ReduceShape::kAll) {
    // Member me owns a contiguous share of packs (or elements) and stores its reduction to every
    // member. In place is safe: each element is read from every member and then written to
    // every member by the same thread of its one owner.
    const size_t units = packed ? count / kPack : count;
    const size_t base = units / n, extra = units % n;
    const size_t lo = me * base + (static_cast<size_t>(me) < extra ? me : extra);
    const size_t len = base + (static_cast<size_t>(me) < extra ? 1 : 0);
    if (packed) {
      reduce_packs<Op>(c, m, src, lo, len, r, threads, [&](size_t p, uint4 v) {
        for (int k = 0; k < n; ++k) reinterpret_cast<uint4*>(peer_ptr(c, dst, m.rank(k)))[p] = v;
      });
    } else {
      for (size_t i = lo + r; i < lo + len; i += threads) {
        const T v = reduce_element<Op>(c, m, src, i);
        for (int k = 0; k < n; ++k) peer_ptr(c, dst, m.rank(k))[i] = v;
      }
    }
    // The elements after the last whole pack belong to the last member.
    if (packed && me == n - 1)
      for (size_t i = count / kPack * kPack + r; i < count; i += threads) {
        const T v = reduce_element<Op>(c, m, src, i);
        for (int k = 0; k < n; ++k) peer_ptr(c, dst, m.rank(k))[i] = v;
      }
  } else if (Shape == ReduceShape::kScatter || me == root) {
    // Reduce-scatter: this member's block into its dst; reduce: the root's whole buffer.
    size_t done = 0;
    if (packed) {
      reduce_packs<Op>(c, m, block, 0, count / kPack, r, threads,
                       [&](size_t p, uint4 v) { reinterpret_cast<uint4*>(dst)[p] = v; });
      done = count / kPack * kPack;
    }
    for (size_t i = done + r; i < count; i += threads) dst[i] = reduce_element<Op>(c, m, block, i);
  }
  return team_barrier<S>(c, t);
}

}  // namespace detail
