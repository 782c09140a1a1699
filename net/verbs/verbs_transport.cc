// SPDX-License-Identifier: Apache-2.0
#include "net/verbs/verbs_transport.hpp"

#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "common/verbs_api.hpp"
#include "net/table_transport.hpp"
#include "net/verbs/verbs_device.hpp"
#include "net/verbs/verbs_memory.hpp"
#include "net/verbs/verbs_qp.hpp"

namespace gicl::net {
namespace {

/// Zero-byte receives kept posted per peer for its writes with immediate.
constexpr int kRecvDepth = 64;
/// Reads and atomics outstanding per queue pair, each way (at most what the device allows).
constexpr int kRdAtomic = 16;
constexpr int kCqBatch = 32;
/// A receive's work request id: this bit, the peer in bits 0-31.
constexpr uint64_t kRecvTag = uint64_t{1} << 63;

struct SlotOp {
  bool atomic = false;
  AtomicOp op = AtomicOp::kAdd;
  uint64_t remote = 0;
  uint32_t rkey = 0;
  uint64_t operand = 0;
  uint64_t compare = 0;  // swap: the value the last compare-swap expected
};

class VerbsTransport : public TableTransport {
 public:
  ~VerbsTransport() override { close(); }

  Status open(const OpenArgs& args);

  Backend backend() const override { return Backend::kVerbs; }
  std::string provider() const override { return "ibverbs RC"; }
  std::string describe() const override {
    std::string d = "verbs " + port_.name + ":" + std::to_string(port_.port);
    d += port_.ethernet ? " (RoCE, GID index " + std::to_string(port_.gid_index) + ")"
                        : " (InfiniBand, LID " + std::to_string(port_.attr.lid) + ")";
    if (cuda_) d += " (GPU memory registered)";
    return d;
  }
  Caps caps() const override { return Caps{cuda_, atomics_, port_.attr.max_msg_sz, 4}; }

  size_t address_bytes() const override { return verbs_address_bytes(args_.nranks); }
  Status local_address(void* out) const override {
    verbs_write_address(port_, qps_, out);
    return GICL_SUCCESS;
  }
  Status connect(const void* all, size_t stride) override;
  Status register_memory(void* base, size_t bytes, MemKind kind,
                         std::unique_ptr<Region>* out) override {
    if (kind == MemKind::kCuda && !cuda_)
      return GICL_FAIL(GICL_UNSUPPORTED,
                       "net verbs: GPU memory cannot be registered here (rdma-core without "
                       "ibv_reg_dmabuf_mr, or a CUDA driver without DMA-BUF export)");
    return verbs_register(*api_, pd_, base, bytes, kind, out);
  }

  Status write(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
               size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_rma("write", peer, src, p, dst, off, bytes));
    return post_rma("write", IBV_WR_RDMA_WRITE, peer, src, p, dst, off, bytes, 0, cookie);
  }
  // A reliable connection completes a write once the target's adapter acknowledged it: both
  // completion levels alike.
  Status write_imm(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
                   size_t bytes, uint64_t imm, uint64_t cookie, Completion) override {
    GICL_CHECK(check_rma("write_imm", peer, src, p, dst, off, bytes));
    GICL_ARG_CHECK(imm >> 32 == 0,
                   "net write_imm to rank %d: imm 0x%llx exceeds the 4 bytes verbs carries", peer,
                   static_cast<unsigned long long>(imm));
    return post_rma("write_imm", IBV_WR_RDMA_WRITE_WITH_IMM, peer, src, p, dst, off, bytes,
                    static_cast<uint32_t>(imm), cookie);
  }
  Status read(int peer, const Region& dst, void* p, const RemoteKey& src, uint64_t off,
              size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_rma("read", peer, dst, p, src, off, bytes));
    return post_rma("read", IBV_WR_RDMA_READ, peer, dst, p, src, off, bytes, 0, cookie);
  }
  Status atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t off, uint64_t operand,
                uint64_t compare, uint64_t cookie) override;

 private:
  Status check_rma(const char* op, int peer, const Region& local, const void* p,
                   const RemoteKey& key, uint64_t off, size_t bytes) const {
    return TableTransport::check_rma(op, peer, connected_, local, p, key, off, bytes,
                                     port_.attr.max_msg_sz, port_.name);
  }
  Status take_slot(const char* op, int peer, uint64_t cookie, int* slot);
  Status post_rma(const char* op, ibv_wr_opcode code, int peer, const Region& local, const void* p,
                  const RemoteKey& remote, uint64_t off, size_t bytes, uint32_t imm,
                  uint64_t cookie);
  /// Posts slot's atomic; a swap's retry (`retry`) keeps its slot when the post fails.
  Status post_atomic(const char* op, int peer, int slot, bool retry = false);
  Status post_send(const char* op, int peer, int slot, ibv_send_wr* wr, bool retry = false);
  Status post_receive(int peer);
  Status progress() override;
  void on_send(const ibv_wc& wc);
  void on_receive(const ibv_wc& wc);
  const char* status_name(ibv_wc_status s) const {
    const char* n = api_->wc_status_str != nullptr ? api_->wc_status_str(s) : nullptr;
    return n != nullptr ? n : "unknown status";
  }
  void close();

  const VerbsApi* api_ = nullptr;
  VerbsPort port_;
  bool cuda_ = false, atomics_ = false, connected_ = false;
  QpLimits limits_{};
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;     // qps_[r]: to rank r
  std::vector<int> sends_;       // work requests outstanding on qps_[r]'s send queue
  std::vector<uint8_t> broken_;  // a receive of rank r failed: its queue pair is in error
  std::vector<SlotOp> slots_;
  /// Each slot's fetching-atomic result word, registered (the NIC writes it).
  std::vector<uint64_t> results_;
  std::unique_ptr<Region> results_region_;
};

