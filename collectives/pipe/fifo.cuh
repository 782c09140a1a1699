// SPDX-License-Identifier: Apache-2.0
// The pipe FIFOs: per (sender, receiver, channel) rings of inbox slots in the communicator's
// scratch. A message is a put into the receiver's slot and a signal (head); the receiver stores
// or reduces the slot and gives it back (tail). Block-wide primitives shared by the pipe
// collectives (pipe.cu), where block b is channel b and sends and receives, and the
// point-to-point groups (p2p.cu), which may give a channel's sends and receives a block each.
//
// To a peer on the network path, two ways (docs/collectives.md, "Across nodes"):
// - host FIFOs (the staged path: the transport cannot register GPU memory): the kernel writes
//   the message into its pinned host slot for the peer and posts kFifoSend; the proxies move it
//   into the peer's host slot and count it in `fifo_arrived`; the receiver copies it into its
//   inbox slot and posts kFifoCredit at once, which the proxies count in `fifo_credits`. No copy
//   engine or kernel of the proxy's runs on the way.
// - the outbox (the transport registers GPU memory): the message is gathered into this rank's
//   outbox slot (the proxy reads a put's source from this rank's heap) and sent as one
//   put_signal whose signal sets the slot's `arrived` word to the message's number; the receiver
//   returns the slot by adding 1 to `tail`.
// Either way a message is known by a per-slot word and consumption by commuting adds: the proxy
// orders nothing but a signal after its own payload and may deliver a channel's messages out of
// order (EFA's rules), so a count of arrivals per channel could pass a message still in flight,
// while a sum of k consumptions means the first k messages were consumed, since they are
// consumed in order. An outgoing slot of message m is free again when the peer has consumed m
// (the same wait as for its inbox slot), which follows its delivery, which follows its read.
#pragma once

#include "collectives/common/kernel_util.cuh"
#include "collectives/pipe/pipe.cuh"

