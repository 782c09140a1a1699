// SPDX-License-Identifier: Apache-2.0
#include "net/ofi/ofi_transport.hpp"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "net/ofi/ofi_api.hpp"
#include "net/ofi/ofi_memory.hpp"
#include "net/ofi/ofi_provider.hpp"
#include "net/table_transport.hpp"

namespace gicl::net {
namespace {

/// What libfabric hands back with a completion. The fi_context2 comes first: providers that ask
/// for FI_CONTEXT2 own those words while the operation is in flight.
struct OpContext {
  fi_context2 fi;
  int slot;  // the OpTable slot, or -1 for a receive posted for remote CQ data
  void* desc;
  fi_ioc ioc[3];
  fi_rma_ioc rma;
  fi_msg_atomic msg;
};

/// Receives kept posted when the provider wants one consumed per remote CQ data (FI_RX_CQ_DATA).
constexpr int kImmReceives = 64;
/// Completions read per fi_cq_read.
constexpr int kCqBatch = 32;

class OfiTransport : public TableTransport {
 public:
  ~OfiTransport() override { close(); }

  Status open(const OpenArgs& args);

  Backend backend() const override { return Backend::kOfi; }
  std::string provider() const override { return info_->fabric_attr->prov_name; }
  std::string describe() const override {
    return std::string("ofi ") + info_->fabric_attr->prov_name + " on " + info_->domain_attr->name +
           (hmem_ ? " (GPU memory registered)" : "");
  }
  Caps caps() const override {
    return Caps{hmem_, atomics_, info_->ep_attr->max_msg_size,
                static_cast<int>(info_->domain_attr->cq_data_size)};
  }

  size_t address_bytes() const override { return address_.size(); }
  Status local_address(void* out) const override {
    std::memcpy(out, address_.data(), address_.size());
    return GICL_SUCCESS;
  }
  Status connect(const void* all, size_t stride) override;
  Status register_memory(void* base, size_t bytes, MemKind kind,
                         std::unique_ptr<Region>* out) override;

  Status write(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
               size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_rma("write", peer, src, p, dst, off, bytes));
    return post_write("write", peer, src, p, dst, off, bytes, false, 0, cookie,
                      Completion::kDelivered);
  }
  Status write_imm(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
                   size_t bytes, uint64_t imm, uint64_t cookie, Completion when) override {
    GICL_CHECK(check_rma("write_imm", peer, src, p, dst, off, bytes));
    GICL_ARG_CHECK(
        info_->domain_attr->cq_data_size >= 8 || imm >> (8 * info_->domain_attr->cq_data_size) == 0,
        "net write_imm to rank %d: imm 0x%llx exceeds the %zu bytes %s carries", peer,
        static_cast<unsigned long long>(imm), info_->domain_attr->cq_data_size, provider().c_str());
    return post_write("write_imm", peer, src, p, dst, off, bytes, true, imm, cookie, when);
  }
  Status read(int peer, const Region& dst, void* p, const RemoteKey& src, uint64_t off,
              size_t bytes, uint64_t cookie) override;
  Status atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t off, uint64_t operand,
                uint64_t compare, uint64_t cookie) override;

 private:
  Status check_rma(const char* op, int peer, const Region& local, const void* p,
                   const RemoteKey& key, uint64_t off, size_t bytes) const {
    return TableTransport::check_rma(op, peer, !peers_.empty(), local, p, key, off, bytes,
                                     info_->ep_attr->max_msg_size, provider());
  }
  Status post_write(const char* op, int peer, const Region& src, const void* p,
                    const RemoteKey& dst, uint64_t off, size_t bytes, bool imm, uint64_t data,
                    uint64_t cookie, Completion when);
  /// A free slot for an operation to `peer`, progressing until one frees or the timeout.
  Status take_slot(const char* op, int peer, uint64_t cookie, int* slot);
  /// Posts with `fn` until the provider takes it (FI_EAGAIN: progress and retry, bounded).
  template <typename Fn>
  Status post(const char* op, int peer, int slot, Fn fn);
  Status progress() override;
  void on_completion(const fi_cq_data_entry& e);
  Status on_error();
  Status post_imm_receive(OpContext* c);
  Status fi_fail(const char* what, int rc) const {
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net ofi %s: %s (%d)", what, api_->strerror(-rc), rc);
  }
  void close();

