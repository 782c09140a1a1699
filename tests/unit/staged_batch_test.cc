// SPDX-License-Identifier: Apache-2.0
// The staged delivery between two ranks in one process, over a fabric emulator: a transport pair
// whose write_imm copies the bytes into the other rank's staging area and hands it the
// immediate, and completes the write here, when the test lets the events through. Header-only
// operations waiting for one peer leave as one batched chunk (one write, one credit), the target
// applies every one and acknowledges once, and each completes; fetching atomics batch among
// themselves and each gets its own answer; a batch never mixes peers or classes; a malformed
// batch from a peer is refused naming it. A put small enough to bring its bytes in the request
// takes no staging copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "proxy/host_copier.hpp"
#include "proxy/proxy_ops.hpp"
#include "proxy/staged_delivery.hpp"

namespace gicl::proxy {
namespace {

/// One rank's side of the emulated fabric: writes land in the peer's staging area at once; the
/// peer's immediate and this side's completion wait in queues until the test delivers them.
class EmulatedTransport : public net::Transport {
 public:
  EmulatedTransport(int rank, std::vector<char>* peer_staging, EmulatedTransport** peer)
      : rank_(rank), peer_staging_(peer_staging), peer_(peer) {}
  net::Backend backend() const override { return net::Backend::kNull; }
  std::string provider() const override { return "emulated"; }
  std::string describe() const override { return "emulated fabric (test)"; }
  net::Caps caps() const override { return {false, false, size_t{1} << 30, 4}; }
  size_t address_bytes() const override { return 8; }
  Status local_address(void*) const override { return GICL_SUCCESS; }
  Status connect(const void*, size_t) override { return GICL_SUCCESS; }
  Status register_memory(void*, size_t, net::MemKind, std::unique_ptr<net::Region>*) override {
    return GICL_FAIL(GICL_UNSUPPORTED, "emulated fabric: regions come from the test");
  }
  Status write(int, const net::Region&, const void*, const net::RemoteKey&, uint64_t, size_t,
               uint64_t) override {
    return GICL_FAIL(GICL_UNSUPPORTED, "emulated fabric: write_imm only");
  }
  Status write_imm(int peer, const net::Region&, const void* src, const net::RemoteKey&,
                   uint64_t off, size_t bytes, uint64_t imm, uint64_t cookie,
                   net::Completion) override {
    EXPECT_EQ(peer, 1 - rank_);
    EXPECT_LE(off + bytes, peer_staging_->size());
    std::memcpy(peer_staging_->data() + off, src, bytes);
    writes.push_back(bytes);
    net::Event landed;
    landed.kind = net::EventKind::kImmediate;
    landed.value = imm;
    (*peer_)->arrived.push_back(landed);
    net::Event done;
    done.peer = peer;
    done.cookie = cookie;
    completions.push_back(done);
    return GICL_SUCCESS;
  }
  Status read(int, const net::Region&, void*, const net::RemoteKey&, uint64_t, size_t,
              uint64_t) override {
    return GICL_FAIL(GICL_UNSUPPORTED, "emulated fabric: no reads");
  }
  Status atomic(int, net::AtomicOp, const net::RemoteKey&, uint64_t, uint64_t, uint64_t,
                uint64_t) override {
    return GICL_FAIL(GICL_UNSUPPORTED, "emulated fabric: no atomics");
  }
  Status flush(int, uint64_t) override { return GICL_FAIL(GICL_UNSUPPORTED, "not used"); }
  Status poll(net::Event*, int, int* count) override {
    *count = 0;  // the test hands events to the delivery itself
    return GICL_SUCCESS;
  }
  int inflight() const override { return 0; }

  std::vector<size_t> writes;          // bytes of every write_imm posted here
  std::deque<net::Event> arrived;      // immediates from the peer
  std::deque<net::Event> completions;  // this side's writes, delivered

