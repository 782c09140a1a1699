// SPDX-License-Identifier: Apache-2.0
// Names of collectives and algorithms (logs, GICL_CHECK_MODE reports, the simulator).
#pragma once

#include "collectives/schedule/step.hpp"

namespace gicl::coll {

const char* collective_name(Collective c);
const char* algorithm_name(Algorithm a);

}  // namespace gicl::coll
