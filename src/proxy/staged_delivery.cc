// SPDX-License-Identifier: Apache-2.0
#include "proxy/staged_delivery.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <deque>
#include <string>

#include "proxy/proxy_ops.hpp"

namespace gicl::proxy {

Status StagingLayout::check() const {
  GICL_ARG_CHECK(chunk >= 2 * sizeof(StagedHeader) && chunk % 64 == 0,
                 "staging chunk of %u bytes: a multiple of 64 of at least 128 bytes", chunk);
  GICL_ARG_CHECK(send_slots >= 1 && recv_slots >= 1 && recv_slots <= 65536,
                 "staging slots: %u send, %u receive per peer (1..65536)", send_slots, recv_slots);
  GICL_ARG_CHECK(nranks >= 1 && nranks <= 16384,
                 "staged network path: %d ranks, at most 16384 fit the immediate", nranks);
  GICL_ARG_CHECK(
      fifo_lanes == 0 || (fifo_slot >= 4096 && fifo_slot % 4096 == 0 && fifo_depth >= 1 &&
                          fifo_slots() <= 0x7fff && fifo_lanes <= kProxyArrivalLane),
      "host FIFOs: %u lanes x %u slots of %u bytes (slots of 4 KiB multiples, at "
      "most 32767 per peer, at most 255 lanes: lane 255 carries barrier arrivals)",
      fifo_lanes, fifo_depth, fifo_slot);
  return GICL_SUCCESS;
}

namespace {

// The immediate (32 bits): kind (2) | rank (14) | slot (16). A kImmFifo slot names a host FIFO
// slot (a message), or with kFifoCreditBit a lane (bits 0-7) and a count of credits less one
// (bits 8-14).
constexpr uint32_t kImmData = 1, kImmAck = 2, kImmFifo = 3;
constexpr uint32_t kFifoCreditBit = 0x8000;
constexpr uint32_t kMaxCreditsPerWrite = 128;
// The cookie of a write carrying parked credits: no proxy operation waits for it (NetProxy's
// cookies index its operations and never reach it).
constexpr uint32_t kCreditsCookie = 0xffffffffu;
uint64_t make_imm(uint32_t kind, int rank, uint32_t slot) {
  return (uint64_t{kind} << 30) | (uint64_t(rank) << 16) | slot;
}
uint32_t imm_kind(uint64_t v) {
  return static_cast<uint32_t>(v >> 30) & 3;
}
int imm_rank(uint64_t v) {
  return static_cast<int>((v >> 16) & 0x3fff);
}
uint32_t imm_slot(uint64_t v) {
  return static_cast<uint32_t>(v & 0xffff);
}

// Transport cookies and copier tokens carry what they belong to in their top bits.
constexpr uint64_t kTagChunk = uint64_t{1} << 62;  // a chunk's write / its staging copy
constexpr uint64_t kTagAck = uint64_t{2} << 62;    // an acknowledgement / a received chunk
constexpr uint64_t kTagFifo = uint64_t{3} << 62;   // a host FIFO message's or credit's write
constexpr uint64_t kTagReply = uint64_t{3} << 62;  // copier token: a get's answer in the heap
constexpr uint64_t kTagMask = uint64_t{3} << 62;

/// Adds n to a counter in pinned host memory that a kernel polls (this thread its only writer).
void bump(char* word, uint64_t n = 1) {
  std::atomic_ref<uint64_t> w(*reinterpret_cast<uint64_t*>(word));
  w.store(w.load(std::memory_order_relaxed) + n, std::memory_order_release);
}

class StagedDelivery : public Delivery {
 public:
  StagedDelivery(net::Transport* t, int rank, const HeapView& heap, const StagingView& staging,
                 Copier* copier, std::chrono::milliseconds ack_timeout,
                 std::chrono::microseconds ack_hold)
      : t_(t),
        me_(rank),
        heap_(heap),
        st_(staging),
        copier_(copier),
        ack_timeout_(ack_timeout),
        ack_hold_(ack_hold) {
    const StagingLayout& l = st_.layout;
    for (uint32_t s = l.send_slots; s-- > 0;) free_send_.push_back(s);
    credits_.resize(l.nranks);
    awaiting_.assign(l.nranks, std::vector<uint32_t>(l.recv_slots, kNone));
    for (auto& c : credits_)
      for (uint32_t k = l.recv_slots; k-- > 0;) c.push_back(k);
  }

  uint32_t inline_max() const override { return kProxyInlineMax; }

