// SPDX-License-Identifier: Apache-2.0
#include "collectives/host/check_mode.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/common/dtypes.cuh"
#include "collectives/host/coll_state.hpp"
#include "collectives/schedule/tables.hpp"
#include "common/rank_list.hpp"
#include "common/settings.hpp"
#include "core/comm.hpp"
#include "core/host_exchange.hpp"

namespace gicl::coll {
namespace {

std::string describe(const CallSignature& s) {
  char buf[160];
  std::snprintf(
      buf, sizeof(buf), "call #%llu %s(count=%llu, %s, %s, root=%d)",
      static_cast<unsigned long long>(s.call), collective_name(static_cast<Collective>(s.coll)),
      static_cast<unsigned long long>(s.count), dtype_name(static_cast<gicl_datatype_t>(s.dtype)),
      s.op < 0 ? "-" : redop_name(static_cast<gicl_redop_t>(s.op)), s.root);
  return buf;
}

}  // namespace

Status check_mode_on(gicl_comm* c, bool* on) {
  CollExt& ext = coll_ext(c);
  if (ext.check_mode < 0) {
    // Read once per communicator: a getenv per call is measurable host overhead.
    int64_t setting = 0;
    GICL_CHECK(setting_int(Setting::kCheckMode, &setting));
    ext.check_mode = setting != 0;
  }
  *on = ext.check_mode != 0;
  return GICL_SUCCESS;
}

Status check_call(gicl_comm* c, CallSignature mine) {
  bool on = false;
  GICL_CHECK(check_mode_on(c, &on));
  if (!on) return GICL_SUCCESS;
  mine.call = ++coll_ext(c).calls;
  std::vector<CallSignature> all(c->nranks);
  all[c->rank] = mine;
  GICL_CHECK(host_allgather(c, all.data(), sizeof(CallSignature)));
  // The call most ranks made is the reference: the odd ranks are the ones named.
  int ref = 0, best = 0;
  for (int r = 0; r < c->nranks; ++r) {
    int same = 0;
    for (int q = 0; q < c->nranks; ++q)
      same += std::memcmp(&all[r], &all[q], sizeof(CallSignature)) == 0;
    if (same > best) best = same, ref = r;
  }
  std::vector<int> differ;
  for (int r = 0; r < c->nranks; ++r)
    if (std::memcmp(&all[r], &all[ref], sizeof(CallSignature)) != 0) differ.push_back(r);
  if (differ.empty()) return GICL_SUCCESS;
  return GICL_FAIL(
      GICL_INVALID_USAGE,
      "GICL_CHECK_MODE: mismatched collective calls: ranks %s differ from rank %d's %s "
      "(rank %d made %s)",
      rank_list(differ).c_str(), ref, describe(all[ref]).c_str(), differ[0],
      describe(all[differ[0]]).c_str());
}

}  // namespace gicl::coll