 private:
  int rank_;
  std::vector<char>* peer_staging_;
  EmulatedTransport** peer_;
};

class HostRegion : public net::Region {
 public:
  HostRegion(void* base, size_t bytes) {
    base_ = base;
    bytes_ = bytes;
  }
};

constexpr size_t kHeap = 4096;

StagingLayout layout() {
  StagingLayout l;
  l.chunk = 8 << 10;
  l.send_slots = 4;
  l.recv_slots = 2;
  l.nranks = 2;
  return l;
}

/// Two ranks, each a heap, a staging area laid out as `l` and a staged delivery over the
/// emulated fabric.
struct Pair {
  explicit Pair(const StagingLayout& l = layout(),
                std::chrono::microseconds ack_hold = std::chrono::microseconds(0),
                std::chrono::milliseconds ack_timeout = std::chrono::seconds(10)) {
    for (int r = 0; r < 2; ++r) {
      staging[r].assign(l.bytes(), 0);
      heap[r].assign(kHeap, 0);
    }
    for (int r = 0; r < 2; ++r) {
      t[r] = std::make_unique<EmulatedTransport>(r, &staging[1 - r], &peer_of[r]);
      region[r] = std::make_unique<HostRegion>(staging[r].data(), staging[r].size());
    }
    peer_of[0] = t[1].get();
    peer_of[1] = t[0].get();
    net::RemoteKey bound{};
    bound.bytes = kHeap;
    for (int r = 0; r < 2; ++r) {
      StagingView sv;
      sv.layout = l;
      sv.base = staging[r].data();
      sv.region = region[r].get();
      sv.keys.assign(2, net::RemoteKey{});
      HeapView hv{heap[r].data(), kHeap, nullptr, std::vector<net::RemoteKey>(2, bound)};
      d[r] = make_staged_delivery(t[r].get(), r, hv, sv, &copier[r], ack_timeout, ack_hold);
    }
  }
  /// Runs both sides until neither has anything left to do.
  void settle() { run(-1); }
  /// Runs both sides `rounds` times: enough for what the emulated fabric and the host copier
  /// complete at once, where a held acknowledgement keeps a side busy.
  void pump(int rounds = 50) { run(rounds); }
  void run(int rounds) {
    for (bool busy = true; rounds < 0 ? busy : rounds-- > 0;) {
      busy = false;
      for (int r = 0; r < 2; ++r) ASSERT_TRUE(step(r, &busy).ok()) << last_error();
    }
  }
  /// One progress of side r and the events its fabric delivered; `busy` set where it did work.
  Status step(int r, bool* busy) {
    bool work = false;
    GICL_CHECK(d[r]->progress(&work));
    *busy |= work;
    for (auto* q : {&t[r]->arrived, &t[r]->completions})
      while (!q->empty()) {
        const net::Event e = q->front();
        q->pop_front();
        GICL_CHECK(d[r]->on_event(e));
        *busy = true;
      }
    return GICL_SUCCESS;
  }
  uint64_t word64(int r, size_t off) const {
    uint64_t v;
    std::memcpy(&v, heap[r].data() + off, 8);
    return v;
  }
  uint64_t staged64(int r, size_t off) const {
    uint64_t v;
    std::memcpy(&v, staging[r].data() + off, 8);
    return v;
  }

