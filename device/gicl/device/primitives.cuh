// SPDX-License-Identifier: Apache-2.0
// Execution scopes and memory-ordering primitives. Every ordering point of the device API goes
// through one of these named functions; each comment says which writer and which reader it orders.
#pragma once

#include <cstdint>

#include "gicl/device_abi.h"

namespace gicl::dev {

/// Who calls an operation together: one thread, a whole warp, or a whole block.
enum class Scope { kThread, kWarp, kBlock };

#include "gicl/device/detail/primitives.cuh"
}  // namespace gicl::dev