Status VerbsTransport::open(const OpenArgs& args) {
  args_ = args;
  GICL_CHECK(verbs_api(&api_));
  std::string wanted;
  int64_t gid_index = -1;
  GICL_CHECK(setting_string(Setting::kVerbsDevice, &wanted));
  GICL_CHECK(setting_int(Setting::kVerbsGidIndex, &gid_index));
  GICL_CHECK(verbs_open_port(*api_, wanted, args.nics, gid_index, &port_));
  const ibv_device_attr& dev = port_.device;
  atomics_ = dev.atomic_cap != IBV_ATOMIC_NONE;
  cuda_ = verbs_can_register_cuda(*api_);
  const int capacity = args.max_inflight;
  limits_.send_depth = std::min(capacity, dev.max_qp_wr);
  limits_.recv_depth = std::min(kRecvDepth, dev.max_qp_wr);
  limits_.rd_atomic =
      std::max(1, std::min({kRdAtomic, dev.max_qp_rd_atom, dev.max_qp_init_rd_atom}));
  const int64_t cqe = capacity + static_cast<int64_t>(args.nranks) * limits_.recv_depth;
  if (cqe > dev.max_cqe)
    return GICL_FAIL(GICL_UNSUPPORTED,
                     "net verbs: %s's completion queue holds %d entries; %d ranks need %lld",
                     port_.name.c_str(), dev.max_cqe, args.nranks, static_cast<long long>(cqe));
  if ((pd_ = api_->alloc_pd(port_.context)) == nullptr)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_alloc_pd(%s): %s", port_.name.c_str(),
                     std::strerror(errno));
  cq_ = api_->create_cq(port_.context, static_cast<int>(cqe), nullptr, nullptr, 0);
  if (cq_ == nullptr)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_create_cq(%lld): %s",
                     static_cast<long long>(cqe), std::strerror(errno));
  qps_.assign(args.nranks, nullptr);
  sends_.assign(args.nranks, 0);
  broken_.assign(args.nranks, 0);
  for (int r = 0; r < args.nranks; ++r) {
    GICL_CHECK(qp_create(*api_, pd_, cq_, limits_, &qps_[r]));
    GICL_CHECK(qp_to_init(*api_, qps_[r], port_, r));
    for (int i = 0; i < limits_.recv_depth; ++i) GICL_CHECK(post_receive(r));
  }
  table_.init(args.nranks, capacity);
  slots_.assign(capacity, SlotOp{});
  results_.assign(capacity, 0);
  GICL_CHECK(verbs_register(*api_, pd_, results_.data(), results_.size() * sizeof(uint64_t),
                            MemKind::kHost, &results_region_));
  GICL_INFO(kSubsysNet, "net: %s, atomics %s, largest message %u bytes, %d sends per peer",
            describe().c_str(), atomics_ ? "yes" : "no", port_.attr.max_msg_sz, limits_.send_depth);
  return GICL_SUCCESS;
}

