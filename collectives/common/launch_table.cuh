// The one instantiation table of the collective kernels: every type x every reduction of a
// launcher template, generated from CCL_FOR_EACH_DTYPE / CCL_FOR_EACH_REDOP and indexed by the
// public enums at run time.
#pragma once

#include "collectives/common/dtypes.cuh"

namespace ccl::coll {

/// The lists must run in enum order: the table is indexed by the enum values.
constexpr bool lists_in_enum_order() {
  int i = 0, j = 0;
  bool ok = true;
#define CCL_CHECK_DTYPE(e, T, A, name) ok = ok && static_cast<int>(e) == i++;
  CCL_FOR_EACH_DTYPE(CCL_CHECK_DTYPE)
#undef CCL_CHECK_DTYPE
#define CCL_CHECK_REDOP(op, name) ok = ok && static_cast<int>(op) == j++;
  CCL_FOR_EACH_REDOP(CCL_CHECK_REDOP)
#undef CCL_CHECK_REDOP
  return ok && i == ccl_num_datatypes && j == ccl_num_redops;
}
static_assert(lists_in_enum_order(), "CCL_FOR_EACH_DTYPE / CCL_FOR_EACH_REDOP out of enum order");

/// L<D, Op>::run launches the (D, Op) kernel of one family.
template <template <ccl_datatype_t, ccl_redop_t> class L>
using LaunchOf = decltype(&L<ccl_float32, ccl_sum>::run);

template <template <ccl_datatype_t, ccl_redop_t> class L, ccl_datatype_t D>
struct LaunchRow {
#define CCL_OP_ENTRY(op, name) &L<D, op>::run,
  static constexpr LaunchOf<L> kOps[ccl_num_redops] = {CCL_FOR_EACH_REDOP(CCL_OP_ENTRY)};
#undef CCL_OP_ENTRY
};

/// The launcher of (d, op): every pair instantiated, one table per kernel family.
template <template <ccl_datatype_t, ccl_redop_t> class L>
LaunchOf<L> launcher(ccl_datatype_t d, ccl_redop_t op) {
#define CCL_ROW(e, T, A, name) LaunchRow<L, e>::kOps,
  static constexpr const LaunchOf<L>* kRows[ccl_num_datatypes] = {CCL_FOR_EACH_DTYPE(CCL_ROW)};
#undef CCL_ROW
  return kRows[d][op];
}

}  // namespace ccl::coll