  const OfiApi* api_ = nullptr;
  fi_info* info_ = nullptr;
  bool hmem_ = false, atomics_ = false, rx_cq_data_ = false;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::vector<uint8_t> address_;
  std::vector<fi_addr_t> peers_;
  OfiMemory memory_;
  std::vector<OpContext> ops_;
  std::vector<OpContext> receives_;
  /// Operand, compare and result words of each slot's atomic, registered (FI_MR_LOCAL).
  std::vector<uint64_t> scratch_;
  std::unique_ptr<Region> scratch_region_;
};

Status OfiTransport::open(const OpenArgs& args) {
  args_ = args;
  GICL_CHECK(ofi_api(&api_));
  std::string wanted;
  GICL_CHECK(setting_string(Setting::kOfiProvider, &wanted));
  OfiChoice choice;
  GICL_CHECK(ofi_choose(*api_, wanted, args.nics, &choice));
  info_ = choice.info;
  hmem_ = choice.hmem;
  rx_cq_data_ = (info_->mode & FI_RX_CQ_DATA) != 0;
  int rc = api_->fabric(info_->fabric_attr, &fabric_, nullptr);
  if (rc != 0) return fi_fail("fi_fabric", rc);
  if ((rc = fi_domain(fabric_, info_, &domain_, nullptr)) != 0) return fi_fail("fi_domain", rc);
  if (choice.atomics) {
    fi_atomic_attr attr{};
    atomics_ = fi_query_atomic(domain_, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC) == 0 &&
               fi_query_atomic(domain_, FI_UINT64, FI_ATOMIC_WRITE, &attr, FI_FETCH_ATOMIC) == 0 &&
               fi_query_atomic(domain_, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC) == 0;
  }
  const int capacity = args.max_inflight;
  fi_cq_attr cq_attr{};
  cq_attr.size = static_cast<size_t>(capacity + kImmReceives) * 2;
  cq_attr.format = FI_CQ_FORMAT_DATA;
  cq_attr.wait_obj = FI_WAIT_NONE;
  if ((rc = fi_cq_open(domain_, &cq_attr, &cq_, nullptr)) != 0) return fi_fail("fi_cq_open", rc);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(args.nranks);
  if ((rc = fi_av_open(domain_, &av_attr, &av_, nullptr)) != 0) return fi_fail("fi_av_open", rc);
  if ((rc = fi_endpoint(domain_, info_, &ep_, nullptr)) != 0) return fi_fail("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep_, &av_->fid, 0)) != 0) return fi_fail("fi_ep_bind(av)", rc);
  if ((rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV)) != 0)
    return fi_fail("fi_ep_bind(cq)", rc);
  if (std::strcmp(info_->fabric_attr->prov_name, "shm") == 0) {
    // shm names an endpoint's shared-memory region after the process id by default, and a
    // process killed before closing it leaves the region behind: a later process given the same
    // id then fails fi_enable with EBUSY. A name of the process id and 64 random bits is unique.
    std::random_device rd;
    char name[64];
    std::snprintf(name, sizeof(name), "gicl_%d_%08x%08x", static_cast<int>(getpid()), rd(), rd());
    if ((rc = fi_setname(&ep_->fid, name, std::strlen(name) + 1)) != 0)
      return fi_fail("fi_setname", rc);
  }
  if ((rc = fi_enable(ep_)) != 0) return fi_fail("fi_enable", rc);
  size_t len = 0;
  rc = fi_getname(&ep_->fid, nullptr, &len);
  if (rc != -FI_ETOOSMALL && rc != 0) return fi_fail("fi_getname", rc);
  address_.resize(len);
  if ((rc = fi_getname(&ep_->fid, address_.data(), &len)) != 0) return fi_fail("fi_getname", rc);
  address_.resize(len);

  memory_.init(api_, domain_, ep_, info_->domain_attr->mr_mode, hmem_);
  table_.init(args.nranks, capacity);
  ops_.resize(capacity);
  for (int i = 0; i < capacity; ++i) ops_[i].slot = i;
  scratch_.assign(static_cast<size_t>(capacity) * 3, 0);
  GICL_CHECK(memory_.register_memory(scratch_.data(), scratch_.size() * sizeof(uint64_t),
                                     MemKind::kHost, &scratch_region_));
  if (rx_cq_data_) {
    receives_.resize(kImmReceives);
    for (auto& r : receives_) {
      r.slot = -1;
      GICL_CHECK(post_imm_receive(&r));
    }
  }
  GICL_INFO(kSubsysNet, "net: %s, cq data %zu bytes, mr_mode 0x%x, atomics %s, max message %zu",
            describe().c_str(), info_->domain_attr->cq_data_size, info_->domain_attr->mr_mode,
            atomics_ ? "yes" : "no", info_->ep_attr->max_msg_size);
  return GICL_SUCCESS;
}

