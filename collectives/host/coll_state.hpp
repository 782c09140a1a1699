// A communicator's collective resources: symmetric staging and flags, and the device epoch.
// Created by the first collective call (collective: it allocates from the heap).
#pragma once

#include "collectives/common/coll_args.h"
#include "common/status.hpp"

struct ccl_comm;

namespace ccl::coll {

struct CollState {
  CollScratch scratch{};
  void* heap_block = nullptr;  // staging + flags, one heap allocation
  void* local = nullptr;       // epoch + finished counter (cudaMalloc)
  ~CollState();
};

/// The communicator's state, created on first use (collective; refuses under graph capture).
Status coll_state(ccl_comm* comm, cudaStream_t stream, CollState** out);

}  // namespace ccl::coll
