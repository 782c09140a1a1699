// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "proxy/delivery.hpp"
#include "proxy/proxy_ops.hpp"

namespace gicl::proxy {
namespace {

class DirectDelivery : public Delivery {
 public:
  DirectDelivery(net::Transport* t, const HeapView& heap) : t_(t), heap_(heap) {
    const size_t max_write = t->caps().max_write;
    max_piece_ = max_write > 0 ? max_write : size_t{1} << 30;
  }

  Status start(uint32_t cookie, const ProxyRequest& q) override {
    if (q.op == ProxyOp::kFifoSend || q.op == ProxyOp::kFifoCredit)
      return GICL_FAIL(GICL_INTERNAL_ERROR,
                       "%s to peer %u: host FIFOs exist only on the staged network path",
                       op_name(q.op), q.peer);
    if (cookie >= ops_.size()) ops_.resize(cookie + 1);
    if (q.op == ProxyOp::kAtomic || q.op == ProxyOp::kFetch) return start_word(cookie, q);
    ops_[cookie] = Op{q, 0, has_signal(q.op) && has_transfer(q.op)};
    if (!has_transfer(q.op) || q.bytes == 0) {
      ops_[cookie].signal_pending = false;
      if (!has_signal(q.op)) {
        completed_.push_back(cookie);  // an empty put: nothing to move
        return GICL_SUCCESS;
      }
      return post_signal(cookie);
    }
    return post_transfer(cookie);
  }

  Status on_event(const net::Event& e) override {
    if (e.kind != net::EventKind::kDone) return GICL_SUCCESS;  // no immediates in this path
    const uint32_t cookie = static_cast<uint32_t>(e.cookie);
    Op& o = ops_[cookie];
    if (e.status != GICL_SUCCESS) {
      failed_op_ = cookie;
      return GICL_FAIL(e.status, "%s to peer %u failed: %s", op_name(o.req.op), o.req.peer,
                       gicl_get_error_string(e.status));
    }
    if (o.word != WordStage::kNone) return on_word(cookie, e.value);
    if (--o.parts > 0) return GICL_SUCCESS;
    if (o.signal_pending) {
      o.signal_pending = false;  // every piece is delivered: the signal may go
      return post_signal(cookie);
    }
    completed_.push_back(cookie);
    return GICL_SUCCESS;
  }

  Status progress(bool* work) override {
    *work = false;
    return GICL_SUCCESS;
  }

 private:
  // An atomic (kAtomic, kFetch) is one transport atomic where the transport has it (64-bit add,
  // fetch-add, swap, compare-swap; a load is a fetch-add of 0), else a compare-swap loop on the
  // aligned 64-bit word that holds it: read the word, compute the update, swap it in where the
  // word still holds what was read, again with what it held instead until it does.
  enum class WordStage : uint8_t { kNone, kNative, kReading, kSwapping };

  struct Op {
    ProxyRequest req;
    uint32_t parts;       // transport operations of the current stage not yet done
    bool signal_pending;  // a put's signal, posted once its pieces are delivered
    WordStage word = WordStage::kNone;
    uint64_t old = 0;  // the compare-swap loop: what the 64-bit word held when last read
  };

  static uint64_t width_mask(uint32_t width) { return width == 8 ? ~0ull : 0xffffffffull; }
  /// The bit offset of the request's word in its aligned 64-bit word (little-endian).
  static uint32_t shift_of(const ProxyRequest& q) {
    return static_cast<uint32_t>(q.signal & 7) * 8;
  }

  Status start_word(uint32_t cookie, const ProxyRequest& q) {
    ops_[cookie] = Op{q, 1, false};
    Op& o = ops_[cookie];
    const bool fetch = q.op == ProxyOp::kFetch;
    net::AtomicOp native = net::AtomicOp::kAdd;
    bool have = q.bytes == 8;
    uint64_t operand = q.value;
    switch (q.atomic) {
      case ProxyAtomic::kAdd:
        native = fetch ? net::AtomicOp::kFetchAdd : net::AtomicOp::kAdd;
        break;
      case ProxyAtomic::kSet:
        native = net::AtomicOp::kSwap;
        break;
      case ProxyAtomic::kCompareSwap:
        native = net::AtomicOp::kCompareSwap;
        break;
      case ProxyAtomic::kLoad:
        native = net::AtomicOp::kFetchAdd;
        operand = 0;
        break;
      default:
        have = false;  // and, or, xor
    }
    ++issued_;
    if (have) {
      o.word = WordStage::kNative;
      return t_->atomic(static_cast<int>(q.peer), native, heap_.keys[q.peer], q.signal, operand,
                        q.compare, cookie);
    }
    const uint64_t word = q.signal & ~uint64_t{7};
    if (!fits(word, 8, heap_.keys[q.peer].bytes))
      return GICL_FAIL(GICL_INVALID_ARGUMENT,
                       "atomic %s to peer %u: the 64-bit word at offset %llu holding it is not "
                       "inside the peer's heap",
                       atomic_name(q.atomic), q.peer, static_cast<unsigned long long>(word));
    o.word = WordStage::kReading;
    return t_->atomic(static_cast<int>(q.peer), net::AtomicOp::kFetchAdd, heap_.keys[q.peer], word,
                      0, 0, cookie);
  }