  Status start(uint32_t cookie, const ProxyRequest& q) override {
    if (q.op == ProxyOp::kFifoSend || q.op == ProxyOp::kFifoCredit) return start_fifo(cookie, q);
    if (cookie >= ops_.size()) ops_.resize(cookie + 1);
    if (q.op == ProxyOp::kGet || q.op == ProxyOp::kFetch) return start_answered(cookie, q);
    const uint64_t bytes = has_transfer(q.op) ? q.bytes : 0;
    const size_t payload = st_.layout.payload();
    const uint32_t n = bytes == 0 ? 1 : static_cast<uint32_t>((bytes + payload - 1) / payload);
    const bool update = has_signal(q.op) || q.op == ProxyOp::kAtomic;
    if (bytes == 0 && !update) {
      completed_.push_back(cookie);  // an empty put: nothing to move
      return GICL_SUCCESS;
    }
    ops_[cookie] = Op{q, n, 0, kNone};
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t off = uint64_t{i} * payload;
      Chunk c{};
      c.op = cookie;
      c.peer = static_cast<int>(q.peer);
      c.header.dst = q.dst + off;
      c.header.bytes = std::min<uint64_t>(payload, bytes - std::min(bytes, off));
      c.src = q.src + off;
      if (i + 1 == n && has_signal(q.op)) {
        c.header.flags = StagedHeader::kSignal | (signal_adds(q.op) ? StagedHeader::kSignalAdd : 0);
        c.header.signal = q.signal;
        c.header.value = q.value;
      }
      if (q.op == ProxyOp::kAtomic) {  // a header alone, as a signal without a payload
        c.header.flags = StagedHeader::kAtomic;
        c.header.atomic = static_cast<uint32_t>(q.atomic) | static_cast<uint32_t>(q.bytes) << 8;
        c.header.signal = q.signal;
        c.header.value = q.value;
      }
      const uint32_t id = new_chunk(c);
      // The signal's chunk waits for every other chunk's acknowledgement.
      if (i + 1 == n && n > 1 && has_signal(q.op))
        ops_[cookie].held = id;
      else
        waiting_.push_back(id);
    }
    return GICL_SUCCESS;
  }

  Status on_event(const net::Event& e) override {
    if (e.kind == net::EventKind::kImmediate) return on_immediate(e.value);
    if ((e.cookie & kTagMask) == kTagFifo) {
      const uint32_t cookie = static_cast<uint32_t>(e.cookie & ~kTagMask);
      if (cookie == kCreditsCookie) {
        if (e.status == GICL_SUCCESS) return GICL_SUCCESS;
        return GICL_FAIL(e.status, "host FIFO credits to peer %d failed: %s", e.peer,
                         gicl_get_error_string(e.status));
      }
      if (e.status != GICL_SUCCESS) {
        failed_op_ = cookie;
        return GICL_FAIL(e.status, "%s to peer %d failed: %s", op_name(ProxyOp::kFifoSend), e.peer,
                         gicl_get_error_string(e.status));
      }
      completed_.push_back(cookie);
      return GICL_SUCCESS;
    }
    if (e.status != GICL_SUCCESS) {
      if ((e.cookie & kTagMask) == kTagChunk) {
        const Chunk& c = chunks_[e.cookie & ~kTagMask];
        failed_op_ = c.op;
        return GICL_FAIL(e.status, "%s to peer %d failed: a staged chunk's write: %s",
                         op_name(ops_[c.op].req.op), c.peer, gicl_get_error_string(e.status));
      }
      return GICL_FAIL(e.status, "the acknowledgement to peer %d failed: %s", e.peer,
                       gicl_get_error_string(e.status));
    }
    if ((e.cookie & kTagMask) == kTagChunk) {
      // Sent (net::Completion::kSent): the send slot is free, unless the answer comes back into
      // it; the chunk waits for its acknowledgement, which says it was delivered.
      const uint32_t id = static_cast<uint32_t>(e.cookie & ~kTagMask);
      Chunk& c = chunks_[id];
      if (!c.answered) free_send_.push_back(c.send_slot);
      c.sent = true;
      if (c.acked) release(id);  // its acknowledgement came first
    }
    return GICL_SUCCESS;
  }

  Status progress(bool* work) override {
    *work = false;
    if (!parked_.empty()) {
      *work = true;
      GICL_CHECK(send_parked_credits());
    }
    done_tokens_.clear();
    GICL_CHECK(copier_->poll(&done_tokens_));
    if (!done_tokens_.empty()) {
      marks_out_ -= done_tokens_.size();
      copier_moved_ = std::chrono::steady_clock::now();
    }
    for (uint64_t token : done_tokens_) {
      *work = true;
      if ((token & kTagMask) == kTagChunk)
        GICL_CHECK(post_chunk(static_cast<uint32_t>(token & ~kTagMask)));
      else if ((token & kTagMask) == kTagReply)
        chunk_done(static_cast<uint32_t>(token & ~kTagMask));  // a get's bytes are in the heap
      else
        GICL_CHECK(applied(static_cast<int>((token & ~kTagMask) >> 16),
                           static_cast<uint32_t>(token & 0xffff)));
    }
    GICL_CHECK(post_held_acks(work));
    // Chunks waiting for a send slot and a credit at their peer, oldest first; a peer without
    // credits does not hold up the others.
    for (size_t i = 0; i < waiting_.size() && !free_send_.empty();) {
      const uint32_t id = waiting_[i];
      auto& credit = credits_[chunks_[id].peer];
      if (credit.empty()) {
        ++i;
        continue;
      }
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      if (batch_class(chunks_[id]) != 0) gather(id, i);
      GICL_CHECK(stage(id, credit.back()));
      credit.pop_back();
      *work = true;
    }
    return check_timeouts();
  }

