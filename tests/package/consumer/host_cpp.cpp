// SPDX-License-Identifier: Apache-2.0
// A C++20 program against the installed package's gicl.hpp: typed collectives (the datatype
// deduced), errors as exceptions. Needs no GPU.
#include <cstdio>
#include <string>
#include <vector>

#include <gicl/gicl.hpp>

static_assert(gicl::datatype_v<float> == gicl_float32 && gicl::datatype_v<__nv_bfloat16> == 9);

int main() {
  try {
    gicl::Communicator none(nullptr);
    std::vector<float> a(4), b(4);
    none.allreduce(std::span<const float>(a), std::span<float>(b), gicl_sum, nullptr);
    std::fprintf(stderr, "no exception for a NULL communicator\n");
    return 1;
  } catch (const gicl::Error& e) {
    if (e.code() != GICL_INVALID_ARGUMENT || std::string(e.what()).find("comm") == std::string::npos) {
      std::fprintf(stderr, "unexpected error: %s\n", e.what());
      return 2;
    }
  }
  std::printf("host_cpp: typed calls checked, errors thrown as gicl::Error\n");
  return 0;
}