void OfiTransport::close() {
  // Registrations the caller still holds stay valid only while the domain lives: they are
  // released by their own destructors first (Region) or leaked with the process.
  scratch_region_.reset();
  if (ep_ != nullptr) fi_close(&ep_->fid);
  if (av_ != nullptr) fi_close(&av_->fid);
  if (cq_ != nullptr) fi_close(&cq_->fid);
  if (domain_ != nullptr) fi_close(&domain_->fid);
  if (fabric_ != nullptr) fi_close(&fabric_->fid);
  if (info_ != nullptr) api_->freeinfo(info_);
  ep_ = nullptr, av_ = nullptr, cq_ = nullptr, domain_ = nullptr, fabric_ = nullptr;
  info_ = nullptr;
}

Status OfiTransport::connect(const void* all, size_t stride) {
  GICL_ARG_CHECK(stride >= address_.size(), "net connect: stride %zu is below the %zu-byte address",
                 stride, address_.size());
  peers_.assign(args_.nranks, FI_ADDR_NOTAVAIL);
  for (int r = 0; r < args_.nranks; ++r) {
    const void* a = static_cast<const uint8_t*>(all) + static_cast<size_t>(r) * stride;
    const int n = fi_av_insert(av_, a, 1, &peers_[r], 0, nullptr);
    if (n != 1) {
      return GICL_FAIL(GICL_REMOTE_ERROR, "net connect: the address of rank %d is not valid for %s",
                       r, provider().c_str());
    }
  }
  return GICL_SUCCESS;
}

Status OfiTransport::register_memory(void* base, size_t bytes, MemKind kind,
                                     std::unique_ptr<Region>* out) {
  return memory_.register_memory(base, bytes, kind, out);
}

Status OfiTransport::take_slot(const char* op, int peer, uint64_t cookie, int* slot) {
  GICL_CHECK(table_.take(
      op, peer, cookie, args_.timeout_ms, args_.cancel, [&] { return progress(); },
      [] { return true; }, slot));
  scratch_[static_cast<size_t>(*slot) * 3 + 2] = 0;  // a kDone's value is 0 unless fetched
  return GICL_SUCCESS;
}

template <typename Fn>
Status OfiTransport::post(const char* op, int peer, int slot, Fn fn) {
  const Deadline deadline = Deadline::after_ms(args_.timeout_ms);
  for (;;) {
    const ssize_t rc = fn();
    if (rc == 0) return GICL_SUCCESS;
    if (rc != -FI_EAGAIN) {
      table_.cancel(slot);
      return GICL_FAIL(GICL_SYSTEM_ERROR, "net %s to rank %d: %s (%zd)", op, peer,
                       api_->strerror(static_cast<int>(-rc)), rc);
    }
    // The provider's queues are full: progressing drains them (and serves peers' writes here).
    const Status s = progress();
    if (!s.ok() || cancelled(args_.cancel) || deadline.expired()) {
      table_.cancel(slot);
      GICL_CHECK(s);
      if (cancelled(args_.cancel)) return GICL_FAIL(GICL_ABORTED, "net %s: aborted", op);
      return GICL_FAIL(GICL_TIMEOUT,
                       "net %s to rank %d: the provider refused it (FI_EAGAIN) for %lld ms "
                       "(GICL_NET_TIMEOUT)",
                       op, peer, static_cast<long long>(args_.timeout_ms));
    }
  }
}

