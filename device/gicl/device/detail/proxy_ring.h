// SPDX-License-Identifier: Apache-2.0
// The network proxy's request ring as kernels and the proxy thread both see it (plain data and
// header-only logic shared by host and device code; internal to gicl, not part of the device
// API's contract).
//
// Many producers (GPU threads, or host threads in tests), one consumer (the proxy). The ring is
// `size` 16-byte slots in pinned host memory; an operation takes 1 to kProxyMaxSlots consecutive
// slots. A producer takes tickets from `head` (device memory, one atomic add), waits until the
// proxy has consumed the previous lap of those slots (`tail`, read through `tail_cache`), and
// writes each slot as two 8-byte stores. Every 8-byte word carries the lap's commit bit in bit 63,
// so a word is valid exactly when its bit matches its ticket's lap: the proxy needs no separate
// flag, never clears a slot, and cannot see half a word. The commit bit of lap k is 1 - (k & 1),
// so the zeroed ring holds nothing.
//
// The proxy publishes `tail` (slots consumed, so free for the next lap) and `done` (every
// operation whose first ticket is below it has completed at its target), both in pinned host
// memory the GPU reads. A producer that cannot get room before its deadline fails the
// communicator; the tickets it took are never written, so the proxy stops there too.
//
// Fetching operations (kFetch: fetching atomics, g) answer with a value through `results`, an
// array of `results_size` slots in pinned host memory. A producer takes a result ticket i from
// `result_next` (device memory) and waits for its turn at slot i % results_size: its
// `result_turns` word (device memory) equals the lap i / results_size once the slot's previous
// user has read its answer. The proxy writes the slot's value, then its `seq` = i + 1 (release);
// the producer waits for that seq, reads the value and hands the slot on (turn = lap + 1). No
// answer is overwritten before it is read, whatever order the proxy completes operations in.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GICL_RING_HD __host__ __device__ __forceinline__
#else
#define GICL_RING_HD inline
#endif

