// Names of collectives and algorithms (logs, CCL_CHECK_MODE reports, the simulator).
#pragma once

#include "collectives/schedule/step.hpp"

namespace ccl::coll {

const char* collective_name(Collective c);
const char* algorithm_name(Algorithm a);

}  // namespace ccl::coll
