// SPDX-License-Identifier: Apache-2.0
// What this library was built with, for gicl-info and the version banner (GICL_DEBUG=VERSION or
// INFO), so a log or a bug report says which build produced it.
#pragma once

#include <string>

namespace gicl {

/// "CUDA archs 90, hwloc on, libfabric on, verbs on, MPI on".
std::string build_options();
/// "gicl 0.1.0 (CUDA archs 90, ...); CUDA runtime 13.0 (built with 13.0), driver 13.0".
std::string version_banner();
/// Logs the banner once per process, at GICL_DEBUG=VERSION and from INFO up (as NCCL prints its
/// version at communicator creation).
void log_banner_once();

}  // namespace gicl
