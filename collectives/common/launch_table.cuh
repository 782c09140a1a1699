// SPDX-License-Identifier: Apache-2.0
// The one instantiation table of the collective kernels: every type x every reduction of a
// kernel template, generated from GICL_FOR_EACH_DTYPE / GICL_FOR_EACH_REDOP and indexed by the
// public enums at run time.
#pragma once

#include <algorithm>
#include <type_traits>

#include <cuda_runtime.h>

#include "collectives/common/dtypes.cuh"
#include "common/kernel_families.hpp"

namespace gicl::coll {

/// The lists must run in enum order: the table is indexed by the enum values.
constexpr bool lists_in_enum_order() {
  int i = 0, j = 0;
  bool ok = true;
#define GICL_CHECK_DTYPE(e, T, A, name) ok = ok && static_cast<int>(e) == i++;
  GICL_FOR_EACH_DTYPE(GICL_CHECK_DTYPE)
#undef GICL_CHECK_DTYPE
#define GICL_CHECK_REDOP(op, name) ok = ok && static_cast<int>(op) == j++;
  GICL_FOR_EACH_REDOP(GICL_CHECK_REDOP)
#undef GICL_CHECK_REDOP
  return ok && i == gicl_num_datatypes && j == gicl_num_redops;
}
static_assert(lists_in_enum_order(), "GICL_FOR_EACH_DTYPE / GICL_FOR_EACH_REDOP out of enum order");

/// K<D, Op>::kernel is the (D, Op) instance of one kernel family.
template <template <gicl_datatype_t, gicl_redop_t> class K>
using KernelOf = std::remove_const_t<decltype(K<gicl_float32, gicl_sum>::kernel)>;

template <template <gicl_datatype_t, gicl_redop_t> class K, gicl_datatype_t D>
struct KernelRow {
#define GICL_OP_ENTRY(op, name) K<D, op>::kernel,
  static constexpr KernelOf<K> kOps[gicl_num_redops] = {GICL_FOR_EACH_REDOP(GICL_OP_ENTRY)};
#undef GICL_OP_ENTRY
};

/// The kernel of (d, op): every pair instantiated, one table per kernel family.
template <template <gicl_datatype_t, gicl_redop_t> class K>
KernelOf<K> kernel_of(gicl_datatype_t d, gicl_redop_t op) {
#define GICL_ROW(e, T, A, name) KernelRow<K, e>::kOps,
  static constexpr const KernelOf<K>* kRows[gicl_num_datatypes] = {GICL_FOR_EACH_DTYPE(GICL_ROW)};
#undef GICL_ROW
  return kRows[d][op];
}

/// The instance a collective runs in a family whose kernels move bytes unchanged unless they
/// reduce: collectives that only move bytes share (uint8, sum).
template <template <gicl_datatype_t, gicl_redop_t> class K>
KernelOf<K> byte_kernel_of(bool reduces, gicl_datatype_t d, gicl_redop_t op) {
  return reduces ? kernel_of<K>(d, op) : kernel_of<K>(gicl_uint8, gicl_sum);
}

/// Lowers *out to the blocks of `threads` threads one multiprocessor holds at once of `kernel`.
template <typename... Params>
cudaError_t fewest_blocks_per_sm(void (*kernel)(Params...), int threads, int* out) {
  int b = 0;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, threads, 0);
  if (e == cudaSuccess) *out = std::min(*out, b);
  return e;
}

/// Calls fn on every (type, op) instance of a family; the first error ends it.
template <template <gicl_datatype_t, gicl_redop_t> class K, typename Fn>
cudaError_t for_each_instance(Fn fn) {
  for (int d = 0; d < gicl_num_datatypes; ++d)
    for (int op = 0; op < gicl_num_redops; ++op)
      if (const cudaError_t e =
              fn(kernel_of<K>(static_cast<gicl_datatype_t>(d), static_cast<gicl_redop_t>(op)));
          e != cudaSuccess)
        return e;
  return cudaSuccess;
}

/// Lowers *out to the fewest blocks of `threads` threads one multiprocessor holds at once of any
/// (type, op) instance of a family (the co-residency limit's unit: collectives/host/residency.cc).
template <template <gicl_datatype_t, gicl_redop_t> class K>
cudaError_t fewest_blocks_per_sm(int threads, int* out) {
  return for_each_instance<K>([&](auto k) { return fewest_blocks_per_sm(k, threads, out); });
}

/// Loads every (type, op) instance of a family (common/kernel_families.hpp says why).
template <template <gicl_datatype_t, gicl_redop_t> class K>
cudaError_t load_family() {
  return for_each_instance<K>([](auto k) { return load_kernel(k); });
}

}  // namespace gicl::coll
