// SPDX-License-Identifier: Apache-2.0
#include "unit/verbs_mock.hpp"

#include <endian.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>

namespace gicl::test {
namespace {

struct Mr {
  ibv_mr mr;  // first: the backend sees &mr
  int access;
};

struct Cq {
  ibv_cq cq;
  std::deque<ibv_wc> entries;
  int cqe;
};

struct Work {
  uint64_t wr_id;
  ibv_wr_opcode opcode;
  uint64_t local;
  uint32_t length;
  uint32_t lkey;
  int num_sge;
  uint64_t remote;
  uint32_t rkey;
  uint64_t compare_add, swap;
  uint32_t imm;  // network order, as posted
};

struct Qp {
  ibv_qp qp;
  int max_send, max_recv;
  uint32_t dest = 0;
  int access = 0;
  bool dead = false;
  std::deque<Work> sends;  // posted, not yet executed
  std::deque<uint64_t> recvs;
};

struct Fabric {
  MockConfig cfg;
  std::vector<ibv_device> devices;
  std::vector<ibv_device*> list;
  std::vector<std::unique_ptr<ibv_context>> contexts;
  std::vector<std::unique_ptr<ibv_pd>> pds;
  std::map<uint32_t, std::unique_ptr<Mr>> mrs;  // by key (lkey == rkey)
  std::vector<std::unique_ptr<Cq>> cqs;
  std::map<uint32_t, std::unique_ptr<Qp>> qps;  // by number
  std::vector<MockTransition> transitions;
  std::vector<MockDmabuf> dmabufs;
  uint32_t next_key = 0x100, next_qpn = 0x40;
  bool hold = false, overflow = false;
};

Fabric* g = nullptr;

Qp* qp_of(ibv_qp* q) {
  return reinterpret_cast<Qp*>(q);
}

void push(Cq* cq, const ibv_wc& wc) {
  if (static_cast<int>(cq->entries.size()) >= cq->cqe) {
    g->overflow = true;
    return;
  }
  cq->entries.push_back(wc);
}

void complete(Qp* q, const Work& w, ibv_wc_status status) {
  ibv_wc wc{};
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.qp_num = q->qp.qp_num;
  switch (w.opcode) {
    case IBV_WR_RDMA_READ:
      wc.opcode = IBV_WC_RDMA_READ;
      break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      wc.opcode = IBV_WC_FETCH_ADD;
      break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      wc.opcode = IBV_WC_COMP_SWAP;
      break;
    default:
      wc.opcode = IBV_WC_RDMA_WRITE;
      break;
  }
  push(reinterpret_cast<Cq*>(q->qp.send_cq), wc);
}

/// The queue pair goes to error: what is queued on it flushes.
void to_error(Qp* q) {
  q->qp.state = IBV_QPS_ERR;
  while (!q->sends.empty()) {
    complete(q, q->sends.front(), IBV_WC_WR_FLUSH_ERR);
    q->sends.pop_front();
  }
  while (!q->recvs.empty()) {
    ibv_wc wc{};
    wc.wr_id = q->recvs.front();
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = q->qp.qp_num;
    push(reinterpret_cast<Cq*>(q->qp.recv_cq), wc);
    q->recvs.pop_front();
  }
}

/// A registration of `pd` covering [addr, addr + len) with `access`, else null.
Mr* find_mr(uint32_t key, ibv_pd* pd, uint64_t addr, uint64_t len, int access) {
  const auto it = g->mrs.find(key);
  if (it == g->mrs.end()) return nullptr;
  Mr* m = it->second.get();
  const auto base = reinterpret_cast<uint64_t>(m->mr.addr);
  if (m->mr.pd != pd || addr < base || len > m->mr.length || addr - base > m->mr.length - len)
    return nullptr;
  return (m->access & access) == access ? m : nullptr;
}

/// Executes the front of q's send queue; false where it must wait (no receive for an immediate).
bool execute(Qp* q) {
  const Work w = q->sends.front();
  const auto fail = [&](ibv_wc_status s) {
    q->sends.pop_front();
    complete(q, w, s);
    to_error(q);
    return true;
  };
  if (w.num_sge > 0 && find_mr(w.lkey, q->qp.pd, w.local, w.length, 0) == nullptr)
    return fail(IBV_WC_LOC_PROT_ERR);
  const auto it = g->qps.find(q->dest);
  if (it == g->qps.end() || it->second->dead ||
      (it->second->qp.state != IBV_QPS_RTR && it->second->qp.state != IBV_QPS_RTS))
    return fail(IBV_WC_RETRY_EXC_ERR);
  Qp* t = it->second.get();
  const bool atomic =
      w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
  const int need = w.opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ
                   : atomic                     ? IBV_ACCESS_REMOTE_ATOMIC
                                                : IBV_ACCESS_REMOTE_WRITE;
  const uint64_t len = atomic ? 8 : w.length;
  if ((t->access & need) == 0 || find_mr(w.rkey, t->qp.pd, w.remote, len, need) == nullptr ||
      (atomic && w.remote % 8 != 0))
    return fail(IBV_WC_REM_ACCESS_ERR);
  if (w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM && t->recvs.empty()) return false;  // RNR: retried
  auto* remote = reinterpret_cast<uint8_t*>(w.remote);
  auto* local = reinterpret_cast<uint8_t*>(w.local);
  if (w.opcode == IBV_WR_RDMA_READ) {
    std::memcpy(local, remote, w.length);
  } else if (atomic) {
    uint64_t old = 0;
    std::memcpy(&old, remote, 8);
    uint64_t now = old;
    if (w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
      now = old + w.compare_add;
    else if (old == w.compare_add)
      now = w.swap;
    std::memcpy(remote, &now, 8);
    const uint64_t reply = g->cfg.vendor_id == 0x02c9 ? htobe64(old) : old;
    std::memcpy(local, &reply, 8);
  } else if (w.length > 0) {
    std::memcpy(remote, local, w.length);
  }
  q->sends.pop_front();
  complete(q, w, IBV_WC_SUCCESS);
  if (w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    ibv_wc wc{};
    wc.wr_id = t->recvs.front();
    t->recvs.pop_front();
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = w.imm;
    wc.qp_num = t->qp.qp_num;
    push(reinterpret_cast<Cq*>(t->qp.recv_cq), wc);
  }
  return true;
}

void move_work() {
  if (g->hold) return;
  for (auto& [qpn, q] : g->qps)
    while (!q->sends.empty() && q->qp.state == IBV_QPS_RTS && execute(q.get())) {
    }
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* q = qp_of(qp);
  for (; wr != nullptr; wr = wr->next) {
    if (q->qp.state != IBV_QPS_RTS || wr->num_sge > 1) {
      *bad = wr;
      return EINVAL;
    }
    if (static_cast<int>(q->sends.size()) >= q->max_send) {
      *bad = wr;
      return ENOMEM;
    }
    Work w{};
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.num_sge = wr->num_sge;
    if (wr->num_sge == 1) {
      w.local = wr->sg_list[0].addr;
      w.length = wr->sg_list[0].length;
      w.lkey = wr->sg_list[0].lkey;
    }
    if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
      w.remote = wr->wr.atomic.remote_addr;
      w.rkey = wr->wr.atomic.rkey;
      w.compare_add = wr->wr.atomic.compare_add;
      w.swap = wr->wr.atomic.swap;
    } else {
      w.remote = wr->wr.rdma.remote_addr;
      w.rkey = wr->wr.rdma.rkey;
    }
    w.imm = wr->imm_data;
    q->sends.push_back(w);
  }
  return 0;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* q = qp_of(qp);
  for (; wr != nullptr; wr = wr->next) {
    if (q->qp.state == IBV_QPS_RESET || q->qp.state == IBV_QPS_ERR) {
      *bad = wr;
      return EINVAL;
    }
    if (static_cast<int>(q->recvs.size()) >= q->max_recv) {
      *bad = wr;
      return ENOMEM;
    }
    q->recvs.push_back(wr->wr_id);
  }
  return 0;
}

int poll_cq(ibv_cq* cq, int n, ibv_wc* wc) {
  move_work();
  if (g->overflow) return -1;
  Cq* c = reinterpret_cast<Cq*>(cq);
  int k = 0;
  for (; k < n && !c->entries.empty(); ++k) {
    wc[k] = c->entries.front();
    c->entries.pop_front();
  }
  return k;
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* a, int mask) {
  Qp* q = qp_of(qp);
  const int from = q->qp.state, to = a->qp_state;
  auto log = [&](int rc) {
    g->transitions.push_back({q->qp.qp_num, from, to, mask, rc, *a});
    return rc;
  };
  if ((mask & IBV_QP_STATE) == 0) return log(EINVAL);
  if (to == IBV_QPS_ERR) {
    to_error(q);
    return log(0);
  }
  if (to == IBV_QPS_RESET) {
    q->sends.clear();
    q->recvs.clear();
    q->qp.state = IBV_QPS_RESET;
    return log(0);
  }
  // IB's required attributes per transition of an RC queue pair.
  int required = 0;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
    required = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
    required = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
    required = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
               IBV_QP_MAX_QP_RD_ATOMIC;
  else
    return log(EINVAL);
  if ((mask & required) != required) return log(EINVAL);
  if (to == IBV_QPS_INIT) {
    if (a->port_num != 1) return log(EINVAL);
    q->access = a->qp_access_flags;
  }
  if (to == IBV_QPS_RTR) {
    // InfiniBand routes by LID; RoCE needs a global route header.
    if (g->cfg.ethernet ? a->ah_attr.is_global == 0 : a->ah_attr.dlid == 0) return log(EINVAL);
    if (g->qps.count(a->dest_qp_num) == 0) return log(EINVAL);
    q->dest = a->dest_qp_num;
  }
  q->qp.state = static_cast<ibv_qp_state>(to);
  return log(0);
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t len, int access) {
  if (g->cfg.fail_reg_mr) {
    errno = ENOMEM;
    return nullptr;
  }
  auto m = std::make_unique<Mr>();
  const uint32_t key = g->next_key++;
  m->mr = {};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = len;
  m->mr.lkey = m->mr.rkey = key;
  m->access = access | IBV_ACCESS_LOCAL_WRITE;
  g->mrs[key] = std::move(m);
  return &g->mrs[key]->mr;
}

VerbsApi table() {
  VerbsApi a{};
  a.get_device_list = [](int* n) -> ibv_device** {
    *n = static_cast<int>(g->devices.size());
    return g->list.data();
  };
  a.free_device_list = [](ibv_device**) {};
  a.get_device_name = [](ibv_device* d) -> const char* { return d->name; };
  a.get_device_guid = [](ibv_device*) { return static_cast<__be64>(0); };
  a.open_device = [](ibv_device* d) -> ibv_context* {
    auto c = std::make_unique<ibv_context>();
    c->device = d;
    c->ops.post_send = post_send;
    c->ops.post_recv = post_recv;
    c->ops.poll_cq = poll_cq;
    g->contexts.push_back(std::move(c));
    return g->contexts.back().get();
  };
  a.close_device = [](ibv_context*) { return 0; };
  a.query_device = [](ibv_context* c, ibv_device_attr* attr) {
    *attr = {};
    std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "mock");
    attr->vendor_id = g->cfg.vendor_id;
    attr->max_qp_wr = 16384;
    attr->max_cqe = g->cfg.max_cqe;
    attr->max_qp_rd_atom = 16;
    attr->max_qp_init_rd_atom = 16;
    attr->atomic_cap = IBV_ATOMIC_HCA;
    attr->phys_port_cnt = 1;
    (void)c;
    return 0;
  };
  a.query_port = [](ibv_context*, uint8_t port, ibv_port_attr* attr) {
    if (port != 1) return EINVAL;
    *attr = {};
    attr->state = g->cfg.port_active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    attr->active_mtu = IBV_MTU_4096;
    attr->max_msg_sz = 1u << 30;
    attr->gid_tbl_len = 3;
    attr->lid = g->cfg.ethernet ? 0 : 7;
    attr->link_layer = g->cfg.ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    return 0;
  };
  a.query_gid = [](ibv_context*, uint8_t, int index, ibv_gid* gid) {
    *gid = {};
    if (index == 0) {
      gid->raw[0] = 0xfe, gid->raw[1] = 0x80, gid->raw[15] = 1;
    } else if (index == 1) {
      gid->raw[10] = gid->raw[11] = 0xff;
      gid->raw[12] = 10, gid->raw[15] = 1;
    } else if (index > 2) {
      return EINVAL;
    }
    return 0;
  };
  a.alloc_pd = [](ibv_context* c) -> ibv_pd* {
    auto pd = std::make_unique<ibv_pd>();
    pd->context = c;
    g->pds.push_back(std::move(pd));
    return g->pds.back().get();
  };
  a.dealloc_pd = [](ibv_pd*) { return 0; };
  a.reg_mr = reg_mr;
  a.dereg_mr = [](ibv_mr* mr) { return g->mrs.erase(mr->lkey) == 1 ? 0 : EINVAL; };
  a.create_cq = [](ibv_context* c, int cqe, void*, ibv_comp_channel*, int) -> ibv_cq* {
    if (cqe > g->cfg.max_cqe) {
      errno = EINVAL;
      return nullptr;
    }
    auto q = std::make_unique<Cq>();
    q->cq = {};
    q->cq.context = c;
    q->cq.cqe = cqe;
    q->cqe = cqe;
    g->cqs.push_back(std::move(q));
    return &g->cqs.back()->cq;
  };
  a.destroy_cq = [](ibv_cq*) { return 0; };
  a.create_qp = [](ibv_pd* pd, ibv_qp_init_attr* attr) -> ibv_qp* {
    if (attr->qp_type != IBV_QPT_RC || attr->send_cq == nullptr || attr->recv_cq == nullptr ||
        attr->cap.max_send_wr > 16384 || attr->cap.max_recv_wr > 16384) {
      errno = EINVAL;
      return nullptr;
    }
    auto q = std::make_unique<Qp>();
    q->qp = {};
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.qp_type = IBV_QPT_RC;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_num = g->next_qpn++;
    q->max_send = static_cast<int>(attr->cap.max_send_wr);
    q->max_recv = static_cast<int>(attr->cap.max_recv_wr);
    const uint32_t n = q->qp.qp_num;
    g->qps[n] = std::move(q);
    return &g->qps[n]->qp;
  };
  a.modify_qp = modify_qp;
  a.destroy_qp = [](ibv_qp* qp) { return g->qps.erase(qp->qp_num) == 1 ? 0 : EINVAL; };
  a.wc_status_str = [](ibv_wc_status s) -> const char* {
    switch (s) {
      case IBV_WC_SUCCESS:
        return "success";
      case IBV_WC_RETRY_EXC_ERR:
        return "transport retry counter exceeded";
      case IBV_WC_WR_FLUSH_ERR:
        return "Work Request Flushed Error";
      case IBV_WC_REM_ACCESS_ERR:
        return "remote access error";
      case IBV_WC_LOC_PROT_ERR:
        return "local protection error";
      default:
        return "other error";
    }
  };
  if (g->cfg.dmabuf)
    a.reg_dmabuf_mr = [](ibv_pd* pd, uint64_t offset, size_t len, uint64_t iova, int fd,
                         int access) -> ibv_mr* {
      g->dmabufs.push_back({fd, offset, len, iova});
      // The emulated NIC reaches the memory at iova (host memory stands in for the GPU's).
      return reg_mr(pd, reinterpret_cast<void*>(iova), len, access);
    };
  return a;
}

}  // namespace