  std::vector<char> staging[2], heap[2];
  std::unique_ptr<EmulatedTransport> t[2];
  EmulatedTransport* peer_of[2] = {};
  std::unique_ptr<HostRegion> region[2];
  HostCopier copier[2];
  std::unique_ptr<Delivery> d[2];
};

ProxyRequest atomic_req(ProxyAtomic a, uint32_t width, uint64_t word, uint64_t value) {
  ProxyRequest q{};
  q.op = ProxyOp::kAtomic;
  q.peer = 1;
  q.atomic = a;
  q.bytes = width;
  q.signal = word;
  q.value = value;
  return q;
}

// A put of at most kProxyInlineMax bytes that brought them in its request: its chunk carries
// those bytes (the sender's heap is never read, no staging copy runs), they land at the target
// at any alignment without touching a neighbour, and a signal after them is applied. The same put
// read from the heap takes its staging copy.
TEST(StagedBatch, AnInlinePutCarriesItsRequestsBytesWithoutAStagingCopy) {
  Pair p;
  std::memset(p.heap[0].data(), 0xee, kHeap);  // what a read of the sender's heap would carry
  uint32_t cookie = 0;
  for (uint32_t bytes = 1; bytes <= kProxyInlineMax; ++bytes) {
    ProxyRequest q{};
    q.op = bytes == kProxyInlineMax ? ProxyOp::kPutSignalAdd : ProxyOp::kPut;
    q.peer = 1;
    q.inlined = true;
    q.bytes = bytes;
    q.dst = 64 * bytes + bytes;  // misaligned by `bytes`
    q.data = 0x0807060504030201ull & (bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1);
    q.signal = 2048;
    q.value = 3;
    ASSERT_TRUE(p.d[0]->start(cookie++, q).ok()) << last_error();
  }
  p.settle();
  EXPECT_EQ(p.copier[0].to_host_calls, 0u);
  ASSERT_EQ(p.t[0]->writes.size(), kProxyInlineMax);
  for (uint32_t bytes = 1; bytes <= kProxyInlineMax; ++bytes) {
    EXPECT_EQ(p.t[0]->writes[bytes - 1], sizeof(StagedHeader) + bytes);
    const auto* at = reinterpret_cast<const unsigned char*>(p.heap[1].data()) + 65 * bytes;
    EXPECT_EQ(at[-1], 0) << bytes << " B: the byte before";
    for (uint32_t i = 0; i < bytes; ++i) EXPECT_EQ(at[i], i + 1) << bytes << " B, byte " << i;
    EXPECT_EQ(at[bytes], 0) << bytes << " B: the byte after";
  }
  EXPECT_EQ(p.word64(1, 2048), 3u);
  EXPECT_EQ(p.d[0]->completed().size(), kProxyInlineMax);
  ProxyRequest q{};
  q.op = ProxyOp::kPut;
  q.peer = 1;
  q.bytes = 8;
  q.dst = 1024;
  ASSERT_TRUE(p.d[0]->start(cookie++, q).ok()) << last_error();
  p.settle();
  EXPECT_EQ(p.copier[0].to_host_calls, 1u);
  EXPECT_EQ(p.word64(1, 1024), 0xeeeeeeeeeeeeeeeeull);
}

// A rank whose GPU runs none of the copier's work fails at half of GICL_NET_TIMEOUT naming
// itself, with the copier's state: as the sender (its staging copy never completes) and as the
// target (a peer's chunk arrives and its delivery never completes), where the sender, whose chunk
// goes unacknowledged, would name it as a peer that stopped serving only at the whole timeout.
// A chunk posted to a peer that never runs is blamed on the peer.
TEST(StagedBatch, AStuckCopierNamesItsOwnRankBeforeThePeerBlamesIt) {
  enum Case { kSenderStuck, kTargetStuck, kTargetSilent };
  for (const Case c : {kSenderStuck, kTargetStuck, kTargetSilent}) {
    Pair p(layout(), std::chrono::microseconds(0), std::chrono::milliseconds(1000));
    p.copier[0].hold_marks = c == kSenderStuck;
    p.copier[1].hold_marks = c == kTargetStuck;
    ProxyRequest q{};
    q.op = ProxyOp::kPut;
    q.peer = 1;
    q.bytes = 100;
    ASSERT_TRUE(p.d[0]->start(0, q).ok()) << last_error();
    const auto t0 = std::chrono::steady_clock::now();
    const auto until = t0 + std::chrono::seconds(5);
    Status s = GICL_SUCCESS;
    int failed = -1;
    while (failed < 0 && std::chrono::steady_clock::now() < until) {
      for (int r = 0; r < (c == kTargetSilent ? 1 : 2) && failed < 0; ++r) {
        bool busy = false;
        s = p.step(r, &busy);
        if (!s.ok()) failed = r;
      }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_GE(failed, 0) << "case " << c << ": nobody failed within 5 s";
    const std::string why = last_error();
    EXPECT_EQ(s.code(), GICL_TIMEOUT) << why;
    EXPECT_EQ(failed, c == kTargetStuck ? 1 : 0) << why;
    if (c == kTargetSilent) {
      EXPECT_NE(why.find("was not acknowledged within 1000 ms"), std::string::npos) << why;
      EXPECT_GE(ms, 1000) << why;
    } else {
      EXPECT_NE(why.find("this rank's GPU ran none of the network proxy's 1 outstanding"),
                std::string::npos)
          << why;
      EXPECT_NE(why.find("for 500 ms (half of GICL_NET_TIMEOUT) (host copier: 1 markers held)"),
                std::string::npos)
          << why;
      EXPECT_GE(ms, 500) << why;
      EXPECT_LT(ms, 1000) << "case " << c << ": the peer's timeout would have come first; " << why;
    }
    EXPECT_EQ(p.t[0]->writes.size(), c == kSenderStuck ? 0u : 1u);
  }
}

TEST(StagedBatch, HeaderOnlyOperationsToOnePeerLeaveAsOneChunk) {
  Pair p;
  // 40 64-bit adds, 10 32-bit ors and 10 signal adds, all started before the proxy progresses.
  uint32_t cookie = 0;
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(p.d[0]->start(cookie++, atomic_req(ProxyAtomic::kAdd, 8, 0, 3)).ok());
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(p.d[0]->start(cookie++, atomic_req(ProxyAtomic::kOr, 4, 12, 1u << i)).ok());
  for (int i = 0; i < 10; ++i) {
    ProxyRequest q{};
    q.op = ProxyOp::kSignalAdd;
    q.peer = 1;
    q.signal = 16;
    q.value = 5;
    ASSERT_TRUE(p.d[0]->start(cookie++, q).ok());
  }
  p.settle();
  // batch_max() headers fit one 8 KiB slot: the 60 operations took one write.
  ASSERT_GE(layout().batch_max(), 60u);
  ASSERT_EQ(p.t[0]->writes.size(), 1u);
  EXPECT_EQ(p.t[0]->writes[0], 60 * sizeof(StagedHeader));
  EXPECT_EQ(p.t[1]->writes.size(), 1u);  // one acknowledgement
  EXPECT_EQ(p.word64(1, 0), 120u);
  uint32_t ors;
  std::memcpy(&ors, p.heap[1].data() + 12, 4);
  EXPECT_EQ(ors, 0x3ffu);
  EXPECT_EQ(p.word64(1, 8) & 0xffffffffu, 0u) << "the 32-bit or touched its neighbour";
  EXPECT_EQ(p.word64(1, 16), 50u);
  std::vector<uint32_t> done = p.d[0]->completed();
  std::sort(done.begin(), done.end());
  ASSERT_EQ(done.size(), 60u);
  for (uint32_t i = 0; i < 60; ++i) EXPECT_EQ(done[i], i);
}

TEST(StagedBatch, ABatchHoldsAtMostASlotsHeadersOfOneClass) {
  Pair p;
  const uint32_t max = layout().batch_max();
  uint32_t cookie = 0;
  for (uint32_t i = 0; i < max + 5; ++i)
    ASSERT_TRUE(p.d[0]->start(cookie++, atomic_req(ProxyAtomic::kAdd, 8, 0, 1)).ok());
  // A fetching atomic (it needs an answer) joins no batch of updates; alone, it is one chunk.
  ProxyRequest f = atomic_req(ProxyAtomic::kAdd, 8, 24, 7);
  f.op = ProxyOp::kFetch;
  ASSERT_TRUE(p.d[0]->start(cookie++, f).ok());
  p.settle();
  ASSERT_EQ(p.t[0]->writes.size(), 3u);
  EXPECT_EQ(p.t[0]->writes[0], max * sizeof(StagedHeader));
  EXPECT_EQ(p.t[0]->writes[1], 5 * sizeof(StagedHeader));
  EXPECT_EQ(p.t[0]->writes[2], sizeof(StagedHeader));
  EXPECT_EQ(p.word64(1, 0), max + 5u);
  EXPECT_EQ(p.word64(1, 24), 7u);
  EXPECT_EQ(p.d[0]->completed().size(), max + 6u);
  EXPECT_EQ(p.d[0]->answer(max + 5), 0u);  // the fetch-add's old value
}

TEST(StagedBatch, FetchingAtomicsShareAChunkAndEachGetsItsOwnAnswer) {
  Pair p;
  // 30 fetch-adds of 1 on one word, then compare-swaps of 0 -> 100 + i on another (the first
  // wins), all in one batch: the answers are the word's values in batch order.
  uint32_t cookie = 0;
  for (int i = 0; i < 30; ++i) {
    ProxyRequest q = atomic_req(ProxyAtomic::kAdd, 8, 0, 1);
    q.op = ProxyOp::kFetch;
    ASSERT_TRUE(p.d[0]->start(cookie++, q).ok());
  }
  for (int i = 0; i < 5; ++i) {
    ProxyRequest q = atomic_req(ProxyAtomic::kCompareSwap, 4, 12, 100 + i);
    q.op = ProxyOp::kFetch;
    q.compare = 0;
    ASSERT_TRUE(p.d[0]->start(cookie++, q).ok());
  }
  p.settle();
  ASSERT_EQ(p.t[0]->writes.size(), 1u);
  EXPECT_EQ(p.t[0]->writes[0], 35 * sizeof(StagedHeader));
  ASSERT_EQ(p.t[1]->writes.size(), 1u);
  EXPECT_EQ(p.t[1]->writes[0], 35 * 8u);  // the answers, with the acknowledgement
  EXPECT_EQ(p.word64(1, 0), 30u);
  ASSERT_EQ(p.d[0]->completed().size(), 35u);
  for (uint32_t i = 0; i < 30; ++i) EXPECT_EQ(p.d[0]->answer(i), i) << "fetch-add " << i;
  EXPECT_EQ(p.d[0]->answer(30), 0u);
  for (uint32_t i = 31; i < 35; ++i) EXPECT_EQ(p.d[0]->answer(i), 100u) << "compare-swap " << i;
}

TEST(StagedBatch, AMalformedBatchIsRefusedNamingItsSender) {
  Pair p;
  // Rank 0 "sends" a batch whose second header carries a payload: refused at rank 1.
  StagedHeader h[2] = {};
  h[0].flags = StagedHeader::kAtomic | StagedHeader::kBatch;
  h[0].atomic = static_cast<uint32_t>(ProxyAtomic::kAdd) | 8u << 8;
  h[0].batch = 1;
  h[1].flags = StagedHeader::kSignal;
  h[1].bytes = 64;
  const size_t at = layout().recv_offset(0, 0);
  // The immediate of a data chunk from rank 0 into slot 0: what a write of rank 0 carries.
  ASSERT_TRUE(p.d[0]->start(0, atomic_req(ProxyAtomic::kAdd, 8, 0, 1)).ok());
  bool work = false;
  ASSERT_TRUE(p.d[0]->progress(&work).ok());
  ASSERT_EQ(p.t[1]->arrived.size(), 1u);
  const net::Event imm = p.t[1]->arrived.front();
  std::memcpy(p.staging[1].data() + at, h, sizeof(h));  // replaces what rank 0 wrote
  const Status s = p.d[1]->on_event(imm);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), GICL_REMOTE_ERROR);
  EXPECT_NE(std::string(last_error()).find("rank 0's batch"), std::string::npos) << last_error();
}

/// Host FIFO credits wait for the messages of the same proxy step: a message started after them
/// leaves first, and a run of credits for one lane leaves as one write whose immediate carries the
/// count. Each credit completes when started; the peer's counters end exact.
TEST(StagedBatch, CreditsFollowTheStepsMessageAndALanesRunLeavesAsOneWrite) {
  StagingLayout l = layout();
  l.fifo_lanes = 2;
  l.fifo_depth = 2;
  l.fifo_slot = 4096;
  Pair p(l);
  auto credit = [](uint32_t lane) {
    ProxyRequest q{};
    q.op = ProxyOp::kFifoCredit;
    q.peer = 0;
    q.dst = lane;
    return q;
  };
  uint32_t cookie = 0;
  for (uint32_t lane : {1u, 1u, 1u, 0u, 1u, 1u})
    ASSERT_TRUE(p.d[1]->start(cookie++, credit(lane)).ok()) << last_error();
  EXPECT_EQ(p.d[1]->completed().size(), 6u);
  ProxyRequest msg{};
  msg.op = ProxyOp::kFifoSend;
  msg.peer = 0;
  msg.dst = 0;  // slot 0 (lane 0)
  msg.bytes = 100;
  ASSERT_TRUE(p.d[1]->start(cookie++, msg).ok()) << last_error();
  p.settle();
  ASSERT_EQ(p.t[1]->writes.size(), 4u);
  EXPECT_EQ(p.t[1]->writes[0], 100u) << "the message leaves before the parked credits";
  for (int i = 1; i < 4; ++i) EXPECT_EQ(p.t[1]->writes[i], 8u);
  EXPECT_EQ(p.staged64(0, l.fifo_credit_offset(1, 1)), 5u);
  EXPECT_EQ(p.staged64(0, l.fifo_credit_offset(1, 0)), 1u);
  EXPECT_EQ(p.staged64(0, l.fifo_arrived_offset(1, 0)), 1u);
  EXPECT_EQ(p.d[1]->completed().size(), 7u);
}

ProxyRequest signal_req(uint32_t peer, uint64_t word, uint64_t value) {
  ProxyRequest q{};
  q.op = ProxyOp::kSignalAdd;
  q.peer = peer;
  q.signal = word;
  q.value = value;
  return q;
}

/// A held acknowledgement is written by no one until a chunk goes back to its sender, which
/// carries it: that chunk is the target's only write, and the sender's operation completes when
/// the chunk lands.
TEST(StagedBatch, AHeldAcknowledgementRidesOnTheNextChunkBackToItsSender) {
  Pair p(layout(), std::chrono::seconds(100));  // held for longer than the test runs
  ASSERT_TRUE(p.d[0]->start(7, signal_req(1, 16, 5)).ok()) << last_error();
  p.pump();
  EXPECT_EQ(p.word64(1, 16), 5u) << "applied at the target";
  EXPECT_TRUE(p.t[1]->writes.empty()) << "the acknowledgement is held";
  EXPECT_TRUE(p.d[0]->completed().empty()) << "not complete before it is acknowledged";
  ASSERT_TRUE(p.d[1]->start(3, signal_req(0, 24, 2)).ok()) << last_error();
  p.pump();
  EXPECT_EQ(p.word64(0, 24), 2u);
  ASSERT_EQ(p.t[1]->writes.size(), 1u) << "the acknowledgement rode on the chunk";
  EXPECT_EQ(p.t[1]->writes[0], sizeof(StagedHeader));
  ASSERT_EQ(p.d[0]->completed().size(), 1u);
  EXPECT_EQ(p.d[0]->completed()[0], 7u);
  EXPECT_TRUE(p.d[1]->completed().empty()) << "rank 0 holds the acknowledgement of its chunk";
  // The slot it freed takes the next chunk: rank 0's recv_slots (2) are used again and again.
  p.d[0]->completed().clear();
  for (uint32_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(p.d[0]->start(10 + i, signal_req(1, 32, 1)).ok()) << last_error();
    p.pump();
    ASSERT_TRUE(p.d[1]->start(20 + i, signal_req(0, 40, 1)).ok()) << last_error();
    p.pump();
  }
  EXPECT_EQ(p.word64(1, 32), 6u);
  EXPECT_EQ(p.word64(0, 40), 6u);
  EXPECT_EQ(p.t[0]->writes.size(), 7u) << "chunks only, each carrying the last acknowledgement";
  EXPECT_EQ(p.d[0]->completed().size(), 6u);
}

/// With nothing going back, a held acknowledgement is written alone once its hold is over.
TEST(StagedBatch, AHeldAcknowledgementIsWrittenAloneAfterItsHold) {
  Pair p(layout(), std::chrono::microseconds(2000));
  ASSERT_TRUE(p.d[0]->start(7, signal_req(1, 16, 5)).ok()) << last_error();
  const auto t0 = std::chrono::steady_clock::now();
  p.settle();  // busy while the acknowledgement is held
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::microseconds(2000));
  ASSERT_EQ(p.t[1]->writes.size(), 1u);
  EXPECT_EQ(p.t[1]->writes[0], 8u) << "an acknowledgement alone";
  ASSERT_EQ(p.d[0]->completed().size(), 1u);
  EXPECT_EQ(p.d[0]->completed()[0], 7u);
}