 private:
  static constexpr uint32_t kNone = ~0u;

  struct Op {
    ProxyRequest req;
    uint32_t chunks;  // in all
    uint32_t acked;
    uint32_t held;  // the signal's chunk, sent once the others are acknowledged
  };
  struct Chunk {
    uint32_t op;
    int peer;
    uint64_t src;  // heap offset of the payload here (of a get: where its answer goes)
    StagedHeader header;
    uint32_t send_slot;
    uint32_t recv_slot;
    bool answered;  // a get's or fetch's request: its answer comes back into its send slot
    bool sent;      // the write is sent (the send slot is free unless `answered`)
    bool acked;     // the target applied it (and this rank used its answer)
    uint32_t next;  // the next chunk of its batch (kNone: the last; see gather())
    bool member;    // in another chunk's batch (not its first)
    std::chrono::steady_clock::time_point staged_at;
  };

  /// Which chunks may share a batch: 1 for a header that needs no answer (a signal alone, a
  /// non-fetching atomic), 2 for a fetching atomic (its answer one word of the batch's); 0 for
  /// the rest.
  static int batch_class(const Chunk& c) {
    if (c.header.bytes != 0) return 0;
    const uint32_t f = c.header.flags;
    if (!c.answered &&
        (f & ~(StagedHeader::kSignal | StagedHeader::kSignalAdd | StagedHeader::kAtomic)) == 0)
      return 1;
    return c.answered && f == StagedHeader::kFetch ? 2 : 0;
  }

  /// Moves the batchable chunks to `leader`'s peer waiting from position `from` on into its
  /// batch (linked through `next`), up to batch_max() headers in all, in their order.
  void gather(uint32_t leader, size_t from) {
    Chunk& l = chunks_[leader];
    l.next = kNone;
    uint32_t* tail = &l.next;
    uint32_t n = 1;
    for (size_t j = from; j < waiting_.size() && n < st_.layout.batch_max();) {
      const uint32_t id = waiting_[j];
      Chunk& m = chunks_[id];
      if (m.peer != l.peer || batch_class(m) != batch_class(l)) {
        ++j;
        continue;
      }
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(j));
      m.next = kNone;
      m.member = true;  // no slot and no write of its own
      m.sent = true;
      m.acked = false;
      *tail = id;
      tail = &m.next;
      ++n;
    }
    l.header.batch = n - 1;
    if (n > 1) l.header.flags |= StagedHeader::kBatch;
  }

  /// The bytes a chunk's write carries: its header and payload, or its batch's headers.
  static size_t wire_bytes(const StagedHeader& h) {
    return sizeof(StagedHeader) * (1 + h.batch) + h.bytes;
  }

  /// A get in payload-sized pieces, or one fetching atomic: request chunks answered by the target.
  Status start_answered(uint32_t cookie, const ProxyRequest& q) {
    const bool get = q.op == ProxyOp::kGet;
    if (get && q.bytes == 0) {
      completed_.push_back(cookie);
      return GICL_SUCCESS;
    }
    const size_t payload = st_.layout.payload();
    const uint32_t n = get ? static_cast<uint32_t>((q.bytes + payload - 1) / payload) : 1;
    ops_[cookie] = Op{q, n, 0, kNone};
    for (uint32_t i = 0; i < n; ++i) {
      Chunk c{};
      c.op = cookie;
      c.peer = static_cast<int>(q.peer);
      c.answered = true;
      if (get) {
        const uint64_t off = uint64_t{i} * payload;
        c.header.flags = StagedHeader::kGet;
        c.header.dst = q.src + off;
        c.header.value = std::min<uint64_t>(payload, q.bytes - off);
        c.src = q.dst + off;
      } else {
        c.header.flags = StagedHeader::kFetch;
        c.header.atomic = static_cast<uint32_t>(q.atomic) | static_cast<uint32_t>(q.bytes) << 8;
        c.header.signal = q.signal;
        c.header.value = q.value;
        c.header.compare = q.compare;
      }
      waiting_.push_back(new_chunk(c));
    }
    return GICL_SUCCESS;
  }

  /// The chunk's memory and its send slot are free once its write is sent and it is done.
  void release(uint32_t id) {
    if (chunks_[id].answered && !chunks_[id].member) free_send_.push_back(chunks_[id].send_slot);
    free_chunks_.push_back(id);
  }

  /// The chunk is acknowledged (and its answer used): it counts toward its operation.
  void chunk_done(uint32_t id) {
    Chunk& c = chunks_[id];
    const uint32_t cookie = c.op;
    // The write's own completion may still be on its way: the chunk is free once both are in.
    c.acked = true;
    if (c.sent) release(id);
    Op& o = ops_[cookie];
    if (++o.acked == o.chunks) {
      completed_.push_back(cookie);
    } else if (o.held != kNone && o.acked + 1 == o.chunks) {
      waiting_.push_back(o.held);  // every payload chunk is in place: the signal may go
      o.held = kNone;
    }
  }

