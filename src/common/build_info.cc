// SPDX-License-Identifier: Apache-2.0
#include "common/build_info.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <mutex>

#include "common/log.hpp"
#include "common/shared_library.hpp"
#include "gicl/version.h"

// The build's options come from CMake (src/CMakeLists.txt) as definitions on this file alone.
#ifndef GICL_BUILD_CUDA_ARCHS
#error "GICL_BUILD_CUDA_ARCHS is set by src/CMakeLists.txt"
#endif

namespace gicl {
namespace {

const char* on(int flag) {
  return flag ? "on" : "off";
}

std::string cuda_version(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

std::string build_options() {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "CUDA archs %s, hwloc %s, libfabric %s, verbs %s, MPI %s",
                GICL_BUILD_CUDA_ARCHS, on(GICL_BUILD_HWLOC), on(GICL_BUILD_OFI),
                on(GICL_BUILD_VERBS), on(GICL_BUILD_MPI));
  return buf;
}

/// The driver's version from libcuda itself, 0 without one. cuDriverGetVersion answers before
/// cuInit, where the runtime's cudaDriverGetVersion starts CUDA in this process; a process that
/// has started CUDA cannot hand it to the ranks it forks (CUDA fails in them with "initialization
/// error"), so logging the banner must not start it.
int driver_version() {
  static SharedLibrary lib("libcuda.so.1", "the NVIDIA driver is not installed");
  int (*get)(int*) = nullptr;
  int v = 0;
  if (!lib.loaded() || !lib.sym("cuDriverGetVersion", &get) || get(&v) != 0) return 0;
  return v;
}

std::string version_banner() {
  // Neither query starts CUDA: the static runtime answers its own version.
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  const int driver = driver_version();
  char buf[512];
  std::snprintf(buf, sizeof(buf), "gicl %d.%d.%d (%s); CUDA runtime %s (built with %s), driver %s",
                GICL_MAJOR, GICL_MINOR, GICL_PATCH, build_options().c_str(),
                cuda_version(runtime).c_str(), cuda_version(CUDART_VERSION).c_str(),
                cuda_version(driver).c_str());
  return buf;
}

void log_banner_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (log_enabled(LogLevel::kVersion, kSubsysInit))
      log_message(LogLevel::kVersion, kSubsysInit, __FILE__, __LINE__, "%s",
                  version_banner().c_str());
  });
}

}  // namespace gicl
