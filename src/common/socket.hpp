// SPDX-License-Identifier: Apache-2.0
// TCP sockets for the bootstrap: interface choice, IPv4/IPv6 addresses, and send/recv that are
// bounded by a deadline and stop when the owner is cancelled.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "common/deadline.hpp"
#include "common/status.hpp"

namespace gicl {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void set_port(int port);
  std::string str() const;  // "1.2.3.4:5" or "[::1]:5"
};

/// Parses "host:port" or "[v6]:port"; host may be a name. Errors name `what`.
Status parse_host_port(const char* text, const char* what, SockAddr* out);

/// Picks the bootstrap address from GICL_SOCKET_IFNAME and GICL_SOCKET_FAMILY (port 0).
Status find_interface_address(SockAddr* out, std::string* ifname);

/// Binds and listens (port 0: ephemeral). `bound` receives the actual address.
Status listen_on(const SockAddr& addr, int backlog, int* fd, SockAddr* bound);

/// Connects, retrying refused connections until the deadline (the peer may not listen yet);
/// with `listening`, the peer is known to listen already, and a refusal (nothing listens: its
/// process ended) fails at once with GICL_REMOTE_ERROR.
Status connect_to(const SockAddr& addr, Deadline deadline, const CancelFlag* cancel,
                  const char* peer, int* fd, bool listening = false);

/// Sends or receives exactly n bytes; `peer` names the other side in error messages.
Status send_all(int fd, const void* buf, size_t n, Deadline deadline, const CancelFlag* cancel,
                const char* peer);
Status recv_all(int fd, void* buf, size_t n, Deadline deadline, const CancelFlag* cancel,
                const char* peer);

/// Makes fd non-blocking / close-on-exec.
Status set_nonblocking(int fd);
void close_fd(int* fd);

}  // namespace gicl