  uint32_t new_chunk(const Chunk& c) {
    uint32_t id;
    if (!free_chunks_.empty()) {
      id = free_chunks_.back();
      free_chunks_.pop_back();
      chunks_[id] = c;
    } else {
      id = static_cast<uint32_t>(chunks_.size());
      chunks_.push_back(c);
    }
    return id;
  }

  char* send_slot(uint32_t s) { return st_.base + st_.layout.send_offset(s); }

  /// Takes a send slot, fills it (header now, payload by the copier) and marks the copy.
  Status stage(uint32_t id, uint32_t recv_slot) {
    Chunk& c = chunks_[id];
    c.send_slot = free_send_.back();
    free_send_.pop_back();
    c.recv_slot = recv_slot;
    c.sent = false;
    c.acked = false;
    c.staged_at = std::chrono::steady_clock::now();
    awaiting_[c.peer][recv_slot] = id;
    char* slot = send_slot(c.send_slot);
    if (c.answered) c.header.reply = st_.layout.send_offset(c.send_slot) + sizeof(StagedHeader);
    std::memcpy(slot, &c.header, sizeof(StagedHeader));
    size_t at = sizeof(StagedHeader);
    for (uint32_t m = c.header.batch ? c.next : kNone; m != kNone; m = chunks_[m].next) {
      std::memcpy(slot + at, &chunks_[m].header, sizeof(StagedHeader));
      at += sizeof(StagedHeader);
    }
    if (c.header.bytes == 0) return post_chunk(id);  // headers alone: nothing to copy first
    if (const ProxyRequest& q = ops_[c.op].req; q.inlined) {
      // The bytes came with the request (one chunk: kProxyInlineMax is far below a payload): no
      // staging copy to wait for.
      std::memcpy(slot + sizeof(StagedHeader), &q.data, c.header.bytes);
      return post_chunk(id);
    }
    GICL_CHECK(copier_->to_host(slot + sizeof(StagedHeader), heap_.base + c.src, c.header.bytes));
    return mark(kTagChunk | id);
  }

  /// The chunk's payload is in its send slot: one write with immediate into the peer's slot.
  Status post_chunk(uint32_t id) {
    Chunk& c = chunks_[id];
    ++issued_;
    take_held_ack(c.peer, send_slot(c.send_slot));
    const Status s =
        t_->write_imm(c.peer, *st_.region, send_slot(c.send_slot), st_.keys[c.peer],
                      st_.layout.recv_offset(me_, c.recv_slot), wire_bytes(c.header),
                      make_imm(kImmData, me_, c.recv_slot), kTagChunk | id, net::Completion::kSent);
    if (s.ok()) return s;
    failed_op_ = c.op;
    const std::string why = last_error();
    return GICL_FAIL(s.code(), "%s to peer %d: %s", op_name(ops_[c.op].req.op), c.peer,
                     why.c_str());
  }

