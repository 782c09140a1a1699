// SPDX-License-Identifier: Apache-2.0
#include "shim/nccl/env.hpp"

#include <strings.h>

namespace gicl::nccl {
namespace {

/// `v`'s gicl spelling among `pairs` (NCCL's name, gicl's), case-insensitive; empty: none.
std::string lookup(const char* v,
                   std::initializer_list<std::pair<const char*, const char*>> pairs) {
  for (const auto& [nccl, gicl] : pairs)
    if (strcasecmp(v, nccl) == 0) return gicl;
  return "";
}

}  // namespace

std::vector<EnvMapping> nccl_env_to_gicl(const std::function<const char*(const char*)>& get,
                                         std::vector<std::string>* ignored) {
  std::vector<EnvMapping> out;
  auto map = [&](const char* from, const char* to, const std::string& value) {
    const char* v = get(from);
    if (v == nullptr || *v == '\0') return;
    const char* mine = get(to);
    if (mine != nullptr && *mine != '\0') return;  // the user's GICL_* wins
    if (value.empty()) {
      ignored->push_back(std::string(from) + "=" + v + ": no gicl meaning, ignored");
      return;
    }
    out.push_back({to, value});
  };
  auto value_of = [&](const char* from) -> const char* {
    const char* v = get(from);
    return v != nullptr ? v : "";
  };
  map("NCCL_DEBUG", "GICL_DEBUG",
      lookup(value_of("NCCL_DEBUG"),
             {{"VERSION", "VERSION"}, {"WARN", "WARN"}, {"INFO", "INFO"}, {"TRACE", "TRACE"}}));
  if (const char* v = get("NCCL_SOCKET_IFNAME")) map("NCCL_SOCKET_IFNAME", "GICL_SOCKET_IFNAME", v);
  map("NCCL_PROTO", "GICL_PROTO",
      lookup(value_of("NCCL_PROTO"), {{"LL", "LL"}, {"LL128", "LL128"}, {"Simple", "SIMPLE"}}));
  map("NCCL_ALGO", "GICL_ALGO", lookup(value_of("NCCL_ALGO"), {{"Ring", "ring"}}));
  return out;
}

}  // namespace gicl::nccl
