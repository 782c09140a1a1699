// SPDX-License-Identifier: Apache-2.0
// The null backend: every operation completes at once and moves no data. It exists to measure
// the GPU queue and the proxy alone (perf/net); nothing selects it through the settings.
#pragma once

#include <memory>

#include "net/transport.hpp"

namespace gicl::net {

Status open_null(const OpenArgs& args, std::unique_ptr<Transport>* out);

}  // namespace gicl::net
