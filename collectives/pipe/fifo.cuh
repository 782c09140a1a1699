// SPDX-License-Identifier: Apache-2.0
// The pipe FIFOs: per (sender, receiver, channel) rings of inbox slots in the communicator's
// scratch. A message is a put into the receiver's slot and a signal (head); the receiver stores
// or reduces the slot and gives it back (tail). Block-wide primitives shared by the pipe
// collectives (pipe.cu), where block b is channel b and sends and receives, and the
// point-to-point groups (p2p.cu), which may give a channel's sends and receives a block each.
//
// To a peer on the network path a message is gathered into this rank's outbox slot (the proxy
// reads a put's source from this rank's heap) and sent as one put_signal, whose signal sets the
// slot's `arrived` word to the message's number: the proxy orders a signal after its own payload
// only, and may deliver a channel's messages out of order (EFA's rules), so a count in `head`
// could pass a message still in flight. The receiver returns a slot by adding 1 to `tail`: adds
// commute, and a sum of k means the first k messages were consumed, since they are consumed in
// order. The outbox slot of message m is free again when the peer has consumed m (the same wait
// as for its inbox slot), which follows its delivery, which follows the proxy's read.
#pragma once

#include "collectives/common/kernel_util.cuh"
#include "collectives/pipe/pipe.cuh"

namespace gicl::coll {

/// Threads of a pipe or point-to-point block (the primitives below are block-wide).
constexpr int kPipeThreads = 512;

/// Per-block FIFO state: message counts with every peer (shared memory), loaded from and stored
/// back to the communicator's sequence table so they continue across launches and graph replays.
struct Fifo {
  uint64_t sent[kMaxDirectRanks];
  uint64_t rcvd[kMaxDirectRanks];
  int ch;  // the channel
  int fail;
};

/// Which counts a block keeps: a block that only sends (or only receives) on its channel stores
/// only those, leaving the other side's to the block that moved them.
enum FifoSide : int { kFifoSends = 1, kFifoRecvs = 2, kFifoBoth = 3 };

__device__ inline void fifo_load(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                 int ch = blockIdx.x) {
  if (threadIdx.x == 0) f.fail = 0, f.ch = ch;
  for (int j = threadIdx.x; j < c.nranks; j += blockDim.x) {
    f.sent[j] = s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2];
    f.rcvd[j] = s.seq[(static_cast<size_t>(j) * kPipeChannels + ch) * 2 + 1];
  }
  __syncthreads();
}

__device__ inline void fifo_store(const gicl_device_comm_t& c, const CollScratch& s, const Fifo& f,
                                  int sides = kFifoBoth) {
  __syncthreads();
  for (int j = threadIdx.x; j < c.nranks; j += blockDim.x) {
    const size_t at = (static_cast<size_t>(j) * kPipeChannels + f.ch) * 2;
    if (sides & kFifoSends) s.seq[at] = f.sent[j];
    if (sides & kFifoRecvs) s.seq[at + 1] = f.rcvd[j];
  }
}

/// Index of the slot of message m (1-based) from `sender` on channel ch: [sender][channel][slot].
__device__ __forceinline__ size_t slot_index(int sender, int ch, uint64_t m) {
  return (static_cast<size_t>(sender) * kPipeChannels + ch) * kPipeSlots + (m - 1) % kPipeSlots;
}

/// Slot of message m (1-based) from `sender` on f's channel, in the local view of the inbox.
__device__ __forceinline__ char* slot_of(const CollScratch& s, const Fifo& f, int sender,
                                         uint64_t m) {
  return s.inbox + slot_index(sender, f.ch, m) * s.slot_bytes;
}

/// Where the size of the point-to-point operation of message m from `sender` on f's channel is
/// kept (beside its inbox slot, this rank's view).
__device__ __forceinline__ uint64_t* size_of_slot(const CollScratch& s, const Fifo& f, int sender,
                                                  uint64_t m) {
  return s.p2p_sizes + slot_index(sender, f.ch, m);
}

/// Whether `peer` is reached through the network proxy rather than load/store.
__device__ __forceinline__ bool fifo_network(const gicl_device_comm_t& c, int peer) {
  return c.paths[peer] == GICL_PATH_NETWORK;
}