namespace gicl {

inline constexpr uint32_t kProxyRingVersion = 6;
/// Most slots one operation takes (a put with a signal, both in long form).
inline constexpr uint32_t kProxyMaxSlots = 4;

struct alignas(16) ProxySlot {
  uint64_t w[2];
};
static_assert(sizeof(ProxySlot) == 16, "a slot is one 16-byte store's worth");

/// A fetching operation's answer: `value` is valid once `seq` is the result ticket + 1.
struct alignas(16) ProxyResult {
  uint64_t value;
  uint64_t seq;
};
static_assert(sizeof(ProxyResult) == 16, "an answer is read as one slot");

/// One ring as the producers see it; the proxy holds the same pointers in its own view.
struct ProxyRing {
  ProxySlot* slots;                  // pinned host memory: `size` slots, zeroed
  unsigned long long* head;          // device memory: tickets taken
  unsigned long long* tail_cache;    // device memory: the largest `tail` a producer has read
  const volatile uint64_t* tail;     // pinned host memory, written by the proxy: slots consumed
  const volatile uint64_t* done;     // pinned host memory, written by the proxy: completion mark
  const volatile uint32_t* failed;   // pinned host memory: nonzero once the proxy has failed
  uint32_t size;                     // slots, a power of two >= kProxyMaxSlots
  uint32_t version;                  // kProxyRingVersion
  ProxyResult* results;              // pinned host memory: `results_size` answers, zeroed
  unsigned long long* result_next;   // device memory: result tickets taken
  unsigned long long* result_turns;  // device memory: [results_size] laps handed on, zeroed
  uint32_t results_size;             // a power of two
  uint32_t reserved;
};
static_assert(sizeof(ProxyRing) == 88, "ProxyRing is passed to kernels by value");

/// Most rings one communicator's proxy serves.
inline constexpr uint32_t kProxyMaxRings = 16;

/// A communicator's rings as kernels see them (gicl_device_comm_t::net, device memory): ring 0
/// carries the default queue pair's operations (and the collectives' messages), rings 1 to
/// count - 2 the created queue pairs' (queue pair id k >= 1 on ring 1 + (k - 1) % (count - 2)),
/// and the last the barriers' arrivals, which are posted only after a quiet (or after the puts
/// they announce completed) and so need no order with the other rings: they never queue behind
/// another ring's bulk. Rings are independent queues, unordered between each other.
///
/// `arrivals` (staged path only): one word per source rank in pinned host memory mapped into the
/// GPU, the barrier arrivals that rank made here. An arrival to a network peer is then a
/// kFifoCredit on lane kProxyArrivalLane, which the peer's proxy adds to its word for this rank
/// with one host store: no copy into GPU memory, so a barrier completes while its process is in a
/// CUDA call that waits for the device (cudaFree), which the copier's launches would wait for.
/// Null on the direct path (an arrival is a signal add into the peer's sync_in, written by the
/// NIC) and with GICL_NET_HOST_ARRIVALS=0 (the same signal, applied by the peer's copier).
///
/// `inline_max`: the largest put whose bytes travel inside its request (GICL_NET_INLINE, at most
/// kProxyInlineMax, on the staged path, where the proxy copies them into the chunk itself and no
/// staging copy of the heap runs before the write; 0 on the direct path, where the NIC reads the
/// heap).
struct ProxyRingSet {
  uint32_t count;  // 3 to kProxyMaxRings
  uint32_t version;
  const uint64_t* arrivals;  // [source rank], or null
  uint32_t inline_max;
  uint32_t reserved;
  ProxyRing rings[kProxyMaxRings];
};
static_assert(sizeof(ProxyRingSet) == 24 + kProxyMaxRings * sizeof(ProxyRing),
              "ProxyRingSet's layout is read by kernels: no padding");

/// The host FIFO lane whose credits count barrier arrivals (ProxyRingSet::arrivals); the
/// collectives' lanes are below it.
inline constexpr uint32_t kProxyArrivalLane = 255;

/// The ring of queue pair `id` (0: the default) in a set of `count` rings.
GICL_RING_HD uint32_t proxy_qp_ring(uint32_t id, uint32_t count) {
  return id == 0 ? 0 : 1 + (id - 1) % (count - 2);
}
/// The arrivals' ring.
GICL_RING_HD uint32_t proxy_arrival_ring(uint32_t count) {
  return count - 1;
}

// ---- slot words -------------------------------------------------------------------------------

inline constexpr uint64_t kProxyCommitBit = uint64_t{1} << 63;
inline constexpr uint64_t kProxyPayloadMask = kProxyCommitBit - 1;

/// The commit bit of every word written for ticket `t` (lap t / size; size a power of two).
GICL_RING_HD uint64_t proxy_commit_bit(uint64_t t, uint32_t size) {
  return ((t / size) & 1) ? 0 : kProxyCommitBit;
}
GICL_RING_HD uint64_t proxy_word(uint64_t payload, uint64_t t, uint32_t size) {
  return (payload & kProxyPayloadMask) | proxy_commit_bit(t, size);
}
/// True when `word` was written for ticket `t` (not for the lap before).
GICL_RING_HD bool proxy_word_committed(uint64_t word, uint64_t t, uint32_t size) {
  return (word & kProxyCommitBit) == proxy_commit_bit(t, size);
}

// ---- operations -------------------------------------------------------------------------------
//
// Word 0 of an operation's first slot: op (5 bits) | long form (1) | peer (20) | A (37).
// Word 1: B (37) | C (26). Short forms fit offsets below 2^37 (128 GiB of heap) and puts below
// 2^26 bytes (64 MiB; the device side cuts larger ones); long forms carry 63-bit fields in a
// second slot.
//
//   op                  short form (1 slot)                  long form (2 slots)
//   kPut, kGet          A dst, B src, C bytes                A bytes; slot 2: dst, src
//   kPut inline         -                                    A bytes (1 to kProxyInlineMax),
//                                                            B kProxyInlineFlag | the data's
//                                                            top bit; slot 2: dst, data (the
//                                                            bytes, little-endian)
//   kSignalSet/Add      A signal, B|C value (63 bits)        slot 2: signal, value
//   kPutSignalSet/Add   a put slot, then a signal slot (each short, long or inline): 2 to 4
//                       slots
//   kFence              peer (kProxyAllPeers: every peer)
//   kNop                nothing (fills a reservation)
//   kFifoSend           A host FIFO slot, B bytes (its payload in that slot of this rank's outbox)
//   kFifoCredit         A host FIFO lane (a slot of it consumed here; kProxyArrivalLane: a
//                       barrier arrival)
//   kAtomic             -                                    A kind | 8-byte width flag << 3;
//                                                            slot 2: word, value (a non-fetching
//                                                            update of a 4- or 8-byte word)
//   kFetch              -                                    as kAtomic, B the operands' top
//                                                            bits; slot 2: word, value; slot 3:
//                                                            result ticket, compare (3 slots)
//
// Offsets are symmetric-heap offsets: src of a put and dst of a get are this rank's, the others
// the peer's. The host FIFOs (proxy/staged_delivery.hpp) are the pipe collectives' message
// slots in the staging area, where a kernel writes and reads pinned host memory itself.

enum class ProxyOp : uint8_t {
  kNop = 0,
  kPut = 1,
  kGet = 2,
  kSignalSet = 3,
  kSignalAdd = 4,
  kPutSignalSet = 5,
  kPutSignalAdd = 6,
  kFence = 7,
  kFifoSend = 8,
  kFifoCredit = 9,
  kAtomic = 10,
  kFetch = 11,
};
inline constexpr uint32_t kProxyOpCount = 12;

/// The update a kAtomic or kFetch applies to its word: kSet to kXor for both (a fetching kSet is
/// a swap), kCompareSwap and kLoad (the old value, unchanged: g and atomic_fetch) for kFetch.
enum class ProxyAtomic : uint8_t {
  kSet = 0,
  kAdd = 1,
  kAnd = 2,
  kOr = 3,
  kXor = 4,
  kCompareSwap = 5,
  kLoad = 6
};
inline constexpr uint32_t kProxyAtomicCount = 5;  // the non-fetching updates
inline constexpr uint32_t kProxyFetchCount = 7;   // every update kFetch applies

inline constexpr int kProxyPeerBits = 20;
inline constexpr uint32_t kProxyAllPeers = (1u << kProxyPeerBits) - 1;
inline constexpr int kProxyFieldABits = 37;
inline constexpr int kProxyFieldCBits = 26;
inline constexpr uint64_t kProxyShortOffsetLimit = uint64_t{1} << kProxyFieldABits;
inline constexpr uint64_t kProxyShortBytesLimit = uint64_t{1} << kProxyFieldCBits;
static_assert(5 + 1 + kProxyPeerBits + kProxyFieldABits == 63, "word 0 holds 63 payload bits");
static_assert(kProxyFieldABits + kProxyFieldCBits == 63, "word 1 holds 63 payload bits");
/// Most bytes a put carries inside its request (ProxyRingSet::inline_max).
inline constexpr uint32_t kProxyInlineMax = 8;
/// Marks a long-form transfer's word 1 as an inline put; a long form's word 1 otherwise holds
/// the top 26 bits of its byte count, so this bit is never set there.
inline constexpr uint64_t kProxyInlineFlag = uint64_t{1} << 62;

/// An operation as the proxy reads it back.
struct ProxyRequest {
  ProxyOp op;
  uint32_t slots;  // slots it took
  uint32_t peer;
  uint64_t dst;  // kPut/kGet/kPutSignal*: the put's destination offset; kFifo*: slot or lane
  uint64_t src;
  uint64_t bytes;
  uint64_t
      signal;  // kSignal*/kPutSignal*: the signal word's offset at the peer; kAtomic: the word's
  uint64_t value;      // kSignal*/kPutSignal*/kAtomic/kFetch: its operand
  ProxyAtomic atomic;  // kAtomic/kFetch: the update; `bytes` is the word's width (4 or 8)
  uint64_t compare;    // kFetch with kCompareSwap: the value the word must hold
  uint64_t result;     // kFetch: the result ticket its answer goes to
  bool inlined;        // kPut/kPutSignal*: `bytes` came in the request, in `data` (no `src`)
  uint64_t data;       // an inline put's bytes, little-endian
};

GICL_RING_HD uint64_t proxy_word0(ProxyOp op, bool long_form, uint32_t peer, uint64_t a) {
  return static_cast<uint64_t>(op) | (static_cast<uint64_t>(long_form) << 5) |
         (static_cast<uint64_t>(peer) << 6) | (a << (6 + kProxyPeerBits));
}
GICL_RING_HD ProxyOp proxy_op_of(uint64_t w0) {
  return static_cast<ProxyOp>(w0 & 31);
}
GICL_RING_HD bool proxy_long_of(uint64_t w0) {
  return (w0 >> 5) & 1;
}
GICL_RING_HD uint32_t proxy_peer_of(uint64_t w0) {
  return static_cast<uint32_t>((w0 >> 6) & kProxyAllPeers);
}
GICL_RING_HD uint64_t proxy_a_of(uint64_t w0) {
  return (w0 >> (6 + kProxyPeerBits)) & (kProxyShortOffsetLimit - 1);
}

/// Encodes a transfer (kPut, kGet) into `w` (payload words, two per slot); returns its slots.
GICL_RING_HD uint32_t proxy_encode_transfer(uint64_t* w, ProxyOp op, uint32_t peer, uint64_t dst,
                                            uint64_t src, uint64_t bytes) {
  if (dst < kProxyShortOffsetLimit && src < kProxyShortOffsetLimit &&
      bytes < kProxyShortBytesLimit) {
    w[0] = proxy_word0(op, false, peer, dst);
    w[1] = src | (bytes << kProxyFieldABits);
    return 1;
  }
  w[0] = proxy_word0(op, true, peer, bytes & (kProxyShortOffsetLimit - 1));
  w[1] = bytes >> kProxyFieldABits;
  w[2] = dst;
  w[3] = src;
  return 2;
}

/// Encodes an inline transfer (kPut, kPutSignalSet/Add) of `bytes` (1 to kProxyInlineMax) whose
/// bytes are `data` (little-endian; the bits above them zero) into `w`; 2 slots.
GICL_RING_HD uint32_t proxy_encode_inline(uint64_t* w, ProxyOp op, uint32_t peer, uint64_t dst,
                                          uint64_t data, uint32_t bytes) {
  w[0] = proxy_word0(op, true, peer, bytes);
  w[1] = kProxyInlineFlag | (data >> 63);  // the bit the second slot's word cannot carry
  w[2] = dst;
  w[3] = data & kProxyPayloadMask;
  return 2;
}

/// Encodes a signal (kSignalSet, kSignalAdd); returns its slots.
GICL_RING_HD uint32_t proxy_encode_signal(uint64_t* w, ProxyOp op, uint32_t peer, uint64_t signal,
                                          uint64_t value) {
  if (signal < kProxyShortOffsetLimit && value <= kProxyPayloadMask) {
    w[0] = proxy_word0(op, false, peer, signal);
    w[1] = value;
    return 1;
  }
  w[0] = proxy_word0(op, true, peer, 0);
  w[1] = value >> 63;  // the bit the second slot's word cannot carry
  w[2] = signal;
  w[3] = value & kProxyPayloadMask;
  return 2;
}

/// Encodes a host FIFO operation (kFifoSend: slot `index` holds `bytes`; kFifoCredit: lane
/// `index`); one slot.
GICL_RING_HD uint32_t proxy_encode_fifo(uint64_t* w, ProxyOp op, uint32_t peer, uint32_t index,
                                        uint64_t bytes) {
  w[0] = proxy_word0(op, false, peer, index);
  w[1] = bytes & kProxyPayloadMask;
  return 1;
}

/// Encodes a non-fetching atomic update of the `width`-byte word at `word` (kAtomic); 2 slots.
GICL_RING_HD uint32_t proxy_encode_atomic(uint64_t* w, uint32_t peer, ProxyAtomic kind,
                                          uint32_t width, uint64_t word, uint64_t value) {
  w[0] = proxy_word0(ProxyOp::kAtomic, true, peer,
                     static_cast<uint64_t>(kind) | (width == 8 ? uint64_t{8} : 0));
  w[1] = value >> 63;  // the bit the second slot's word cannot carry
  w[2] = word;
  w[3] = value & kProxyPayloadMask;
  return 2;
}

/// Encodes a fetching update of the `width`-byte word at `word` (kFetch) whose answer goes to
/// result ticket `result`; 3 slots.
GICL_RING_HD uint32_t proxy_encode_fetch(uint64_t* w, uint32_t peer, ProxyAtomic kind,
                                         uint32_t width, uint64_t word, uint64_t value,
                                         uint64_t compare, uint64_t result) {
  w[0] = proxy_word0(ProxyOp::kFetch, true, peer,
                     static_cast<uint64_t>(kind) | (width == 8 ? uint64_t{8} : 0));
  w[1] = (value >> 63) | (compare >> 63) << 1;  // the bits the later slots' words cannot carry
  w[2] = word;
  w[3] = value & kProxyPayloadMask;
  w[4] = result & kProxyPayloadMask;
  w[5] = compare & kProxyPayloadMask;
  return 3;
}

/// Encodes a put followed by a signal into one reservation (2 to 4 slots).
GICL_RING_HD uint32_t proxy_encode_put_signal(uint64_t* w, bool add, uint32_t peer, uint64_t dst,
                                              uint64_t src, uint64_t bytes, uint64_t signal,
                                              uint64_t value) {
  const uint32_t n = proxy_encode_transfer(w, add ? ProxyOp::kPutSignalAdd : ProxyOp::kPutSignalSet,
                                           peer, dst, src, bytes);
  return n + proxy_encode_signal(w + 2 * n, add ? ProxyOp::kSignalAdd : ProxyOp::kSignalSet, peer,
                                 signal, value);
}

/// proxy_encode_put_signal with the put's bytes inline (proxy_encode_inline); 3 or 4 slots.
GICL_RING_HD uint32_t proxy_encode_inline_signal(uint64_t* w, bool add, uint32_t peer, uint64_t dst,
                                                 uint64_t data, uint32_t bytes, uint64_t signal,
                                                 uint64_t value) {
  const uint32_t n = proxy_encode_inline(w, add ? ProxyOp::kPutSignalAdd : ProxyOp::kPutSignalSet,
                                         peer, dst, data, bytes);
  return n + proxy_encode_signal(w + 2 * n, add ? ProxyOp::kSignalAdd : ProxyOp::kSignalSet, peer,
                                 signal, value);
}

/// Decodes the operation whose first ticket is `t`, reading payload words through
/// `load(ticket, word)` (which returns the word with its commit bit). Returns the slots it took,
/// or 0 while any of them is not committed yet; `out->op` is kNop for an unknown op code.
template <typename Load>
GICL_RING_HD uint32_t proxy_decode(Load&& load, uint64_t t, uint32_t size, ProxyRequest* out) {
  uint64_t w[2 * kProxyMaxSlots];
  uint32_t have = 0;
  auto need = [&](uint32_t slots) {
    for (; have < slots; ++have) {
      w[2 * have] = load(t + have, 0);
      w[2 * have + 1] = load(t + have, 1);
      if (!proxy_word_committed(w[2 * have], t + have, size) ||
          !proxy_word_committed(w[2 * have + 1], t + have, size))
        return false;
      w[2 * have] &= kProxyPayloadMask;
      w[2 * have + 1] &= kProxyPayloadMask;
    }
    return true;
  };
  if (!need(1)) return 0;
  const ProxyOp op = proxy_op_of(w[0]);
  *out = ProxyRequest{op, 1, proxy_peer_of(w[0]), 0, 0, 0, 0, 0, ProxyAtomic::kSet, 0, 0, false, 0};
  uint32_t at = 0;  // first slot of the part being decoded
  auto transfer = [&]() -> bool {
    const uint64_t* p = w + 2 * at;
    if (!proxy_long_of(p[0])) {
      out->dst = proxy_a_of(p[0]);
      out->src = p[1] & (kProxyShortOffsetLimit - 1);
      out->bytes = p[1] >> kProxyFieldABits;
      at += 1;
      return true;
    }
    if (!need(at + 2)) return false;
    p = w + 2 * at;
    if (p[1] & kProxyInlineFlag) {
      out->inlined = true;
      out->bytes = proxy_a_of(p[0]);
      out->dst = p[2];
      out->data = p[3] | (p[1] << 63);
    } else {
      out->bytes = proxy_a_of(p[0]) | (p[1] << kProxyFieldABits);
      out->dst = p[2];
      out->src = p[3];
    }
    at += 2;
    return true;
  };
  auto signal = [&]() -> bool {
    if (!need(at + 1)) return false;
    const uint64_t* p = w + 2 * at;
    if (!proxy_long_of(p[0])) {
      out->signal = proxy_a_of(p[0]);
      out->value = p[1];
      at += 1;
      return true;
    }
    if (!need(at + 2)) return false;
    p = w + 2 * at;
    out->signal = p[2];
    out->value = p[3] | (p[1] << 63);
    at += 2;
    return true;
  };
  switch (op) {
    case ProxyOp::kPut:
    case ProxyOp::kGet:
      if (!transfer()) return 0;
      break;
    case ProxyOp::kSignalSet:
    case ProxyOp::kSignalAdd:
      if (!signal()) return 0;
      break;
    case ProxyOp::kPutSignalSet:
    case ProxyOp::kPutSignalAdd:
      if (!transfer() || !signal()) return 0;
      break;
    case ProxyOp::kFence:
    case ProxyOp::kNop:
      at = 1;
      break;
    case ProxyOp::kFifoSend:
    case ProxyOp::kFifoCredit:
      out->dst = proxy_a_of(w[0]);
      out->bytes = w[1];
      at = 1;
      break;
    case ProxyOp::kAtomic:
      if (!need(2)) return 0;
      out->atomic = static_cast<ProxyAtomic>(proxy_a_of(w[0]) & 7);
      out->bytes = (proxy_a_of(w[0]) & 8) ? 8 : 4;
      out->signal = w[2];
      out->value = w[3] | (w[1] << 63);
      at = 2;
      break;
    case ProxyOp::kFetch:
      if (!need(3)) return 0;
      out->atomic = static_cast<ProxyAtomic>(proxy_a_of(w[0]) & 7);
      out->bytes = (proxy_a_of(w[0]) & 8) ? 8 : 4;
      out->signal = w[2];
      out->value = w[3] | (w[1] << 63);
      out->result = w[4];
      out->compare = w[5] | ((w[1] >> 1) & 1) << 63;
      at = 3;
      break;
    default:
      out->op = ProxyOp::kNop;  // unknown: the consumer reports it
      at = 1;
      break;
  }
  out->slots = at;
  return at;
}

/// Posts one operation of `n` slots (payload words `w`, two per slot) with the memory policy
/// `m`: `m.take(head, n)` (atomic add, returns the old value), `m.room(ring, first, n)` (waits
/// until slots [first, first + n) are free, false when it gave up) and `m.store(word, value)`.
/// Returns the first ticket, or ~0 when there was no room in time.
template <typename Mem>
GICL_RING_HD uint64_t proxy_post(const ProxyRing& q, const uint64_t* w, uint32_t n, Mem& m) {
  const uint64_t t = m.take(q.head, n);
  if (!m.room(q, t, n)) return ~uint64_t{0};
  for (uint32_t i = 0; i < n; ++i) {
    ProxySlot* s = q.slots + ((t + i) & (q.size - 1));
    m.store(&s->w[0], proxy_word(w[2 * i], t + i, q.size));
    m.store(&s->w[1], proxy_word(w[2 * i + 1], t + i, q.size));
  }
  return t;
}

/// Takes a result ticket for a fetching operation and waits for its slot's turn, with the memory
/// policy `m`: `m.take(counter, 1)` and `m.turn(word, lap)` (waits until *word == lap, false when
/// it gave up). Returns the ticket, or ~0 when the turn did not come.
template <typename Mem>
GICL_RING_HD uint64_t proxy_result_take(const ProxyRing& q, Mem& m) {
  const uint64_t i = m.take(q.result_next, 1);
  if (!m.turn(q.result_turns + (i & (q.results_size - 1)), i / q.results_size)) return ~uint64_t{0};
  return i;
}

/// Waits for result ticket `i`'s answer (`m.answer(slot, seq, &value)`, false when it gave up),
/// then hands the slot to its next user (`m.release(word, lap + 1)`), answered or not.
template <typename Mem>
GICL_RING_HD bool proxy_result_read(const ProxyRing& q, Mem& m, uint64_t i, uint64_t* value) {
  const uint32_t k = static_cast<uint32_t>(i & (q.results_size - 1));
  const bool ok = m.answer(q.results + k, i + 1, value);
  m.release(q.result_turns + k, i / q.results_size + 1);
  return ok;
}

}  // namespace gicl
