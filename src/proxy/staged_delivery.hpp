// SPDX-License-Identifier: Apache-2.0
// The staged network path: for heaps the transport cannot register (GPU memory on providers
// without FI_HMEM or DMA-BUF), every operation travels as chunks through pinned staging buffers
// and is applied by the target's proxy.
//
// Each rank registers one staging area, laid out alike everywhere (StagingLayout): its send
// slots, then `recv_slots` receive slots for every source rank, then one scratch word per rank.
// A slot is a 64-byte header (StagedHeader) and up to chunk - 64 bytes of payload.
//
// A put of B bytes to peer P becomes ceil(B / payload) chunks (a signal alone: one empty chunk).
// Each chunk takes a free send slot and one of P's receive slots reserved for this rank (a
// credit), is copied from the heap into the send slot (Copier::to_host), and is written with its
// header into the receive slot by one write_imm whose 32-bit immediate (EFA's width) names the
// kind, this rank and the slot. The send slot is free again once the write is sent (its source
// may be reused: net::Completion::kSent; the acknowledgement below is the delivery's). At P,
// the proxy sees the immediate, copies the payload into its heap (Copier::to_device), applies the
// chunk's signal after it (Copier::signal, in the same queue), and once the copier has finished
// both, answers with an 8-byte write_imm (an acknowledgement naming the slot) into this rank's
// scratch word. The acknowledgement returns the credit and completes the chunk; the operation
// completes with its last chunk, so quiet means "in the target's heap". A put with signal in
// several chunks sends its last chunk, the one carrying the signal, only after every other chunk
// is acknowledged: the signal is never applied before the payload. A put of at most
// kProxyInlineMax bytes brings them in its request (ProxyRequest::inlined): the proxy copies
// them into the send slot itself and writes at once, with no staging copy to wait for.
//
// Host FIFOs (the pipe collectives' messages to network peers, collectives/pipe/fifo.cuh): where
// the layout has them, the area also holds, per peer, `fifo_lanes` x `fifo_depth` outgoing and
// incoming slots of `fifo_slot` bytes, mapped into the GPU, and two arrays of counters. A kernel
// writes a message into its outgoing slot itself and posts kFifoSend; the proxy writes the slot
// into the peer's incoming slot for this rank with one write_imm (kind kImmFifo, the slot's
// index). The peer's proxy, once that immediate arrives (the data is in place), adds 1 to the
// slot's `arrived` counter, which the peer's kernel polls; the kernel reads the slot and posts
// kFifoCredit, which reaches this rank as a kImmFifo immediate naming the lane and adds 1 to its
// `credits` counter for (peer, lane). Only the proxy thread writes counters, so adds are plain
// release stores, and counts commute with any delivery order. A credit for lane
// kProxyArrivalLane is a barrier arrival instead: it adds to the peer's `arrivals` word for this
// rank, which the peer's barriers poll (ProxyRingSet::arrivals). No copier and no heap are
// involved: the kernel moves the bytes between GPU and pinned host memory. Every write of this
// path is posted with net::Completion::kSent: the credit, or the acknowledgement, is its delivery
// report, and a provider's own (on tcp, a reply the target sends before reporting the write)
// would be a second one on each message's way.
//
// Header-only operations waiting for the same peer travel together, one class at a time: those
// that need no answer (a signal alone, a non-fetching atomic), or fetching atomics. One chunk,
// one credit and one write carry up to batch_max() headers (the first flagged kBatch with the
// count), the target applies them with one copier step (Copier::update_many), and one
// acknowledgement completes them all; for fetches it carries their old values, one word each in
// batch order, into the first's send slot. A header alone needs no staging copy, so its chunk is
// written at once.
//
// Gets and fetching atomics are answered: a request chunk (kGet: the target's offset and length;
// kFetch: the word, update and operands) is a header alone, and names in `reply` where in this
// rank's staging area the answer goes: the payload part of the request's own send slot, which
// stays taken until the answer is used. The target's proxy copies the bytes out of its heap
// (kGet), or applies the update and stores the word's old value (kFetch), into its receive slot
// through the copier, and its acknowledgement is then a write_imm of that answer into `reply`
// rather than into the scratch word. Here the acknowledgement's arrival means the answer is in
// place: a fetch's old value is read from the slot; a get's bytes are copied into the heap
// (Copier::to_device), and the chunk completes once that copy has. A chunk not acknowledged
// within GICL_NET_TIMEOUT fails the proxy, naming the peer.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "proxy/copier.hpp"
#include "proxy/delivery.hpp"

namespace gicl::proxy {

struct StagedHeader {
  uint64_t dst;     // heap offset at the target
  uint64_t bytes;   // payload bytes after the header
  uint64_t signal;  // heap offset of the signal word, with kSignal; of the atomic's, with kAtomic
  uint64_t value;
  uint32_t flags;
  uint32_t atomic;   // with kAtomic and kFetch: the ProxyAtomic | width in bytes << 8
  uint64_t reply;    // with kGet and kFetch: the answer's offset in the sender's staging area
  uint64_t compare;  // with kFetch of kCompareSwap
  uint64_t batch;    // with kBatch: the headers that follow this one in the slot