VerbsApi mock_verbs(const MockConfig& config) {
  delete g;
  g = new Fabric();
  g->cfg = config;
  g->devices.resize(config.devices);
  for (int i = 0; i < config.devices; ++i) {
    ibv_device& d = g->devices[i];
    d = {};
    std::snprintf(d.name, sizeof(d.name), "mock_%d", i);
    d.transport_type = IBV_TRANSPORT_IB;
  }
  for (ibv_device& d : g->devices) g->list.push_back(&d);
  g->list.push_back(nullptr);
  return table();
}

const std::vector<MockTransition>& mock_transitions() {
  return g->transitions;
}
const std::vector<MockDmabuf>& mock_dmabufs() {
  return g->dmabufs;
}
int mock_live_qps() {
  return static_cast<int>(g->qps.size());
}
int mock_live_mrs() {
  return static_cast<int>(g->mrs.size());
}
int mock_qp_state(uint32_t qpn) {
  const auto it = g->qps.find(qpn);
  return it == g->qps.end() ? -1 : static_cast<int>(it->second->qp.state);
}
void mock_hold(bool hold) {
  g->hold = hold;
}
void mock_kill(uint32_t qpn) {
  const auto it = g->qps.find(qpn);
  if (it != g->qps.end()) it->second->dead = true;
}
bool mock_cq_overflowed() {
  return g->overflow;
}

}  // namespace gicl::test