void VerbsTransport::close() {
  if (api_ == nullptr) return;
  results_region_.reset();
  for (ibv_qp* qp : qps_)
    if (qp != nullptr && api_->destroy_qp(qp) != 0)
      GICL_WARN(kSubsysNet, "net verbs: ibv_destroy_qp failed: %s", std::strerror(errno));
  qps_.clear();
  if (cq_ != nullptr && api_->destroy_cq(cq_) != 0)
    GICL_WARN(kSubsysNet, "net verbs: ibv_destroy_cq failed: %s", std::strerror(errno));
  if (pd_ != nullptr && api_->dealloc_pd(pd_) != 0)
    GICL_WARN(kSubsysNet, "net verbs: ibv_dealloc_pd failed: %s", std::strerror(errno));
  if (port_.context != nullptr) api_->close_device(port_.context);
  cq_ = nullptr, pd_ = nullptr, port_.context = nullptr;
}

Status VerbsTransport::connect(const void* all, size_t stride) {
  GICL_ARG_CHECK(stride >= address_bytes(), "net connect: stride %zu is below the %zu-byte address",
                 stride, address_bytes());
  GICL_ARG_CHECK(!connected_, "net connect: the verbs transport is connected already");
  // Every record is read before any queue pair moves: a bad one leaves them all in INIT.
  std::vector<VerbsRemote> remotes(args_.nranks);
  for (int r = 0; r < args_.nranks; ++r)
    GICL_CHECK(
        verbs_read_address(static_cast<const uint8_t*>(all) + static_cast<size_t>(r) * stride, r,
                           args_.rank, args_.nranks, port_, &remotes[r]));
  for (int r = 0; r < args_.nranks; ++r)
    GICL_CHECK(qp_connect(*api_, qps_[r], port_, remotes[r], limits_, r));
  connected_ = true;
  return GICL_SUCCESS;
}

Status VerbsTransport::take_slot(const char* op, int peer, uint64_t cookie, int* slot) {
  GICL_CHECK(table_.take(
      op, peer, cookie, args_.timeout_ms, args_.cancel, [&] { return progress(); },
      [&] { return sends_[peer] < limits_.send_depth; }, slot));
  slots_[*slot] = SlotOp{};
  results_[*slot] = 0;  // a kDone's value is 0 unless fetched
  return GICL_SUCCESS;
}

Status VerbsTransport::post_send(const char* op, int peer, int slot, ibv_send_wr* wr, bool retry) {
  wr->wr_id = static_cast<uint64_t>(slot);
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qps_[peer], wr, &bad);
  if (rc != 0) {
    if (!retry) table_.cancel(slot);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net %s to rank %d: ibv_post_send: %s", op, peer,
                     std::strerror(rc));
  }
  ++sends_[peer];
  return GICL_SUCCESS;
}

Status VerbsTransport::post_rma(const char* op, ibv_wr_opcode code, int peer, const Region& local,
                                const void* p, const RemoteKey& remote, uint64_t off, size_t bytes,
                                uint32_t imm, uint64_t cookie) {
  int slot = 0;
  GICL_CHECK(take_slot(op, peer, cookie, &slot));
  ibv_sge sge{reinterpret_cast<uint64_t>(p), static_cast<uint32_t>(bytes),
              static_cast<const VerbsRegion&>(local).lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = bytes > 0 ? 1 : 0;
  wr.opcode = code;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote.addr + off;
  wr.wr.rdma.rkey = static_cast<uint32_t>(remote.key);
  return post_send(op, peer, slot, &wr);
}

Status VerbsTransport::atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t off,
                              uint64_t operand, uint64_t compare, uint64_t cookie) {
  const char* name = atomic_op_name(op);
  GICL_CHECK(check_atomic_args(op, peer, connected_, dst, off, atomics_, port_.name));
  int slot = 0;
  GICL_CHECK(take_slot(name, peer, cookie, &slot));
  SlotOp& s = slots_[slot];
  s.atomic = true;
  s.op = op;
  s.remote = dst.addr + off;
  s.rkey = static_cast<uint32_t>(dst.key);
  s.operand = operand;
  // Swap guesses 0 first; a miss retries with the value it found.
  s.compare = op == AtomicOp::kCompareSwap ? compare : 0;
  return post_atomic(name, peer, slot);
}

