// SPDX-License-Identifier: Apache-2.0
// "0,3,5" lists for error messages that name ranks.
#pragma once

#include <string>
#include <vector>

namespace gicl {

/// Joins up to `limit` ranks with commas, then ",..." if there are more.
inline std::string rank_list(const std::vector<int>& ranks, size_t limit = 32) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < limit; ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(ranks[i]));
  }
  if (ranks.size() > limit) s.append(",...");
  return s;
}

}  // namespace gicl
