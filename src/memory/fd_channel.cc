// SPDX-License-Identifier: Apache-2.0
#include "memory/fd_channel.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/auth.hpp"
#include "common/log.hpp"

namespace gicl {
namespace {

struct ChannelHello {
  uint8_t token[32];
  int32_t rank;
  uint32_t pad;
};

sockaddr_un abstract_addr(const std::string& name, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // Abstract namespace: leading NUL, no file to clean up after a crash.
  const size_t n = std::min(name.size(), sizeof(a.sun_path) - 2);
  std::memcpy(a.sun_path + 1, name.data(), n);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

Status wait_io(int fd, short ev, Deadline d, const CancelFlag* c, int peer, const char* what) {
  for (;;) {
    if (cancelled(c)) return GICL_FAIL(GICL_ABORTED, "aborted while %s rank %d", what, peer);
    pollfd p{fd, ev, 0};
    int n = ::poll(&p, 1, d.poll_ms());
    if (n > 0) return GICL_SUCCESS;
    if (n < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
    if (d.expired()) return GICL_FAIL(GICL_TIMEOUT, "timed out %s rank %d", what, peer);
  }
}

}  // namespace

FdChannel::~FdChannel() {
  for (auto& [r, fd] : out_) ::close(fd);
  for (auto& [r, fd] : in_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FdChannel::shutdown() {
  for (auto& [r, fd] : out_) ::shutdown(fd, SHUT_RDWR);
  for (auto& [r, fd] : in_) ::shutdown(fd, SHUT_RDWR);
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
}

std::string FdChannel::address(int rank) const {
  return "gicl-" + job_ + "-" + std::to_string(rank);
}

Status FdChannel::listen(const std::string& job, int rank, const uint8_t* secret) {
  job_ = job;
  rank_ = rank;
  GICL_CHECK(bootstrap::auth_derive(secret, bootstrap::kSecretBytes, "fd channel|" + job, token_,
                                    sizeof(token_)));
  listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  GICL_SYSCHECK(listen_fd_, "socket(AF_UNIX)");
  socklen_t len;
  sockaddr_un a = abstract_addr(address(rank), &len);
  GICL_SYSCHECK(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len), "bind(AF_UNIX)");
  GICL_SYSCHECK(::listen(listen_fd_, 256), "listen(AF_UNIX)");
  return GICL_SUCCESS;
}

Status FdChannel::connect(const std::vector<Peer>& peers, Deadline d, const CancelFlag* cancel) {
  ChannelHello hello{};
  std::memcpy(hello.token, token_, sizeof(token_));
  hello.rank = rank_;
  for (const Peer& p : peers) {
    int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    GICL_SYSCHECK(s, "socket(AF_UNIX)");
    socklen_t len;
    sockaddr_un a = abstract_addr(address(p.rank), &len);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) {
      int err = errno;
      ::close(s);
      return GICL_FAIL(GICL_SYSTEM_ERROR, "rank %d: cannot reach rank %d's handle socket: %s",
                       rank_, p.rank, strerror(err));
    }
    // The token goes only to the process the rank announced: another process that bound the
    // name first is refused before it hears anything.
    ucred cred{};
    socklen_t clen = sizeof(cred);
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.pid != p.pid ||
        cred.uid != getuid()) {
      ::close(s);
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "rank %d: rank %d's handle socket is held by pid %d (uid %d), not by rank "
                       "%d's process %d",
                       rank_, p.rank, static_cast<int>(cred.pid), static_cast<int>(cred.uid),
                       p.rank, static_cast<int>(p.pid));
    }
    if (::send(s, &hello, sizeof(hello), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello))) {
      int err = errno;
      ::close(s);
      return GICL_FAIL(GICL_SYSTEM_ERROR, "rank %d: cannot send to rank %d's handle socket: %s",
                       rank_, p.rank, strerror(err));
    }
    out_[p.rank] = s;
  }
  // Accept one connection per peer; anything that is not a known peer is dropped.
  while (in_.size() < peers.size()) {
    GICL_CHECK(wait_io(listen_fd_, POLLIN, d, cancel, -1, "waiting for handle connections from"));
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ucred cred{};
    socklen_t clen = sizeof(cred);
    ChannelHello h{};
    bool ok =
        getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
        wait_io(c, POLLIN, Deadline::after_ms(1000).earlier(d), cancel, -1, "reading hello of")
            .ok() &&
        ::recv(c, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h)) &&
        CRYPTO_memcmp(h.token, token_, sizeof(token_)) == 0;
    const Peer* expected = nullptr;
    for (const Peer& p : peers)
      if (ok && p.rank == h.rank) expected = &p;
    if (expected == nullptr || cred.pid != expected->pid || cred.uid != getuid() ||
        in_.count(h.rank)) {
      GICL_WARN(kSubsysMem, "rank %d: dropped a handle connection (pid %d claims rank %d)", rank_,
                static_cast<int>(cred.pid), ok ? h.rank : -1);
      ::close(c);
      continue;
    }
    in_[h.rank] = c;
  }
  return GICL_SUCCESS;
}

Status FdChannel::send_fd(int peer, const FdMessage& msg, int fd, Deadline d,
                          const CancelFlag* cancel) {
  auto it = out_.find(peer);
  if (it == out_.end()) return GICL_FAIL(GICL_INTERNAL_ERROR, "no handle channel to rank %d", peer);
  FdMessage m = msg;
  iovec iov{&m, sizeof(m)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  for (;;) {
    ssize_t k = ::sendmsg(it->second, &h, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k == static_cast<ssize_t>(sizeof(m))) return GICL_SUCCESS;
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
      GICL_CHECK(wait_io(it->second, POLLOUT, d, cancel, peer, "sending a handle to"));
      continue;
    }
    return GICL_FAIL(GICL_REMOTE_ERROR, "rank %d: sending a handle to rank %d failed: %s", rank_,
                     peer, k < 0 ? strerror(errno) : "short write");
  }
}

Status FdChannel::recv_fd(int peer, FdMessage* msg, int* fd, Deadline d, const CancelFlag* cancel) {
  auto it = in_.find(peer);
  if (it == in_.end())
    return GICL_FAIL(GICL_INTERNAL_ERROR, "no handle channel from rank %d", peer);
  GICL_CHECK(wait_io(it->second, POLLIN, d, cancel, peer, "waiting for a handle from"));
  FdMessage m{};
  iovec iov{&m, sizeof(m)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof(control);
  ssize_t k = ::recvmsg(it->second, &h, MSG_CMSG_CLOEXEC);
  int got = -1, extra = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (got < 0)
        got = f;
      else
        ::close(f), ++extra;  // never leak descriptors we did not ask for
    }
  }
  auto reject = [&](const char* why) {
    if (got >= 0) ::close(got);
    return GICL_FAIL(GICL_REMOTE_ERROR, "rank %d: bad handle message from rank %d: %s", rank_, peer,
                     why);
  };
  if (k == 0) return reject("connection closed");
  if (k != static_cast<ssize_t>(sizeof(m))) return reject("wrong message size");
  if (h.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) return reject("truncated");
  if (got < 0 || extra != 0) return reject("expected exactly one descriptor");
  if (m.version != kFdMessageVersion) return reject("wrong message version");
  if (fcntl(got, F_GETFD) < 0) return reject("descriptor is not valid");
  *msg = m;
  *fd = got;
  return GICL_SUCCESS;
}

}  // namespace gicl
