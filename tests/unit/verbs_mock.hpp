// SPDX-License-Identifier: Apache-2.0
// An emulator of rdma-core and of one RC fabric inside one process, for the verbs backend's tests
// (no RDMA NIC exists on the project's machines). It is a VerbsApi table plus the context
// operations the header's inline calls use (post_send, post_recv, poll_cq). It keeps IB's rules
// where the backend depends on them: the queue pair state machine with the attribute masks each
// transition requires (a missing one is EINVAL, as on hardware), posting only in the states that
// allow it, keys checked against the protection domain, range and access of every registration,
// a write with immediate that consumes a receive and waits (RNR) while none is posted, work
// requests executed in order per queue pair, and fetching atomics whose reply is big-endian on a
// Mellanox adapter. Work moves when any completion queue is polled.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/verbs_api.hpp"

namespace gicl::test {

struct MockConfig {
  int devices = 1;  // named mock_0, mock_1, ...
  bool port_active = true;
  bool ethernet = false;        // RoCE: GIDs 0 fe80::1, 1 ::ffff:10.0.0.1, 2 empty
  uint32_t vendor_id = 0x02c9;  // Mellanox: atomic replies big-endian
  bool dmabuf = true;           // rdma-core has ibv_reg_dmabuf_mr
  int max_cqe = 1 << 20;
  bool fail_reg_mr = false;  // ibv_reg_mr fails with ENOMEM
};

/// One record per ibv_modify_qp call.
struct MockTransition {
  uint32_t qpn;
  int from, to;  // ibv_qp_state
  int mask;
  int rc;
  ibv_qp_attr attr;
};

struct MockDmabuf {
  int fd;
  uint64_t offset, length, iova;
};

/// Resets the fabric (every object is forgotten) and returns the table to install.
VerbsApi mock_verbs(const MockConfig& config);
/// What happened since the last reset.
const std::vector<MockTransition>& mock_transitions();
const std::vector<MockDmabuf>& mock_dmabufs();
/// Queue pairs and registrations alive now.
int mock_live_qps();
int mock_live_mrs();
/// The state of queue pair `qpn`, or -1 where none has that number.
int mock_qp_state(uint32_t qpn);
/// Work stops moving (a peer that does not answer), or moves again.
void mock_hold(bool hold);
/// The node holding queue pair `qpn` is gone: what reaches it fails with a retry-exceeded error.
void mock_kill(uint32_t qpn);
/// Whether any completion queue overflowed (a backend that posts more than it sized for).
bool mock_cq_overflowed();

}  // namespace gicl::test
