// SPDX-License-Identifier: Apache-2.0
#include "common/kernel_families.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "common/cuda.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"

namespace gicl {
namespace {

struct Registry {
  std::mutex m;
  std::vector<std::pair<const char*, KernelLoader>> families;
  std::set<uint64_t> loaded;  // contexts (context_id) that have every family
  size_t most_local = 0;      // written by the loaders, which run under m
};

// Constructed on first use: the families register during static initialisation, in any order.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void note_kernel_local_bytes(size_t bytes) {
  size_t& most = registry().most_local;
  most = std::max(most, bytes);
}

KernelFamily::KernelFamily(const char* name, KernelLoader load) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.families.emplace_back(name, load);
}

Status load_kernel_families(int device) {
  int64_t preload = 1;
  GICL_CHECK(setting_int(Setting::kPreloadKernels, &preload));
  if (preload == 0 || device < 0) return GICL_SUCCESS;
  uint64_t ctx = 0;
  GICL_CHECK(context_id(device, &ctx));
  Registry& r = registry();
  // Held while loading: a second rank of this process on the device waits for the first.
  std::lock_guard<std::mutex> lock(r.m);
  if (r.loaded.count(ctx) != 0) return GICL_SUCCESS;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [name, load] : r.families) {
    const cudaError_t e = load();
    if (e != cudaSuccess) {
      cudaGetLastError();
      return GICL_FAIL(GICL_UNHANDLED_CUDA_ERROR,
                       "loading the library's %s kernels on device %d: %s (%s)", name, device,
                       cudaGetErrorName(e), cudaGetErrorString(e));
    }
  }
  r.loaded.insert(ctx);
  GICL_INFO(
      kSubsysInit,
      "device %d: %zu kernel families loaded in %.1f ms (at most %zu bytes of local memory "
      "a thread)",
      device, r.families.size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      r.most_local);
  return GICL_SUCCESS;
}

}  // namespace gicl