  // kGet: `dst` is the offset to read at the target, `value` the bytes to answer, `bytes` 0.
  // kBatch: this header and `batch` more, each a signal or non-fetching atomic alone.
  static constexpr uint32_t kSignal = 1, kSignalAdd = 2, kAtomic = 4, kGet = 8, kFetch = 16,
                            kBatch = 32;
  // kAcked: the chunk also acknowledges the receive slot in the top 16 bits of `flags` (a chunk
  // of the target's that the writer applied: an acknowledgement riding on a chunk going back).
  static constexpr uint32_t kAcked = 64, kAckedShift = 16;
};
static_assert(sizeof(StagedHeader) == 64, "a staging slot starts with one 64-byte header");

struct StagingLayout {
  uint32_t chunk = 256 << 10;  // slot bytes, header included; a multiple of 64
  uint32_t send_slots = 32;    // this rank's outgoing slots
  uint32_t recv_slots = 8;     // receive slots per source rank (credits per peer)
  int nranks = 1;
  uint32_t fifo_lanes = 0;  // host FIFO lanes per peer; 0: no host FIFOs
  uint32_t fifo_depth = 0;  // slots per lane
  uint32_t fifo_slot = 0;   // bytes per host FIFO slot, a multiple of 4096

  size_t payload() const { return chunk - sizeof(StagedHeader); }
  /// Most headers one batched chunk carries: the target keeps its copier's WordUpdate list (32
  /// bytes each) and, for fetches, their old values (8 each) after them in the slot.
  uint32_t batch_max() const {
    const size_t fit = chunk / (sizeof(StagedHeader) + 32 + 8);
    return static_cast<uint32_t>(fit < 128 ? fit : 128);
  }
  size_t send_offset(uint32_t s) const { return size_t{s} * chunk; }
  size_t recv_offset(int src, uint32_t k) const {
    return (size_t{send_slots} + size_t(src) * recv_slots + k) * chunk;
  }
  size_t scratch_offset(int rank) const {
    return (size_t{send_slots} + size_t(nranks) * recv_slots) * chunk + 8 * size_t(rank);
  }
  /// Host FIFO slots per peer and direction.
  size_t fifo_slots() const { return size_t{fifo_lanes} * fifo_depth; }
  /// [peer][slot] outgoing slots, then [peer][slot] incoming ones, 4 KiB aligned.
  size_t fifo_out_offset(int dst, uint32_t k) const {
    return fifo_base() + (size_t(dst) * fifo_slots() + k) * fifo_slot;
  }
  size_t fifo_in_offset(int src, uint32_t k) const {
    return fifo_base() + (size_t(nranks + src) * fifo_slots() + k) * fifo_slot;
  }
  /// [source][slot]: messages that arrived in an incoming slot.
  size_t fifo_arrived_offset(int src, uint32_t k) const {
    return fifo_in_offset(nranks, 0) + 8 * (size_t(src) * fifo_slots() + k);
  }
  /// [destination][lane]: messages of this rank the destination consumed on that lane.
  size_t fifo_credit_offset(int dst, uint32_t lane) const {
    return fifo_arrived_offset(nranks, 0) + 8 * (size_t(dst) * fifo_lanes + lane);
  }
  /// [source]: barrier arrivals that rank made here (ProxyRingSet::arrivals), with or without
  /// host FIFOs.
  size_t arrivals_offset(int src) const { return fifo_credit_offset(nranks, 0) + 8 * size_t(src); }
  size_t bytes() const { return arrivals_offset(nranks); }
  /// GICL_INVALID_ARGUMENT naming what does not fit the immediate or the header.
  Status check() const;

 private:
  size_t fifo_base() const { return (scratch_offset(nranks) + 4095) / 4096 * 4096; }
};

/// The staging area of this rank and every rank's key for theirs.
struct StagingView {
  StagingLayout layout;
  char* base = nullptr;  // pinned host memory, `layout.bytes()`, registered as `region`
  const net::Region* region = nullptr;
  std::vector<net::RemoteKey> keys;  // [rank]
};

/// `ack_hold`: how long an acknowledgement without an answer waits for a chunk to its peer to
/// ride on (StagedHeader::kAcked) before it is written alone; 0 writes each at once.
std::unique_ptr<Delivery> make_staged_delivery(
    net::Transport* t, int rank, const HeapView& heap, const StagingView& staging, Copier* copier,
    std::chrono::milliseconds ack_timeout,
    std::chrono::microseconds ack_hold = std::chrono::microseconds(0));

}  // namespace gicl::proxy
