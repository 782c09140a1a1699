// SPDX-License-Identifier: Apache-2.0
// A unique id's bytes as gicl_comm_init_rank decodes them: any 128 bytes are either refused with
// a message or give a version and root address that check.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "fuzz/fuzz_common.hpp"
#include "gicl/gicl.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz_quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gicl_unique_id_t id{};
  std::memcpy(id.internal, data, size < sizeof(id.internal) ? size : sizeof(id.internal));
  gicl::bootstrap::UniqueIdData d;
  // Shorter inputs also go in as they are: a short buffer is refused without being read past.
  const gicl::Status s = gicl::bootstrap::decode_unique_id(data, size, &d);
  if (s.ok() && size < sizeof(d)) __builtin_trap();
  const gicl::Status t = gicl::bootstrap::decode_unique_id(id.internal, sizeof(id.internal), &d);
  if (t.ok()) {
    gicl::SockAddr root;
    if (d.version != gicl::bootstrap::kWireVersion || !gicl::bootstrap::from_wire(d.root, &root))
      __builtin_trap();
  }
  return 0;
}
