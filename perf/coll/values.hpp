// SPDX-License-Identifier: Apache-2.0
// What the benchmarks write and expect: every rank's input elements and each collective's
// expected output, stored in the benchmark's type the way the library converts, so that the
// #wrong column compares bytes. Each collective's expected values are its *_perf.cu's.
#pragma once

#include <cstddef>

#include "gicl/gicl.h"

namespace perf {

bool is_unsigned(gicl_datatype_t d);

/// Input element i of rank q: small integers, exact in every type (unsigned: 0 or 1).
inline double input_value(int q, size_t i, bool is_unsigned) {
  return is_unsigned ? static_cast<double>((q + i) % 2)
                     : static_cast<double>(static_cast<int>((q + i) % 3) - 1);
}

/// Element i of the inputs of ranks 0..n-1 reduced with `op` (avg: the sum divided by n), the
/// expected value of a reduction's element i.
double reduce_inputs(int n, size_t i, gicl_redop_t op, bool is_unsigned);

/// Writes v as element i of a `d` array, converting like the library does (through fp32 for the
/// low-precision floats).
void store_as(gicl_datatype_t d, double v, void* base, size_t i);

}  // namespace perf
