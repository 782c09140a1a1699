// SPDX-License-Identifier: Apache-2.0
// Host reference of every collective for the GPU tests: inputs per rank and the expected output
// of one rank, reductions in the canonical order (rank 0..n-1, accumulation type, one rounding).
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "collectives/common/dtypes.cuh"
#include "collectives/schedule/step.hpp"

namespace gicl::test {

using coll::Collective;
using coll::DType;

/// Elements of send and recv of one call (NCCL's count conventions).
inline void coll_elems(Collective c, size_t count, int n, size_t* send, size_t* recv) {
  switch (c) {
    case Collective::kReduceScatter:
      *send = count * n, *recv = count;
      break;
    case Collective::kAllGather:
      *send = count, *recv = count * n;
      break;
    case Collective::kAllToAll:
      *send = *recv = count * n;
      break;
    default:
      *send = *recv = count;
  }
}

inline bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

/// Inputs of rank r. `exact`: values whose partial results are exact in every type and order
/// (so non-canonical algorithms match the reference bitwise); otherwise random floats or bits.
template <gicl_datatype_t D>
std::vector<typename DType<D>::Storage> make_input(uint32_t seed, int r, size_t count,
                                                   gicl_redop_t op, bool exact) {
  using T = typename DType<D>::Storage;
  using A = typename DType<D>::Acc;
  std::mt19937_64 rng(seed * 7919ull + static_cast<uint64_t>(r) * 104729ull + 1);
  std::vector<T> v(count);
  const bool is_unsigned = D == gicl_uint8 || D == gicl_uint32 || D == gicl_uint64;
  for (auto& x : v) {
    if (!exact) {
      if constexpr (std::is_floating_point_v<A>) {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        x = coll::from_acc<T, A>(static_cast<A>(u(rng)));
      } else {
        const uint64_t bits = rng();
        std::memcpy(&x, &bits, sizeof(T));
      }
      continue;
    }
    const int k = static_cast<int>(rng() % 3);
    int val;
    if (op == gicl_sum)
      val = is_unsigned ? k % 2 : k - 1;  // |partial| <= n: exact even in fp8
    else if (op == gicl_prod)
      val = is_unsigned ? 1 + k % 2 : (k == 0 ? -1 : k);  // +-powers of two
    else
      val = is_unsigned ? static_cast<int>(rng() % 4) : static_cast<int>(rng() % 7) - 3;
    x = coll::from_acc<T, A>(static_cast<A>(val));
  }
  return v;
}

/// Expected output of rank `me` (recv elements), given every rank's input.
template <gicl_datatype_t D>
std::vector<typename DType<D>::Storage> reference(
    Collective c, gicl_redop_t op, int root, int me, int n, size_t count,
    const std::vector<std::vector<typename DType<D>::Storage>>& in) {
  using T = typename DType<D>::Storage;
  size_t se, re;
  coll_elems(c, count, n, &se, &re);
  std::vector<T> out(re);
  std::vector<const T*> p(n);
  auto red = [&](size_t base, size_t i) {
    for (int r = 0; r < n; ++r) p[r] = in[r].data() + base;
    switch (op) {
      case gicl_sum:
        return coll::reduce_canonical<D, gicl_sum>(p.data(), n, i);
      case gicl_prod:
        return coll::reduce_canonical<D, gicl_prod>(p.data(), n, i);
      case gicl_min:
        return coll::reduce_canonical<D, gicl_min>(p.data(), n, i);
      case gicl_max:
        return coll::reduce_canonical<D, gicl_max>(p.data(), n, i);
      default:
        return coll::reduce_canonical<D, gicl_avg>(p.data(), n, i);
    }
  };
  for (size_t i = 0; i < count; ++i) {
    switch (c) {
      case Collective::kAllReduce:
      case Collective::kReduce:
        out[i] = red(0, i);
        break;
      case Collective::kReduceScatter:
        out[i] = red(me * count, i);
        break;
      case Collective::kAllGather:
        for (int j = 0; j < n; ++j) out[j * count + i] = in[j][i];
        break;
      case Collective::kBroadcast:
        out[i] = in[root][i];
        break;
      case Collective::kAllToAll:
        for (int j = 0; j < n; ++j) out[j * count + i] = in[j][me * count + i];
        break;
    }
  }
  return out;
}

}  // namespace gicl::test
