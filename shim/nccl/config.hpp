// SPDX-License-Identifier: Apache-2.0
// A caller's ncclConfig_t read into what gicl acts on. The caller's struct may come from any
// NCCL header from 2.27 on: its `size` (read first) says how many bytes it holds; the fields this
// ABI knows are copied as far as the caller's struct reaches, a larger struct's tail is ignored,
// and every field left unset (NCCL_CONFIG_UNDEF_INT / NULL, or beyond the caller's size) takes
// NCCL's default.
#pragma once

#include <string>

#include "shim/nccl/nccl_abi.h"

namespace gicl::nccl {

struct CommConfig {
  bool blocking = true;      // 0: init, split and collectives may return ncclInProgress
  int min_ctas = 0;          // 0: unset
  int max_ctas = 0;          // 0: unset
  int cga_cluster_size = 0;  // 0: unset
  std::string comm_name;     // empty: unset
  std::string net_name;      // empty: unset
  bool split_share = false;  // resources shared with the parent on split
  size_t caller_bytes = 0;   // the caller's `size`
  unsigned int caller_version = 0;
};

/// Reads `config` (NULL: every default) into `*out`. ncclInvalidArgument with `*why` naming the
/// field where the struct is not an initialized ncclConfig_t (size, magic) or a value is out of
/// range.
ncclResult_t read_config(const ncclConfig_t* config, CommConfig* out, std::string* why);

}  // namespace gicl::nccl
