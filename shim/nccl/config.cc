// SPDX-License-Identifier: Apache-2.0
#include "shim/nccl/config.hpp"

#include <cstdio>
#include <cstring>

namespace gicl::nccl {
namespace {

/// The smallest struct accepted: NCCL 2.27's, which ends with nvlsCTAs.
constexpr size_t kOldest = offsetof(ncclConfig_t, nChannelsPerNetPeer);

bool set(int v) {
  return v != NCCL_CONFIG_UNDEF_INT;
}

}  // namespace

ncclResult_t read_config(const ncclConfig_t* config, CommConfig* out, std::string* why) {
  *out = CommConfig{};
  if (config == nullptr) return ncclSuccess;
  size_t size = 0;
  std::memcpy(&size, config, sizeof(size));
  if (size < kOldest) {
    *why = "config->size is " + std::to_string(size) + ": not an ncclConfig_t of NCCL 2.27 or " +
           "later (at least " + std::to_string(kOldest) +
           " bytes; initialize it with NCCL_CONFIG_INITIALIZER)";
    return ncclInvalidArgument;
  }
  // The fields this ABI knows, as far as the caller's struct reaches; the rest stay unset.
  ncclConfig_t c;
  std::memset(&c, 0, sizeof(c));
  c.nChannelsPerNetPeer = NCCL_CONFIG_UNDEF_INT;
  c.nvlinkCentricSched = NCCL_CONFIG_UNDEF_INT;
  std::memcpy(&c, config, size < sizeof(c) ? size : sizeof(c));
  if (c.magic != NCCL_API_MAGIC) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%x", c.magic);
    *why = std::string("config->magic is ") + hex +
           ", not NCCL_API_MAGIC: initialize the config with NCCL_CONFIG_INITIALIZER";
    return ncclInvalidArgument;
  }
  out->caller_bytes = size;
  out->caller_version = c.version;
  if (set(c.blocking)) {
    if (c.blocking != 0 && c.blocking != 1) {
      *why = "config->blocking is " + std::to_string(c.blocking) + ": 0 or 1";
      return ncclInvalidArgument;
    }
    out->blocking = c.blocking == 1;
  }
  const struct {
    int value;
    int* to;
    const char* name;
  } counts[] = {{c.minCTAs, &out->min_ctas, "minCTAs"},
                {c.maxCTAs, &out->max_ctas, "maxCTAs"},
                {c.cgaClusterSize, &out->cga_cluster_size, "cgaClusterSize"}};
  for (const auto& k : counts) {
    if (!set(k.value)) continue;
    if (k.value < 0) {
      *why = std::string("config->") + k.name + " is " + std::to_string(k.value) +
             ": a count (>= 0) or NCCL_CONFIG_UNDEF_INT";
      return ncclInvalidArgument;
    }
    *k.to = k.value;
  }
  if (out->min_ctas > 0 && out->max_ctas > 0 && out->min_ctas > out->max_ctas) {
    *why = "config->minCTAs (" + std::to_string(out->min_ctas) + ") exceeds config->maxCTAs (" +
           std::to_string(out->max_ctas) + ")";
    return ncclInvalidArgument;
  }
  if (c.commName != nullptr) out->comm_name = c.commName;
  if (c.netName != nullptr) out->net_name = c.netName;
  if (set(c.splitShare)) out->split_share = c.splitShare != 0;
  return ncclSuccess;
}

}  // namespace gicl::nccl