  Status on_immediate(uint64_t imm) {
    const int from = imm_rank(imm);
    const uint32_t slot = imm_slot(imm);
    if (imm_kind(imm) == kImmFifo && from < st_.layout.nranks) return on_fifo(from, slot);
    if (from >= st_.layout.nranks || slot >= st_.layout.recv_slots)
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "staged network path: an immediate 0x%llx names rank %d slot %u, outside "
                       "%d ranks x %u slots",
                       static_cast<unsigned long long>(imm), from, slot, st_.layout.nranks,
                       st_.layout.recv_slots);
    if (imm_kind(imm) == kImmAck) return on_ack(from, slot);
    if (imm_kind(imm) != kImmData)
      return GICL_FAIL(GICL_REMOTE_ERROR, "staged network path: rank %d sent immediate 0x%llx",
                       from, static_cast<unsigned long long>(imm));
    // A chunk from `from` landed in its slot here: apply it to the heap, then acknowledge.
    char* slot_base = st_.base + st_.layout.recv_offset(from, slot);
    StagedHeader h;
    std::memcpy(&h, slot_base, sizeof(h));
    if (h.flags & StagedHeader::kAcked) {
      // An acknowledgement of ours riding on it: taken off the header, which then reads as one
      // written without it (the slot is this rank's until it acknowledges the chunk).
      const uint32_t acked = h.flags >> StagedHeader::kAckedShift;
      h.flags &= ~StagedHeader::kAcked & ((1u << StagedHeader::kAckedShift) - 1);
      std::memcpy(slot_base + offsetof(StagedHeader, flags), &h.flags, sizeof(h.flags));
      if (acked >= st_.layout.recv_slots)
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "staged network path: rank %d acknowledged slot %u of %u on a chunk", from,
                         acked, st_.layout.recv_slots);
      GICL_CHECK(on_ack(from, acked));
    }
    if (h.flags & StagedHeader::kBatch) return apply_batch(from, slot, slot_base, h);
    GICL_CHECK(check_header(from, h));
    return apply(from, slot, slot_base, h);
  }

  /// A batch of header-only updates: checked, rewritten in place as the copier's list (then,
  /// for fetches, their old values), applied in one step, acknowledged once.
  Status apply_batch(int from, uint32_t slot, char* slot_base, const StagedHeader& first) {
    const uint32_t n = 1 + static_cast<uint32_t>(std::min<uint64_t>(first.batch, ~0u - 1));
    const bool fetch = (first.flags & StagedHeader::kFetch) != 0;
    if (first.batch >= st_.layout.batch_max() || first.bytes != 0 ||
        (fetch && !fits(first.reply, 8 * uint64_t{n}, st_.layout.bytes())))
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "staged network path: rank %d's batch of %llu headers (%llu B of payload) "
                       "exceeds a slot's %u or its answers' place",
                       from, static_cast<unsigned long long>(first.batch) + 1,
                       static_cast<unsigned long long>(first.bytes), st_.layout.batch_max());
    // The list goes after the headers in the slot (which stays this sender's until the
    // acknowledgement): writing entry k never touches a header still to be read.
    auto* list = reinterpret_cast<WordUpdate*>(slot_base + n * sizeof(StagedHeader));
    for (uint32_t k = 0; k < n; ++k) {
      StagedHeader h;
      std::memcpy(&h, slot_base + k * sizeof(StagedHeader), sizeof(h));
      h.flags &= ~StagedHeader::kBatch;
      // Every header of a batch is of its first's class (staged_delivery.hpp).
      const bool ok = fetch ? h.flags == StagedHeader::kFetch
                            : (h.flags & ~(StagedHeader::kSignal | StagedHeader::kSignalAdd |
                                           StagedHeader::kAtomic)) == 0 &&
                                  (h.flags & (StagedHeader::kSignal | StagedHeader::kAtomic)) != 0;
      if (!ok || h.bytes != 0)
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "staged network path: rank %d's batch holds header %u of flags 0x%x and "
                         "%llu B: a batch carries fetching atomics, or signals and non-fetching "
                         "atomics, alone",
                         from, k, h.flags, static_cast<unsigned long long>(h.bytes));
      if (fetch) h.reply = first.reply;  // the answers' place, checked above for all of them
      GICL_CHECK(check_header(from, h));
      const bool signal = (h.flags & StagedHeader::kSignal) != 0;
      const ProxyAtomic op = !signal ? static_cast<ProxyAtomic>(h.atomic & 0xff)
                             : (h.flags & StagedHeader::kSignalAdd) ? ProxyAtomic::kAdd
                                                                    : ProxyAtomic::kSet;
      list[k] = WordUpdate{h.signal, h.value, h.compare, static_cast<uint32_t>(op),
                           signal ? 8u : h.atomic >> 8};
    }
    GICL_CHECK(
        copier_->update_many(heap_.base, list, n, fetch ? batch_answers(slot_base, n) : nullptr));
    return mark(kTagAck | (uint64_t(from) << 16) | slot);
  }

  /// Where a receive slot's batch of `n` fetches keeps its old values: after its headers and
  /// its update list.
  static uint64_t* batch_answers(char* slot_base, uint32_t n) {
    return reinterpret_cast<uint64_t*>(slot_base + n * (sizeof(StagedHeader) + sizeof(WordUpdate)));
  }

  /// GICL_REMOTE_ERROR where a chunk's header from `from` reaches outside this rank's heap or
  /// its slot, or names an update that does not exist.
  Status check_header(int from, const StagedHeader& h) const {
    const bool fetch = (h.flags & StagedHeader::kFetch) != 0;
    const bool get = (h.flags & StagedHeader::kGet) != 0;
    const uint32_t width =
        (h.flags & (StagedHeader::kAtomic | StagedHeader::kFetch)) ? h.atomic >> 8 : 8;
    const auto kind = static_cast<ProxyAtomic>(h.atomic & 0xff);
    const bool word =
        (h.flags & (StagedHeader::kSignal | StagedHeader::kAtomic | StagedHeader::kFetch)) != 0;
    const uint64_t answer = get ? h.value : fetch ? 8 : 0;  // bytes written back into `reply`
    if (!fits(h.dst, get ? h.value : h.bytes, heap_.bytes) ||
        (word &&
         ((width != 4 && width != 8) || h.signal % width || !fits(h.signal, width, heap_.bytes))) ||
        ((h.flags & StagedHeader::kAtomic) && static_cast<uint32_t>(kind) >= kProxyAtomicCount) ||
        (fetch && static_cast<uint32_t>(kind) >= kProxyFetchCount) ||
        (answer > 0 && (h.bytes != 0 || answer > st_.layout.payload() ||
                        !fits(h.reply, answer, st_.layout.bytes()))))
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "staged network path: rank %d's chunk (offset %llu, %llu B, signal %llu, "
                       "answer %llu B) lies outside this rank's heap of %zu B or its slot",
                       from, static_cast<unsigned long long>(h.dst),
                       static_cast<unsigned long long>(h.bytes),
                       static_cast<unsigned long long>(h.signal),
                       static_cast<unsigned long long>(answer), heap_.bytes);
    return GICL_SUCCESS;
  }

  /// One chunk's header (checked) and payload: into the heap, then the acknowledgement.
  Status apply(int from, uint32_t slot, char* slot_base, const StagedHeader& h) {
    const bool fetch = (h.flags & StagedHeader::kFetch) != 0;
    const bool get = (h.flags & StagedHeader::kGet) != 0;
    const uint32_t width =
        (h.flags & (StagedHeader::kAtomic | StagedHeader::kFetch)) ? h.atomic >> 8 : 8;
    const auto kind = static_cast<ProxyAtomic>(h.atomic & 0xff);
    // An answer goes into the receive slot's payload, which the request left empty.
    if (get) GICL_CHECK(copier_->to_host(slot_base + sizeof(h), heap_.base + h.dst, h.value));
    if (fetch)
      GICL_CHECK(copier_->fetch_update(heap_.base + h.signal, kind, width, h.value, h.compare,
                                       reinterpret_cast<uint64_t*>(slot_base + sizeof(h))));
    if (h.bytes > 0)
      GICL_CHECK(copier_->to_device(heap_.base + h.dst, slot_base + sizeof(h), h.bytes));
    if (h.flags & StagedHeader::kSignal)
      GICL_CHECK(copier_->update(
          heap_.base + h.signal,
          (h.flags & StagedHeader::kSignalAdd) ? ProxyAtomic::kAdd : ProxyAtomic::kSet, 8,
          h.value));
    if (h.flags & StagedHeader::kAtomic)
      GICL_CHECK(copier_->update(heap_.base + h.signal, kind, width, h.value));
    return mark(kTagAck | (uint64_t(from) << 16) | slot);
  }

  /// A host FIFO message or credit: one write_imm straight from the staging area.
  Status start_fifo(uint32_t cookie, const ProxyRequest& q) {
    const StagingLayout& l = st_.layout;
    const int peer = static_cast<int>(q.peer);
    const bool send = q.op == ProxyOp::kFifoSend;
    if (send ? q.dst >= l.fifo_slots() || q.bytes == 0 || q.bytes > l.fifo_slot
             : q.dst >= l.fifo_lanes && q.dst != kProxyArrivalLane)
      return GICL_FAIL(
          GICL_INVALID_ARGUMENT,
          "%s to peer %d: %s %llu with %llu bytes outside the host FIFOs (%u lanes "
          "x %u slots of %u bytes)",
          op_name(q.op), peer, send ? "slot" : "lane", static_cast<unsigned long long>(q.dst),
          static_cast<unsigned long long>(q.bytes), l.fifo_lanes, l.fifo_depth, l.fifo_slot);
    const uint32_t k = static_cast<uint32_t>(q.dst);
    if (!send) {
      // Parked until this proxy step's messages are written (progress): a credit read from the
      // ring together with the kernel's next message goes after it, off the message's way, and
      // credits for one lane leave as one write. The operation completes now: nothing waits on
      // a credit's delivery but the peer's sender, whose count it raises.
      if (parked_.empty() || parked_.back().peer != peer || parked_.back().lane != k ||
          parked_.back().count == kMaxCreditsPerWrite)
        parked_.push_back(Parked{peer, k, 0});
      ++parked_.back().count;
      completed_.push_back(cookie);
      return GICL_SUCCESS;
    }
    ++issued_;
    const Status s =
        t_->write_imm(peer, *st_.region, st_.base + l.fifo_out_offset(peer, k), st_.keys[peer],
                      l.fifo_in_offset(me_, k), q.bytes, make_imm(kImmFifo, me_, k),
                      kTagFifo | cookie, net::Completion::kSent);
    if (s.ok()) return s;
    failed_op_ = cookie;
    const std::string why = last_error();
    return GICL_FAIL(s.code(), "%s to peer %d: %s", op_name(q.op), peer, why.c_str());
  }

  /// The parked credits, one write per (peer, lane) run: its immediate carries the count, its
  /// data is 8 bytes into this rank's scratch word at the peer.
  Status send_parked_credits() {
    const StagingLayout& l = st_.layout;
    for (const Parked& c : parked_) {
      ++issued_;
      const Status s =
          t_->write_imm(c.peer, *st_.region, st_.base + l.scratch_offset(me_), st_.keys[c.peer],
                        l.scratch_offset(me_), 8,
                        make_imm(kImmFifo, me_, kFifoCreditBit | (c.count - 1) << 8 | c.lane),
                        kTagFifo | kCreditsCookie, net::Completion::kSent);
      if (!s.ok()) {
        parked_.clear();
        const std::string why = last_error();
        return GICL_FAIL(s.code(), "host FIFO credits to peer %d: %s", c.peer, why.c_str());
      }
    }
    parked_.clear();
    return GICL_SUCCESS;
  }

  /// A host FIFO immediate from `from`: a message in place in its slot, credits for a lane, or
  /// barrier arrivals (credits for kProxyArrivalLane).
  Status on_fifo(int from, uint32_t slot) {
    const StagingLayout& l = st_.layout;
    const bool credit = (slot & kFifoCreditBit) != 0;
    const uint32_t k = credit ? slot & 0xff : slot;
    const uint64_t count = credit ? ((slot & ~kFifoCreditBit) >> 8) + 1 : 1;
    if (credit && k == kProxyArrivalLane) {
      bump(st_.base + l.arrivals_offset(from), count);
      return GICL_SUCCESS;
    }
    if (credit ? k >= l.fifo_lanes : k >= l.fifo_slots())
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "staged network path: rank %d names host FIFO %s %u, outside %u lanes x "
                       "%u slots",
                       from, credit ? "lane" : "slot", k, l.fifo_lanes, l.fifo_depth);
    bump(st_.base + (credit ? l.fifo_credit_offset(from, k) : l.fifo_arrived_offset(from, k)),
         count);
    return GICL_SUCCESS;
  }

  /// Slot `slot` from `to` is applied to the heap here. An acknowledgement without an answer
  /// waits up to ack_hold_ for a chunk to `to` to ride on: written alone it costs this thread a
  /// write (over TCP a system call that runs the loopback peer's stack too, 5-6 us on 1 x H200),
  /// which the GPU's reply to what was just applied would wait behind.
  Status applied(int to, uint32_t slot) {
    const StagedHeader& h =
        *reinterpret_cast<const StagedHeader*>(st_.base + st_.layout.recv_offset(to, slot));
    if (ack_hold_.count() == 0 || (h.flags & (StagedHeader::kGet | StagedHeader::kFetch)) != 0)
      return post_ack(to, slot);
    held_acks_.push_back(HeldAck{to, slot, std::chrono::steady_clock::now() + ack_hold_});
    return GICL_SUCCESS;
  }

  /// Writes the held acknowledgements whose time is up.
  Status post_held_acks(bool* work) {
    if (held_acks_.empty()) return GICL_SUCCESS;
    *work = true;  // the proxy keeps polling while it holds one
    const auto now = std::chrono::steady_clock::now();
    while (!held_acks_.empty() && held_acks_.front().until <= now) {
      const HeldAck a = held_acks_.front();
      held_acks_.pop_front();
      GICL_CHECK(post_ack(a.peer, a.slot));
    }
    return GICL_SUCCESS;
  }

  /// Puts the oldest held acknowledgement for `peer` on the chunk in `slot` (its header).
  void take_held_ack(int peer, char* slot) {
    for (auto it = held_acks_.begin(); it != held_acks_.end(); ++it) {
      if (it->peer != peer) continue;
      uint32_t flags;
      std::memcpy(&flags, slot + offsetof(StagedHeader, flags), sizeof(flags));
      flags |= StagedHeader::kAcked | it->slot << StagedHeader::kAckedShift;
      std::memcpy(slot + offsetof(StagedHeader, flags), &flags, sizeof(flags));
      held_acks_.erase(it);
      return;
    }
  }

  /// Slot `slot` from `to` is applied to the heap here: tell its sender, with the answer where
  /// the chunk asked for one.
  Status post_ack(int to, uint32_t slot) {
    ++issued_;
    const StagingLayout& l = st_.layout;
    char* slot_base = st_.base + l.recv_offset(to, slot);
    StagedHeader h;
    std::memcpy(&h, slot_base, sizeof(h));
    const bool batch = (h.flags & StagedHeader::kBatch) != 0;
    const uint64_t answer = (h.flags & StagedHeader::kGet)     ? h.value
                            : (h.flags & StagedHeader::kFetch) ? 8 * (1 + h.batch)
                                                               : 0;
    char* from = answer == 0 ? st_.base + l.scratch_offset(me_)
                 : batch     ? reinterpret_cast<char*>(batch_answers(slot_base, 1 + h.batch))
                             : slot_base + sizeof(h);
    const Status s = t_->write_imm(
        to, *st_.region, from, st_.keys[to], answer > 0 ? h.reply : l.scratch_offset(me_),
        answer > 0 ? answer : 8, make_imm(kImmAck, me_, slot), kTagAck, net::Completion::kSent);
    if (s.ok()) return s;
    const std::string why = last_error();
    return GICL_FAIL(s.code(), "the acknowledgement to peer %d: %s", to, why.c_str());
  }

  Status on_ack(int from, uint32_t slot) {
    const uint32_t id = awaiting_[from][slot];
    if (id == kNone)
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "staged network path: rank %d acknowledged slot %u, which holds nothing",
                       from, slot);
    awaiting_[from][slot] = kNone;
    credits_[from].push_back(slot);
    Chunk& c = chunks_[id];
    if (c.answered) {
      // The answer is in this chunk's send slot (the acknowledgement's data came before it).
      const char* answer = send_slot(c.send_slot) + sizeof(StagedHeader);
      if (c.header.flags & StagedHeader::kGet) {
        GICL_CHECK(copier_->to_device(heap_.base + c.src, answer, c.header.value));
        return mark(kTagReply | id);  // done once the bytes are in the heap
      }
      // A fetch's old value; a batch of fetches', one word each in batch order.
      uint64_t old = 0;
      std::memcpy(&old, answer, sizeof(old));
      set_answer(c.op, old);
      size_t k = 1;
      for (uint32_t m = c.header.batch ? c.next : kNone; m != kNone; m = chunks_[m].next, ++k) {
        std::memcpy(&old, answer + 8 * k, sizeof(old));
        set_answer(chunks_[m].op, old);
      }
    }
    // One acknowledgement for a batch: its other chunks are applied too.
    uint32_t m = c.header.batch ? c.next : kNone;
    chunk_done(id);
    while (m != kNone) {
      const uint32_t next = chunks_[m].next;
      chunk_done(m);
      m = next;
    }
    return GICL_SUCCESS;
  }

  /// A marker for the copier's work issued so far, counted: while any is outstanding, the time
  /// of the copier's last completed marker says whether this rank's GPU runs the proxy's work.
  Status mark(uint64_t token) {
    if (marks_out_++ == 0) copier_moved_ = std::chrono::steady_clock::now();
    return copier_->mark(token);
  }

  /// Checked every 100 ms. The copier first: where this rank's GPU has run none of the proxy's
  /// work (staging copies, deliveries of peers' chunks) for half of GICL_NET_TIMEOUT, this rank
  /// fails naming itself, with the copier's state, before its peers' chunks go unacknowledged
  /// for the whole timeout and they name it as a peer that stopped serving. Then a chunk written
  /// and never acknowledged: its target stopped serving.
  Status check_timeouts() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check_) return GICL_SUCCESS;
    next_check_ = now + std::chrono::milliseconds(100);
    if (marks_out_ > 0 && now - copier_moved_ > ack_timeout_ / 2) {
      const std::string state = copier_->state();
      return GICL_FAIL(GICL_TIMEOUT,
                       "this rank's GPU ran none of the network proxy's %llu outstanding copies "
                       "and updates (staging copies, deliveries of peers' chunks) for %lld ms "
                       "(half of GICL_NET_TIMEOUT)%s%s%s",
                       static_cast<unsigned long long>(marks_out_),
                       static_cast<long long>((ack_timeout_ / 2).count()),
                       state.empty() ? "" : " (", state.c_str(), state.empty() ? "" : ")");
    }
    for (int p = 0; p < st_.layout.nranks; ++p)
      for (uint32_t id : awaiting_[p]) {
        if (id == kNone || now - chunks_[id].staged_at <= ack_timeout_) continue;
        failed_op_ = chunks_[id].op;
        return GICL_FAIL(GICL_TIMEOUT,
                         "%s to peer %d: a staged chunk was not acknowledged within %lld ms "
                         "(GICL_NET_TIMEOUT): the peer stopped serving its network path",
                         op_name(ops_[chunks_[id].op].req.op), p,
                         static_cast<long long>(ack_timeout_.count()));
      }
    return GICL_SUCCESS;
  }

  net::Transport* t_;
  int me_;
  HeapView heap_;
  StagingView st_;
  Copier* copier_;
  std::chrono::milliseconds ack_timeout_;
  std::chrono::microseconds ack_hold_;
  struct HeldAck {
    int peer;
    uint32_t slot;
    std::chrono::steady_clock::time_point until;
  };
  std::deque<HeldAck> held_acks_;  // oldest first: all wait the same ack_hold_
  std::vector<Op> ops_;            // by cookie
  struct Parked {
    int peer;
    uint32_t lane;
    uint32_t count;
  };
  std::vector<Parked> parked_;  // host FIFO credits not yet written, in the order given
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> free_chunks_;
  std::deque<uint32_t> waiting_;                 // chunks to stage, oldest first
  std::vector<uint32_t> free_send_;              // send slots
  std::vector<std::vector<uint32_t>> credits_;   // [peer]: its receive slots free for this rank
  std::vector<std::vector<uint32_t>> awaiting_;  // [peer][slot]: the chunk in it, or kNone
  std::vector<uint64_t> done_tokens_;
  std::chrono::steady_clock::time_point next_check_{};
  uint64_t marks_out_ = 0;  // copier markers issued and not yet completed
  std::chrono::steady_clock::time_point copier_moved_{};  // its last completion, or first mark
};

}  // namespace

std::unique_ptr<Delivery> make_staged_delivery(net::Transport* t, int rank, const HeapView& heap,
                                               const StagingView& staging, Copier* copier,
                                               std::chrono::milliseconds ack_timeout,
                                               std::chrono::microseconds ack_hold) {
  return std::make_unique<StagedDelivery>(t, rank, heap, staging, copier, ack_timeout, ack_hold);
}

}  // namespace gicl::proxy