Status VerbsTransport::post_atomic(const char* op, int peer, int slot, bool retry) {
  const SlotOp& s = slots_[slot];
  ibv_sge sge{reinterpret_cast<uint64_t>(&results_[slot]), 8,
              static_cast<const VerbsRegion&>(*results_region_).lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = s.remote;
  wr.wr.atomic.rkey = s.rkey;
  if (s.op == AtomicOp::kAdd || s.op == AtomicOp::kFetchAdd) {
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.compare_add = s.operand;
  } else {
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.compare_add = s.compare;
    wr.wr.atomic.swap = s.operand;
  }
  return post_send(op, peer, slot, &wr, retry);
}

Status VerbsTransport::post_receive(int peer) {
  ibv_recv_wr wr{};
  wr.wr_id = kRecvTag | static_cast<uint64_t>(peer);
  wr.num_sge = 0;  // immediates only: the payload lands by RDMA address
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(qps_[peer], &wr, &bad);
  if (rc != 0)
    return GICL_FAIL(GICL_SYSTEM_ERROR,
                     "net verbs: ibv_post_recv on the queue pair from rank %d: %s", peer,
                     std::strerror(rc));
  return GICL_SUCCESS;
}

void VerbsTransport::on_receive(const ibv_wc& wc) {
  const int peer = static_cast<int>(wc.wr_id & 0xffffffffu);
  if (wc.status != IBV_WC_SUCCESS) {
    // The queue pair from `peer` went to error (its process died, or the link did): every
    // receive flushes; say so once and fail what this rank still expects of it.
    if (peer >= 0 && peer < args_.nranks && !broken_[peer]) {
      broken_[peer] = 1;
      GICL_WARN(kSubsysNet, "net verbs: the queue pair with rank %d failed: %s", peer,
                status_name(wc.status));
      table_.fail_peer(peer, GICL_REMOTE_ERROR);
    }
    return;
  }
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    Event ev;
    ev.kind = EventKind::kImmediate;
    ev.value = ntohl(wc.imm_data);
    table_.push(ev);
  }
  post_receive(peer).ignore();  // logged on failure; the peer's next immediate then waits (RNR)
}

void VerbsTransport::on_send(const ibv_wc& wc) {
  const int slot = static_cast<int>(wc.wr_id);
  if (slot < 0 || slot >= table_.capacity()) return;
  const int peer = table_.peer_of(slot);
  --sends_[peer];
  if (wc.status != IBV_WC_SUCCESS) {
    GICL_WARN(kSubsysNet, "net: an operation to rank %d failed: %s", peer, status_name(wc.status));
    table_.complete(slot, GICL_REMOTE_ERROR, 0);
    return;
  }
  SlotOp& s = slots_[slot];
  uint64_t old = 0;
  if (s.atomic) {
    old = results_[slot];
    if (port_.atomic_reply_big_endian) old = be64toh(old);
    if (s.op == AtomicOp::kSwap && old != s.compare && table_.peer_status(peer) == GICL_SUCCESS) {
      s.compare = old;  // the word changed under the guess: try again with what it holds
      if (!post_atomic("atomic swap", peer, slot, true).ok())
        table_.complete(slot, GICL_SYSTEM_ERROR, 0);
      return;
    }
  }
  table_.complete(slot, GICL_SUCCESS, old);
}

Status VerbsTransport::progress() {
  ibv_wc wc[kCqBatch];
  for (;;) {
    const int n = ibv_poll_cq(cq_, kCqBatch, wc);
    if (n < 0)
      return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_poll_cq on %s failed (%d)",
                       port_.name.c_str(), n);
    for (int i = 0; i < n; ++i) {
      if ((wc[i].wr_id & kRecvTag) != 0)
        on_receive(wc[i]);
      else
        on_send(wc[i]);
    }
    if (n < kCqBatch) break;
  }
  table_.expire_late(args_.timeout_ms);
  return GICL_SUCCESS;
}

}  // namespace

Status open_verbs(const OpenArgs& args, std::unique_ptr<Transport>* out) {
  GICL_ARG_CHECK(args.nranks >= 1 && args.rank >= 0 && args.rank < args.nranks,
                 "net open: rank %d of %d", args.rank, args.nranks);
  GICL_ARG_CHECK(args.max_inflight >= 1, "net open: max_inflight %d", args.max_inflight);
  auto t = std::make_unique<VerbsTransport>();
  GICL_CHECK(t->open(args));
  *out = std::move(t);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
