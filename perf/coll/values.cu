// SPDX-License-Identifier: Apache-2.0
#include "values.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>

namespace perf {

double reduce_inputs(int n, size_t i, gicl_redop_t op, bool uns) {
  double acc = input_value(0, i, uns);
  for (int q = 1; q < n; ++q) {
    const double v = input_value(q, i, uns);
    if (op == gicl_sum || op == gicl_avg)
      acc += v;
    else if (op == gicl_prod)
      acc *= v;
    else if (op == gicl_min)
      acc = v < acc ? v : acc;
    else
      acc = v > acc ? v : acc;
  }
  return op == gicl_avg ? acc / n : acc;
}

bool is_unsigned(gicl_datatype_t d) {
  return d == gicl_uint8 || d == gicl_uint32 || d == gicl_uint64;
}

void store_as(gicl_datatype_t d, double v, void* base, size_t i) {
  char* p = static_cast<char*>(base) + i * gicl_datatype_size(d);
  switch (d) {
    case gicl_int8: {
      int8_t x = static_cast<int8_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case gicl_uint8: {
      uint8_t x = static_cast<uint8_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case gicl_int32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case gicl_uint32: {
      uint32_t x = static_cast<uint32_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 4);
      break;
    }
    case gicl_int64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case gicl_uint64: {
      uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 8);
      break;
    }
    case gicl_float16: {
      __half x = __float2half_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case gicl_bfloat16: {
      __nv_bfloat16 x = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(p, &x, 2);
      break;
    }
    case gicl_float32: {
      float x = static_cast<float>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case gicl_float64:
      std::memcpy(p, &v, 8);
      break;
    case gicl_float8_e4m3: {
      __nv_fp8_e4m3 x(static_cast<float>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    case gicl_float8_e5m2: {
      __nv_fp8_e5m2 x(static_cast<float>(v));
      std::memcpy(p, &x, 1);
      break;
    }
    default:
      break;
  }
}

}  // namespace perf
