// SPDX-License-Identifier: Apache-2.0
// Reliable-connected queue pairs: one per peer (a rank's own one loops back to itself), taken
// from RESET through INIT (at open) to RTR and RTS (at connect, with the peer's queue pair
// number and address), and what a rank publishes so that its peers can connect to it.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

#include "common/status.hpp"
#include "common/verbs_api.hpp"
#include "net/verbs/verbs_device.hpp"

namespace gicl::net {

/// What one rank publishes: its port's address and, for each rank r, the number of the queue
/// pair it made for r. Laid out as bytes: a fixed header, then nranks 32-bit numbers.
struct VerbsAddressHeader {
  static constexpr uint32_t kMagic = 0x67766231;  // "gvb1"
  uint32_t magic;
  uint16_t lid;
  uint8_t ethernet;
  uint8_t mtu;  // ibv_mtu
  uint8_t gid[16];
};
static_assert(sizeof(VerbsAddressHeader) == 24, "exchanged between processes as bytes");

size_t verbs_address_bytes(int nranks);
void verbs_write_address(const VerbsPort& port, const std::vector<ibv_qp*>& qps, void* out);

/// Peer `peer`'s view for this rank: its port's address and the queue pair it made for `me`;
/// a malformed record or a link layer unlike this port's is named.
struct VerbsRemote {
  VerbsAddressHeader header;
  uint32_t qpn;
};
Status verbs_read_address(const void* record, int peer, int me, int nranks, const VerbsPort& port,
                          VerbsRemote* out);

struct QpLimits {
  int send_depth;  // work requests outstanding on the send queue
  int recv_depth;
  int rd_atomic;  // reads and atomics outstanding, each way
};

Status qp_create(const VerbsApi& api, ibv_pd* pd, ibv_cq* cq, const QpLimits& limits, ibv_qp** out);
/// RESET -> INIT: the port, P_Key 0, remote write, read and atomic access.
Status qp_to_init(const VerbsApi& api, ibv_qp* qp, const VerbsPort& port, int peer);
/// INIT -> RTR -> RTS toward the peer's queue pair.
Status qp_connect(const VerbsApi& api, ibv_qp* qp, const VerbsPort& port, const VerbsRemote& r,
                  const QpLimits& limits, int peer);

}  // namespace gicl::net