Status OfiTransport::post_write(const char* op, int peer, const Region& src, const void* p,
                                const RemoteKey& dst, uint64_t off, size_t bytes, bool imm,
                                uint64_t data, uint64_t cookie, Completion when) {
  int slot = 0;
  GICL_CHECK(take_slot(op, peer, cookie, &slot));
  iovec iov{const_cast<void*>(p), bytes};
  void* desc = OfiMemory::desc(src);
  fi_rma_iov rma{dst.addr + off, bytes, dst.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = bytes > 0 ? 1 : 0;
  msg.addr = peers_[peer];
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &ops_[slot].fi;
  msg.data = data;
  // FI_INJECT_COMPLETE for kSent: FI_TRANSMIT_COMPLETE is no cheaper on tcp, whose provider
  // acknowledges both alike (a reply from the target's progress, sent before it reports the write).
  const uint64_t level = when == Completion::kSent ? FI_INJECT_COMPLETE : FI_DELIVERY_COMPLETE;
  const uint64_t flags = FI_COMPLETION | level | (imm ? FI_REMOTE_CQ_DATA : 0);
  return post(op, peer, slot, [&] { return fi_writemsg(ep_, &msg, flags); });
}

Status OfiTransport::read(int peer, const Region& dst, void* p, const RemoteKey& src, uint64_t off,
                          size_t bytes, uint64_t cookie) {
  GICL_CHECK(check_rma("read", peer, dst, p, src, off, bytes));
  int slot = 0;
  GICL_CHECK(take_slot("read", peer, cookie, &slot));
  iovec iov{p, bytes};
  void* desc = OfiMemory::desc(dst);
  fi_rma_iov rma{src.addr + off, bytes, src.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = peers_[peer];
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.context = &ops_[slot].fi;
  return post("read", peer, slot, [&] { return fi_readmsg(ep_, &msg, FI_COMPLETION); });
}

Status OfiTransport::atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t off,
                            uint64_t operand, uint64_t compare, uint64_t cookie) {
  const char* name = atomic_op_name(op);
  GICL_CHECK(check_atomic_args(op, peer, !peers_.empty(), dst, off, atomics_, provider()));
  int slot = 0;
  GICL_CHECK(take_slot(name, peer, cookie, &slot));
  uint64_t* words = &scratch_[static_cast<size_t>(slot) * 3];  // operand, compare, result
  words[0] = operand;
  words[1] = compare;
  words[2] = 0;
  OpContext& oc = ops_[slot];
  void*& desc = oc.desc;
  desc = OfiMemory::desc(*scratch_region_);
  fi_ioc& ioc = oc.ioc[0];
  fi_ioc& cmp = oc.ioc[1];
  fi_ioc& res = oc.ioc[2];
  ioc = {&words[0], 1};
  cmp = {&words[1], 1};
  res = {&words[2], 1};
  fi_rma_ioc& rma = oc.rma;
  rma = {dst.addr + off, 1, dst.key};
  fi_msg_atomic& msg = oc.msg;
  msg = {};
  msg.msg_iov = &ioc;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = peers_[peer];
  msg.rma_iov = &rma;
  msg.rma_iov_count = 1;
  msg.datatype = FI_UINT64;
  msg.context = &ops_[slot].fi;
  // Every op fetches: a fetching atomic completes only once the target applied it, on every
  // provider, so an add is a fetch-add whose old value is dropped. (A delivery-complete add
  // needs no result, but shm in libfabric 1.17 hands the responses of such adds to concurrent
  // fetching atomics.)
  switch (op) {
    case AtomicOp::kAdd:
    case AtomicOp::kFetchAdd:
    case AtomicOp::kSwap:
      msg.op = op == AtomicOp::kSwap ? FI_ATOMIC_WRITE : FI_SUM;
      return post(name, peer, slot,
                  [&] { return fi_fetch_atomicmsg(ep_, &msg, &res, &desc, 1, FI_COMPLETION); });
    case AtomicOp::kCompareSwap:
      msg.op = FI_CSWAP;
      return post(name, peer, slot, [&] {
        return fi_compare_atomicmsg(ep_, &msg, &cmp, &desc, 1, &res, &desc, 1, FI_COMPLETION);
      });
  }
  table_.cancel(slot);
  return GICL_FAIL(GICL_INVALID_ARGUMENT, "net atomic: unknown op %d", static_cast<int>(op));
}

Status OfiTransport::post_imm_receive(OpContext* c) {
  const Deadline deadline = Deadline::after_ms(args_.timeout_ms);
  for (;;) {
    const ssize_t rc = fi_recv(ep_, nullptr, 0, nullptr, FI_ADDR_UNSPEC, &c->fi);
    if (rc == 0) return GICL_SUCCESS;
    if (rc != -FI_EAGAIN || deadline.expired()) return fi_fail("fi_recv", static_cast<int>(rc));
    fi_cq_data_entry e[kCqBatch];
    const ssize_t n = fi_cq_read(cq_, e, kCqBatch);
    for (ssize_t i = 0; i < n; ++i) on_completion(e[i]);
  }
}

void OfiTransport::on_completion(const fi_cq_data_entry& e) {
  auto* c = static_cast<OpContext*>(e.op_context);
  if ((e.flags & FI_REMOTE_CQ_DATA) != 0) {
    Event ev;
    ev.kind = EventKind::kImmediate;
    ev.value = e.data;
    table_.push(ev);
    // A remote write's completion names one of our posted receives only in FI_RX_CQ_DATA mode;
    // otherwise its context is not ours (shm reports the sender's, an address in another
    // process): compare, never dereference.
    if (rx_cq_data_ && c >= receives_.data() && c < receives_.data() + receives_.size())
      post_imm_receive(c).ignore();  // logged on failure
    return;
  }
  if (c == nullptr || c < ops_.data() || c >= ops_.data() + ops_.size() || c->slot < 0) return;
  const int slot = c->slot;
  table_.complete(slot, GICL_SUCCESS, scratch_[static_cast<size_t>(slot) * 3 + 2]);
}

Status OfiTransport::on_error() {
  fi_cq_err_entry err{};
  const ssize_t rc = fi_cq_readerr(cq_, &err, 0);
  if (rc == -FI_EAGAIN) return GICL_SUCCESS;
  if (rc < 0) return fi_fail("fi_cq_readerr", static_cast<int>(rc));
  char detail[256] = "";
  const char* prov = fi_cq_strerror(cq_, err.prov_errno, err.err_data, detail, sizeof(detail));
  auto* c = static_cast<OpContext*>(err.op_context);
  const bool ours = c != nullptr && c >= ops_.data() && c < ops_.data() + ops_.size();
  if (!ours || c->slot < 0) {
    // A failure on the receiving side (a peer's write that did not land): nothing of ours to
    // complete, so the communicator learns it here.
    return GICL_FAIL(GICL_REMOTE_ERROR, "net: a transfer to this rank failed: %s (%s)",
                     api_->strerror(err.err), prov != nullptr ? prov : "");
  }
  const int peer = table_.peer_of(c->slot);
  GICL_WARN(kSubsysNet, "net: an operation to rank %d failed: %s (%s)", peer,
            api_->strerror(err.err), prov != nullptr ? prov : "");
  table_.complete(c->slot, GICL_REMOTE_ERROR, 0);
  return GICL_SUCCESS;
}

Status OfiTransport::progress() {
  fi_cq_data_entry e[kCqBatch];
  for (;;) {
    const ssize_t n = fi_cq_read(cq_, e, kCqBatch);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) on_completion(e[i]);
      if (n == kCqBatch) continue;
    }
    if (n > 0 || n == -FI_EAGAIN) {
      table_.expire_late(args_.timeout_ms);
      return GICL_SUCCESS;
    }
    if (n == -FI_EAVAIL) {
      GICL_CHECK(on_error());
      continue;
    }
    return fi_fail("fi_cq_read", static_cast<int>(n));
  }
}

}  // namespace

Status open_ofi(const OpenArgs& args, std::unique_ptr<Transport>* out) {
  GICL_ARG_CHECK(args.nranks >= 1 && args.rank >= 0 && args.rank < args.nranks,
                 "net open: rank %d of %d", args.rank, args.nranks);
  GICL_ARG_CHECK(args.max_inflight >= 1, "net open: max_inflight %d", args.max_inflight);
  auto t = std::make_unique<OfiTransport>();
  GICL_CHECK(t->open(args));
  *out = std::move(t);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
