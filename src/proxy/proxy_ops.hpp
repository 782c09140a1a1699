// SPDX-License-Identifier: Apache-2.0
// Names and classes of the ring's operations, for the proxy's deliveries and messages.
#pragma once

#include <cstdint>

#include "gicl/device/detail/proxy_ring.h"

namespace gicl::proxy {

inline const char* op_name(ProxyOp op) {
  switch (op) {
    case ProxyOp::kPut:
      return "put";
    case ProxyOp::kGet:
      return "get";
    case ProxyOp::kSignalSet:
      return "signal set";
    case ProxyOp::kSignalAdd:
      return "signal add";
    case ProxyOp::kPutSignalSet:
      return "put with signal set";
    case ProxyOp::kPutSignalAdd:
      return "put with signal add";
    case ProxyOp::kFence:
      return "fence";
    case ProxyOp::kFifoSend:
      return "host FIFO message";
    case ProxyOp::kFifoCredit:
      return "host FIFO credit";
    case ProxyOp::kAtomic:
      return "atomic";
    case ProxyOp::kFetch:
      return "fetching atomic";
    default:
      return "nop";
  }
}

inline bool has_transfer(ProxyOp op) {
  return op == ProxyOp::kPut || op == ProxyOp::kGet || op == ProxyOp::kPutSignalSet ||
         op == ProxyOp::kPutSignalAdd;
}
inline bool has_signal(ProxyOp op) {
  return op == ProxyOp::kSignalSet || op == ProxyOp::kSignalAdd || op == ProxyOp::kPutSignalSet ||
         op == ProxyOp::kPutSignalAdd;
}
inline bool signal_adds(ProxyOp op) {
  return op == ProxyOp::kSignalAdd || op == ProxyOp::kPutSignalAdd;
}

inline const char* atomic_name(ProxyAtomic a) {
  switch (a) {
    case ProxyAtomic::kSet:
      return "set";
    case ProxyAtomic::kAdd:
      return "add";
    case ProxyAtomic::kAnd:
      return "and";
    case ProxyAtomic::kOr:
      return "or";
    case ProxyAtomic::kXor:
      return "xor";
    case ProxyAtomic::kCompareSwap:
      return "compare-swap";
    case ProxyAtomic::kLoad:
      return "load";
  }
  return "?";
}

/// True when [offset, offset + bytes) lies in [0, limit) (without overflow).
inline bool fits(uint64_t offset, uint64_t bytes, uint64_t limit) {
  return offset <= limit && bytes <= limit - offset;
}

}  // namespace gicl::proxy