/// A get's acknowledgement carries its answer: never held.
TEST(StagedBatch, AnAnswerIsNeverHeld) {
  Pair p(layout(), std::chrono::seconds(100));
  std::memcpy(p.heap[1].data() + 64, "abcdefgh", 8);
  ProxyRequest q{};
  q.op = ProxyOp::kGet;
  q.peer = 1;
  q.dst = 128;
  q.src = 64;
  q.bytes = 8;
  ASSERT_TRUE(p.d[0]->start(4, q).ok()) << last_error();
  p.pump();
  ASSERT_EQ(p.d[0]->completed().size(), 1u);
  EXPECT_EQ(std::memcmp(p.heap[0].data() + 128, "abcdefgh", 8), 0);
}

/// Barrier arrivals (credits on kProxyArrivalLane) count in the target's arrivals word for their
/// sender, apart from the host FIFOs' credits, whether or not the area has host FIFOs; a run of
/// them leaves as one write; each completes when started.
TEST(StagedBatch, BarrierArrivalsAreCountedInTheArrivalsWord) {
  for (uint32_t lanes : {0u, 2u}) {
    SCOPED_TRACE("lanes=" + std::to_string(lanes));
    StagingLayout l = layout();
    l.fifo_lanes = lanes;
    l.fifo_depth = lanes ? 2 : 0;
    l.fifo_slot = lanes ? 4096 : 0;
    Pair p(l);
    auto credit = [](int peer, uint32_t lane) {
      ProxyRequest q{};
      q.op = ProxyOp::kFifoCredit;
      q.peer = static_cast<uint32_t>(peer);
      q.dst = lane;
      return q;
    };
    uint32_t cookie = 0;
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(p.d[1]->start(cookie++, credit(0, kProxyArrivalLane)).ok()) << last_error();
    if (lanes) {
      ASSERT_TRUE(p.d[1]->start(cookie++, credit(0, 1)).ok()) << last_error();
    }
    ASSERT_TRUE(p.d[0]->start(0, credit(1, kProxyArrivalLane)).ok()) << last_error();
    EXPECT_EQ(p.d[1]->completed().size(), cookie);
    p.settle();
    EXPECT_EQ(p.staged64(0, l.arrivals_offset(1)), 3u);
    EXPECT_EQ(p.staged64(0, l.arrivals_offset(0)), 0u);
    EXPECT_EQ(p.staged64(1, l.arrivals_offset(0)), 1u);
    ASSERT_EQ(p.t[1]->writes.size(), lanes ? 2u : 1u) << "one write per lane's run";
    if (lanes) {
      EXPECT_EQ(p.staged64(0, l.fifo_credit_offset(1, 1)), 1u);
      EXPECT_EQ(p.staged64(0, l.fifo_credit_offset(1, 0)), 0u);
    }
  }
}

}  // namespace
}  // namespace gicl::proxy
