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
    if (q.op == ProxyOp::kAtomic) {
      // The transport's atomics: 64-bit add and swap (a set) only.
      if (q.bytes != 8 || (q.atomic != ProxyAtomic::kAdd && q.atomic != ProxyAtomic::kSet))
        return GICL_FAIL(GICL_UNSUPPORTED,
                         "atomic %s of %llu bytes to peer %u: the direct network path carries "
                         "64-bit add and set only",
                         atomic_name(q.atomic), static_cast<unsigned long long>(q.bytes), q.peer);
      ops_[cookie] = Op{q, 1, false};
      GICL_CHECK(
          t_->atomic(static_cast<int>(q.peer),
                     q.atomic == ProxyAtomic::kAdd ? net::AtomicOp::kAdd : net::AtomicOp::kSwap,
                     heap_.keys[q.peer], q.signal, q.value, 0, cookie));
      ++issued_;
      return GICL_SUCCESS;
    }
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
  struct Op {
    ProxyRequest req;
    uint32_t parts;       // transport operations of the current stage not yet done
    bool signal_pending;  // a put's signal, posted once its pieces are delivered
  };

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
