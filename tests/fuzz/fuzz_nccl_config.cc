// SPDX-License-Identifier: Apache-2.0
// The NCCL library's ncclConfig_t reader on arbitrary bytes (the caller's struct, whatever its
// `size` says): refused naming a field, or read into values within NCCL's ranges. The name
// fields are pointers the caller owns, so the harness makes them NULL or a string of the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "shim/nccl/config.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz_quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The caller's struct: its size field clamped to what the input holds, as a real caller's
  // describes its own struct; at least ncclConfig_t's bytes, zero beyond the input.
  if (size < sizeof(size_t)) return 0;
  std::vector<uint8_t> buf(data, data + size);
  size_t claimed;
  std::memcpy(&claimed, buf.data(), sizeof(claimed));
  if (claimed > buf.size()) claimed = buf.size();
  std::memcpy(buf.data(), &claimed, sizeof(claimed));
  if (buf.size() < sizeof(ncclConfig_t)) buf.resize(sizeof(ncclConfig_t), 0);
  const std::string name(reinterpret_cast<const char*>(data), size);  // NUL-terminated copy
  auto* c = reinterpret_cast<ncclConfig_t*>(buf.data());
  c->commName = data[size - 1] % 2 ? name.c_str() : nullptr;
  c->netName = data[size - 1] % 3 ? nullptr : name.c_str();
  gicl::nccl::CommConfig out;
  std::string why;
  const ncclResult_t r = gicl::nccl::read_config(c, &out, &why);
  if (r != ncclSuccess && why.empty()) __builtin_trap();  // a refusal says why
  if (r == ncclSuccess && (out.min_ctas < 0 || out.max_ctas < 0)) __builtin_trap();
  return 0;
}