namespace gicl::coll {

/// Threads of a pipe or point-to-point block (the primitives below are block-wide).
constexpr int kPipeThreads = 512;

/// Per-block FIFO state: message counts with every peer (shared memory), loaded from and stored
/// back to the communicator's sequence table so they continue across launches and graph replays.
struct Fifo {
  uint64_t sent[kMaxPipeRanks];
  uint64_t rcvd[kMaxPipeRanks];
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

/// Whether messages to `peer` take the host FIFOs (a network peer on the staged path).
__device__ __forceinline__ bool fifo_host(const gicl_device_comm_t& c, const CollScratch& s,
                                          int peer) {
  return s.fifo_out != nullptr && fifo_network(c, peer);
}

/// Block-wide: waits for a free slot at `peer`, returns where the payload goes (send_store
/// writes it) or nullptr when the wait failed: this rank's symmetric view of the peer's inbox
/// slot, or for a network peer this rank's host FIFO or outbox slot.
__device__ inline char* send_begin(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                   int peer, uint64_t* m) {
  // Thread 0 advanced the count at the end of the previous message: read it after a barrier.
  __syncthreads();
  *m = f.sent[peer] + 1;
  const bool host = fifo_host(c, s, peer);
  if (threadIdx.x == 0 && *m > kPipeSlots &&
      !wait_for_peer(
          c, (host ? s.fifo_credits : s.tail) + static_cast<size_t>(peer) * kPipeChannels + f.ch,
          *m - kPipeSlots, peer))
    f.fail = 1;
  __syncthreads();
  if (f.fail) return nullptr;
  if (host) return s.fifo_out + slot_index(peer, f.ch, *m) * s.fifo_slot_bytes;
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
    // To a network peer, the block's stores into the host slot or the outbox come before the
    // proxy reads them: the post's own system fence (proxy_submit) orders them, cumulatively
    // through the barrier above, before the request's words.
    if (fifo_host(c, s, peer)) {
      // A post that found no room has reported itself; the channel stops at its next wait.
      if (!dev::detail::net_fifo(c, ProxyOp::kFifoSend, peer,
                                 static_cast<uint32_t>(f.ch * kPipeSlots + (m - 1) % kPipeSlots),
                                 bytes))
        f.fail = 1;
    } else if (fifo_network(c, peer)) {
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

/// Block-wide copy of `bytes` out of a host FIFO slot (pinned host memory the proxy's transport
/// writes): volatile loads, which no cache answers with the slot's previous message.
__device__ inline void copy_from_host(char* dst, const char* src, size_t bytes) {
  const size_t n16 = bytes / 16;
  for (size_t i = threadIdx.x; i < n16; i += blockDim.x) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src + 16 * i));
    reinterpret_cast<uint4*>(dst)[i] = v;
  }
  for (size_t i = n16 * 16 + threadIdx.x; i < bytes; i += blockDim.x)
    dst[i] = *reinterpret_cast<const volatile char*>(src + i);
}

/// One thread: whether the sender's size word at `at` (written before its message) is `size`;
/// else reported, naming the peer and both sizes, and the FIFO failed.
__device__ inline bool size_word_matches(const gicl_device_comm_t& c, Fifo& f, const uint64_t* at,
                                         uint64_t size, int peer) {
  const uint64_t sent = __ldcg(at);
  if (sent == size) return true;
  dev::detail::report(dev::detail::reporter(c), GICL_DEVICE_ERROR_BAD_ARGUMENT, GICL_OP_COLLECTIVE,
                      peer, at, size, sent, 0);
  f.fail = 1;
  return false;
}

/// Block-wide: waits for the next message from `peer`, of `bytes`; returns its slot or nullptr.
/// `size` (point-to-point, an operation's first message on the channel): the receive's size,
/// which the sender's must equal, or the receive fails before storing a byte (reported, naming
/// the sender and both sizes): a larger send would hand its extra messages to the pair's next
/// receives. A message in a host FIFO is copied into the inbox slot and its host slot given back
/// at once.
__device__ inline const char* recv_begin(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                         int peer, uint64_t* m, size_t bytes, uint64_t size = 0) {
  __syncthreads();
  *m = f.rcvd[peer] + 1;
  const bool host = fifo_host(c, s, peer);
  if (threadIdx.x == 0) {
    // A host slot's count is its messages: message m is the slot's ((m - 1) / depth + 1)-th.
    const uint64_t* signal = host ? s.fifo_arrived + slot_index(peer, f.ch, *m)
                             : fifo_network(c, peer)
                                 ? s.arrived + slot_index(peer, f.ch, *m)
                                 : s.head + static_cast<size_t>(peer) * kPipeChannels + f.ch;
    const uint64_t want = host ? (*m - 1) / kPipeSlots + 1 : *m;
    if (!wait_for_peer(c, signal, want, peer, GICL_OP_SIGNAL_WAIT))
      f.fail = 1;
    else if (size != 0)
      size_word_matches(c, f, size_of_slot(s, f, peer, *m), size, peer);
  }
  __syncthreads();
  if (f.fail) return nullptr;
  char* slot = slot_of(s, f, peer, *m);
  if (host) {
    copy_from_host(slot, s.fifo_in + slot_index(peer, f.ch, *m) * s.fifo_slot_bytes, bytes);
    __syncthreads();
    if (threadIdx.x == 0 && !dev::detail::net_fifo(c, ProxyOp::kFifoCredit, peer, f.ch, 0))
      f.fail = 1;
  }
  return slot;
}

/// Block-wide: the slot is consumed (its contents are stored); give it back to the sender (a
/// host FIFO's went back in recv_begin).
__device__ inline void recv_end(const gicl_device_comm_t& c, const CollScratch& s, Fifo& f,
                                int peer, uint64_t m) {
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t* tail = s.tail + static_cast<size_t>(c.rank) * kPipeChannels + f.ch;
    const bool network = fifo_network(c, peer);
    if (!fifo_host(c, s, peer))
      dev::signal(c, tail, network ? 1 : m, network ? dev::SignalOp::kAdd : dev::SignalOp::kSet,
                  peer);
    f.rcvd[peer] = m;
  }
}

}  // namespace gicl::coll