/// Block-wide: waits for a free slot at `peer`, returns where the payload goes (send_store
/// writes it) or nullptr when the wait failed: this rank's symmetric view of the peer's inbox
/// slot, or for a network peer this rank's outbox slot.
__device__ inline char* send_begin(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                   int peer, uint64_t* m) {
  // Thread 0 advanced the count at the end of the previous message: read it after a barrier.
  __syncthreads();
  *m = f.sent[peer] + 1;
  if (threadIdx.x == 0 && *m > kPipeSlots &&
      !wait_for_peer(c, s.tail + static_cast<size_t>(peer) * kPipeChannels + f.ch, *m - kPipeSlots,
                     peer))
    f.fail = 1;
  __syncthreads();
  if (f.fail) return nullptr;
  if (fifo_network(c, peer)) return s.outbox + slot_index(peer, f.ch, *m) * s.slot_bytes;
  return slot_of(s, f, c.rank, *m);
}

/// Block-wide: `bytes` from `src` into the payload send_begin returned, at byte `at`.
__device__ __forceinline__ void send_store(const gicl_device_comm_t& c, char* slot, size_t at,
                                           const void* src, size_t bytes, int peer) {
  if (fifo_network(c, peer))
    copy_slice(slot + at, static_cast<const char*>(src), bytes);
  else
    dev::put<dev::Scope::kBlock>(c, slot + at, src, bytes, peer);
}

/// Block-wide: the message's `bytes` of payload are written; signal it.
/// `size` (point-to-point, an operation's first message on the channel): the operation's size,
/// stored beside the slot before the signal (0: none; load/store peers only).
__device__ inline void send_end(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                int peer, uint64_t m, size_t bytes, uint64_t size = 0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (fifo_network(c, peer)) {
      // The block's stores into the outbox before the proxy's copy engine reads it.
      dev::detail::fence_system();
      const size_t at = slot_index(c.rank, f.ch, m);
      dev::put_signal_nbi(c, s.inbox + at * s.slot_bytes,
                          s.outbox + slot_index(peer, f.ch, m) * s.slot_bytes, bytes,
                          s.arrived + at, m, dev::SignalOp::kSet, peer);
    } else {
      if (size != 0) dev::p(c, size_of_slot(s, f, c.rank, m), size, peer);
      dev::detail::fence_system();
      dev::signal(c, s.head + static_cast<size_t>(c.rank) * kPipeChannels + f.ch, m,
                  dev::SignalOp::kSet, peer);
    }
  }
  if (threadIdx.x == 0) f.sent[peer] = m;
}

/// Block-wide: waits for the next message from `peer`; returns its slot or nullptr. `size`
/// (point-to-point, an operation's first message on the channel): the receive's size, which the
/// sender's must equal, or the receive fails before storing a byte (reported, naming the sender
/// and both sizes): a larger send would hand its extra messages to the pair's next receives.
__device__ inline const char* recv_begin(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                         int peer, uint64_t* m, uint64_t size = 0) {
  __syncthreads();
  *m = f.rcvd[peer] + 1;
  if (threadIdx.x == 0) {
    const uint64_t* signal = fifo_network(c, peer)
                                 ? s.arrived + slot_index(peer, f.ch, *m)
                                 : s.head + static_cast<size_t>(peer) * kPipeChannels + f.ch;
    if (!wait_for_peer(c, signal, *m, peer, GICL_OP_SIGNAL_WAIT)) {
      f.fail = 1;
    } else if (size != 0) {
      const uint64_t* at = size_of_slot(s, f, peer, *m);
      const uint64_t sent = __ldcg(at);
      if (sent != size) {
        dev::detail::report(dev::detail::reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT,
                            GICL_OP_COLLECTIVE, peer, at, size, sent, 0);
        f.fail = 1;
      }
    }
  }
  __syncthreads();
  if (f.fail) return nullptr;
  return slot_of(s, f, peer, *m);
}

/// Block-wide: the slot is consumed (its contents are stored); give it back to the sender.
__device__ inline void recv_end(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                int peer, uint64_t m) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t* tail = s.tail + static_cast<size_t>(c.rank) * kPipeChannels + f.ch;
    if (fifo_network(c, peer))
      dev::signal(c, tail, 1, dev::SignalOp::kAdd, peer);
    else
      dev::signal(c, tail, m, dev::SignalOp::kSet, peer);
    f.rcvd[peer] = m;
  }
}

}  // namespace gicl::coll
