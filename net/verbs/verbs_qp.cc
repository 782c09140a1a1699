// SPDX-License-Identifier: Apache-2.0
#include "net/verbs/verbs_qp.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gicl::net {
namespace {

// Transport retries, as NCCL sets them: ack timeout 4.096 us x 2^20 (about 4 s) per try, 7 tries,
// receiver-not-ready retried forever (7). GICL_NET_TIMEOUT bounds every operation above them.
constexpr uint8_t kAckTimeout = 20;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetry = 7;
constexpr uint8_t kMinRnrTimer = 12;  // 0.64 ms
constexpr uint8_t kHopLimit = 255;

Status modify_fail(const char* step, int peer, int rc) {
  return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: queue pair to rank %d: %s failed: %s", peer, step,
                   std::strerror(rc > 0 ? rc : errno));
}

}  // namespace

size_t verbs_address_bytes(int nranks) {
  return sizeof(VerbsAddressHeader) + sizeof(uint32_t) * static_cast<size_t>(nranks);
}

void verbs_write_address(const VerbsPort& port, const std::vector<ibv_qp*>& qps, void* out) {
  VerbsAddressHeader h{};
  h.magic = VerbsAddressHeader::kMagic;
  h.lid = port.attr.lid;
  h.ethernet = port.ethernet ? 1 : 0;
  h.mtu = static_cast<uint8_t>(port.attr.active_mtu);
  std::memcpy(h.gid, port.gid.raw, sizeof(h.gid));
  auto* bytes = static_cast<uint8_t*>(out);
  std::memcpy(bytes, &h, sizeof(h));
  for (size_t r = 0; r < qps.size(); ++r) {
    const uint32_t qpn = qps[r]->qp_num;
    std::memcpy(bytes + sizeof(h) + r * sizeof(uint32_t), &qpn, sizeof(qpn));
  }
}

Status verbs_read_address(const void* record, int peer, int me, int nranks, const VerbsPort& port,
                          VerbsRemote* out) {
  (void)nranks;
  const auto* bytes = static_cast<const uint8_t*>(record);
  std::memcpy(&out->header, bytes, sizeof(out->header));
  if (out->header.magic != VerbsAddressHeader::kMagic)
    return GICL_FAIL(GICL_REMOTE_ERROR,
                     "net verbs connect: rank %d's address is not a verbs address (another "
                     "backend or version)",
                     peer);
  if ((out->header.ethernet != 0) != port.ethernet)
    return GICL_FAIL(GICL_REMOTE_ERROR,
                     "net verbs connect: rank %d's port is %s, this rank's (%s) is %s", peer,
                     out->header.ethernet ? "Ethernet (RoCE)" : "InfiniBand", port.name.c_str(),
                     port.ethernet ? "Ethernet (RoCE)" : "InfiniBand");
  std::memcpy(&out->qpn, bytes + sizeof(VerbsAddressHeader) + static_cast<size_t>(me) * 4, 4);
  return GICL_SUCCESS;
}

Status qp_create(const VerbsApi& api, ibv_pd* pd, ibv_cq* cq, const QpLimits& limits,
                 ibv_qp** out) {
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = static_cast<uint32_t>(limits.send_depth);
  a.cap.max_recv_wr = static_cast<uint32_t>(limits.recv_depth);
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  // Every work request asks for its completion: the op table counts each one.
  a.sq_sig_all = 1;
  *out = api.create_qp(pd, &a);
  if (*out == nullptr)
    return GICL_FAIL(GICL_SYSTEM_ERROR, "net verbs: ibv_create_qp (RC, %d sends, %d receives): %s",
                     limits.send_depth, limits.recv_depth, std::strerror(errno));
  return GICL_SUCCESS;
}

Status qp_to_init(const VerbsApi& api, ibv_qp* qp, const VerbsPort& port, int peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  const int rc =
      api.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  return rc == 0 ? Status(GICL_SUCCESS) : modify_fail("RESET -> INIT", peer, rc);
}

Status qp_connect(const VerbsApi& api, ibv_qp* qp, const VerbsPort& port, const VerbsRemote& r,
                  const QpLimits& limits, int peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min<int>(port.attr.active_mtu, r.header.mtu));
  a.dest_qp_num = r.qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = static_cast<uint8_t>(limits.rd_atomic);
  a.min_rnr_timer = kMinRnrTimer;
  a.ah_attr.port_num = port.port;
  a.ah_attr.sl = 0;
  if (port.ethernet) {
    // RoCE has no LIDs: every packet carries a global route header to the peer's GID.
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, r.header.gid, sizeof(r.header.gid));
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(port.gid_index);
    a.ah_attr.grh.hop_limit = kHopLimit;
  } else {
    a.ah_attr.dlid = r.header.lid;
  }
  int rc = api.modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return modify_fail("INIT -> RTR", peer, rc);
  ibv_qp_attr b{};
  b.qp_state = IBV_QPS_RTS;
  b.timeout = kAckTimeout;
  b.retry_cnt = kRetryCount;
  b.rnr_retry = kRnrRetry;
  b.sq_psn = 0;
  b.max_rd_atomic = static_cast<uint8_t>(limits.rd_atomic);
  rc = api.modify_qp(qp, &b,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  return rc == 0 ? Status(GICL_SUCCESS) : modify_fail("RTR -> RTS", peer, rc);
}

}  // namespace gicl::net