  /// A transport atomic of operation `cookie` answered `value` (the old 64-bit word).
  Status on_word(uint32_t cookie, uint64_t value) {
    Op& o = ops_[cookie];
    const ProxyRequest& q = o.req;
    if (o.word == WordStage::kNative) return word_done(cookie, value);
    if (o.word == WordStage::kSwapping && value == o.old)  // swapped in
      return word_done(cookie, (o.old >> shift_of(q)) & width_mask(q.bytes));
    o.old = value;
    const uint32_t shift = shift_of(q);
    const uint64_t mask = width_mask(q.bytes);
    const uint64_t was = (value >> shift) & mask, v = q.value & mask;
    uint64_t now = was;
    switch (q.atomic) {
      case ProxyAtomic::kSet:
        now = v;
        break;
      case ProxyAtomic::kAdd:
        now = (was + v) & mask;
        break;
      case ProxyAtomic::kAnd:
        now = was & v;
        break;
      case ProxyAtomic::kOr:
        now = was | v;
        break;
      case ProxyAtomic::kXor:
        now = was ^ v;
        break;
      case ProxyAtomic::kCompareSwap:
        now = was == (q.compare & mask) ? v : was;
        break;
      case ProxyAtomic::kLoad:
        break;
    }
    if (now == was) return word_done(cookie, was);  // nothing to store: done as read
    const uint64_t next = (value & ~(mask << shift)) | (now << shift);
    o.word = WordStage::kSwapping;
    ++issued_;
    return t_->atomic(static_cast<int>(q.peer), net::AtomicOp::kCompareSwap, heap_.keys[q.peer],
                      q.signal & ~uint64_t{7}, next, value, cookie);
  }

  Status word_done(uint32_t cookie, uint64_t old) {
    if (ops_[cookie].req.op == ProxyOp::kFetch) set_answer(cookie, old);
    ops_[cookie].word = WordStage::kNone;
    completed_.push_back(cookie);
    return GICL_SUCCESS;
  }

  Status post_transfer(uint32_t cookie) {
    const ProxyRequest q = ops_[cookie].req;
    const net::RemoteKey& key = heap_.keys[q.peer];
    const int peer = static_cast<int>(q.peer);
    for (uint64_t off = 0; off < q.bytes; off += max_piece_) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(max_piece_, q.bytes - off));
      ++ops_[cookie].parts;  // before the post: a post may poll and complete earlier pieces
      if (q.op == ProxyOp::kGet)
        GICL_CHECK(
            t_->read(peer, *heap_.region, heap_.base + q.dst + off, key, q.src + off, len, cookie));
      else
        GICL_CHECK(t_->write(peer, *heap_.region, heap_.base + q.src + off, key, q.dst + off, len,
                             cookie));
      ++issued_;
    }
    return GICL_SUCCESS;
  }

  Status post_signal(uint32_t cookie) {
    const ProxyRequest q = ops_[cookie].req;
    ops_[cookie].parts = 1;
    GICL_CHECK(t_->atomic(static_cast<int>(q.peer),
                          signal_adds(q.op) ? net::AtomicOp::kAdd : net::AtomicOp::kSwap,
                          heap_.keys[q.peer], q.signal, q.value, 0, cookie));
    ++issued_;
    return GICL_SUCCESS;
  }

  net::Transport* t_;
  HeapView heap_;
  size_t max_piece_;
  std::vector<Op> ops_;  // by cookie
};

}  // namespace

std::unique_ptr<Delivery> make_direct_delivery(net::Transport* t, const HeapView& heap) {
  return std::make_unique<DirectDelivery>(t, heap);
}

}  // namespace gicl::proxy
