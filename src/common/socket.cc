// SPDX-License-Identifier: Apache-2.0
#include "common/socket.hpp"

#include <cstdio>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/log.hpp"
#include "common/settings.hpp"

namespace gicl {

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SockAddr::set_port(int p) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(p);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(p);
}

std::string SockAddr::str() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
              sizeof(host));
    // snprintf, not operator+: GCC 12 warns (-Wrestrict, a false positive) on "[" + string.
    char out[INET6_ADDRSTRLEN + 16];
    std::snprintf(out, sizeof(out), "[%s]:%d", host, port());
    return out;
  }
  return "<no address>";
}

Status parse_host_port(const char* text, const char* what, SockAddr* out) {
  std::string s(text ? text : "");
  std::string host, port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':')
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not [ipv6]:port", what, text);
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not host:port", what, text);
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  int64_t p = 0;
  if (!parse_int64(port.c_str(), &p) || p <= 0 || p > 65535)
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' has no valid port (1..65535)", what, text);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s': cannot resolve '%s': %s", what, text,
                     host.c_str(), gai_strerror(rc));
  std::memcpy(&out->storage, res->ai_addr, res->ai_addrlen);
  out->len = res->ai_addrlen;
  freeaddrinfo(res);
  out->set_port(static_cast<int>(p));
  return GICL_SUCCESS;
}

namespace {

// NCCL-compatible interface spec: "eth,ib" prefixes, "^lo" excludes, "=eth0" exact names.
bool ifname_matches(const std::string& spec, const char* name) {
  if (spec.empty()) return std::strncmp(name, "lo", 2) != 0 && std::strncmp(name, "docker", 6) != 0;
  std::string list = spec;
  bool exclude = false, exact = false;
  if (!list.empty() && list[0] == '^') exclude = true, list.erase(0, 1);
  if (!list.empty() && list[0] == '=') exact = true, list.erase(0, 1);
  bool hit = false;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string tok = list.substr(pos, comma - pos);
    if (!tok.empty() && (exact ? tok == name : std::strncmp(name, tok.c_str(), tok.size()) == 0))
      hit = true;
    pos = comma + 1;
  }
  return exclude ? !hit : hit;
}

bool usable(const ifaddrs* ifa, int want_family) {
  if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) return false;
  int fam = ifa->ifa_addr->sa_family;
  if (fam != AF_INET && fam != AF_INET6) return false;
  if (want_family != AF_UNSPEC && fam != want_family) return false;
  if (fam == AF_INET6) {
    auto* a6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
    if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) return false;  // needs a scope id peers lack
  }
  return true;
}

}  // namespace

Status find_interface_address(SockAddr* out, std::string* ifname) {
  std::string spec, fam;
  GICL_CHECK(setting_string(Setting::kSocketIfname, &spec));
  GICL_CHECK(setting_string(Setting::kSocketFamily, &fam));
  int want = fam == "IPV4" ? AF_INET : fam == "IPV6" ? AF_INET6 : AF_UNSPEC;
  ifaddrs* list = nullptr;
  GICL_SYSCHECK(getifaddrs(&list), "getifaddrs");
  const ifaddrs* best = nullptr;
  // Two passes: the requested interfaces, then (only with no spec) loopback as a last resort.
  for (int pass = 0; pass < 2 && best == nullptr; ++pass) {
    if (pass == 1 && !spec.empty()) break;
    for (int prefer_v4 = 1; prefer_v4 >= 0 && best == nullptr; --prefer_v4) {
      for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
        if (!usable(ifa, want)) continue;
        if (prefer_v4 && want == AF_UNSPEC && ifa->ifa_addr->sa_family != AF_INET) continue;
        bool match = pass == 0 ? ifname_matches(spec, ifa->ifa_name)
                               : std::strncmp(ifa->ifa_name, "lo", 2) == 0;
        if (match) {
          best = ifa;
          break;
        }
      }
    }
  }
  if (best == nullptr) {
    freeifaddrs(list);
    return GICL_FAIL(
        GICL_INVALID_ARGUMENT,
        "no usable interface matches GICL_SOCKET_IFNAME='%s' with GICL_SOCKET_FAMILY=%s",
        spec.c_str(), fam.c_str());
  }
  out->len = best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::memset(&out->storage, 0, sizeof(out->storage));
  std::memcpy(&out->storage, best->ifa_addr, out->len);
  out->set_port(0);
  if (ifname) *ifname = best->ifa_name;
  freeifaddrs(list);
  return GICL_SUCCESS;
}

Status set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  GICL_SYSCHECK(flags, "fcntl(F_GETFL)");
  GICL_SYSCHECK(fcntl(fd, F_SETFL, flags | O_NONBLOCK), "fcntl(F_SETFL)");
  return GICL_SUCCESS;
}

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

namespace {
/// The soft limit on open descriptors up to the hard one, once per process (as NCCL does): a
/// listener of the bootstrap may hold a connection per rank and some half-open ones besides.
void raise_fd_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit l{};
    if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur >= l.rlim_max) return;
    const rlim_t was = l.rlim_cur;
    l.rlim_cur = l.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &l) == 0)
      GICL_INFO(kSubsysBootstrap, "open file limit raised from %llu to %llu",
                static_cast<unsigned long long>(was), static_cast<unsigned long long>(l.rlim_max));
  });
}
}  // namespace

Status listen_on(const SockAddr& addr, int backlog, int* fd, SockAddr* bound) {
  raise_fd_limit();
  int s = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  GICL_SYSCHECK(s, "socket");
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0 ||
      ::listen(s, backlog) != 0) {
    int err = errno;
    ::close(s);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "cannot listen on %s: %s", addr.str().c_str(),
                     strerror(err));
  }
  bound->len = sizeof(bound->storage);
  if (getsockname(s, reinterpret_cast<sockaddr*>(&bound->storage), &bound->len) != 0) {
    int err = errno;
    ::close(s);
    return GICL_FAIL(GICL_SYSTEM_ERROR, "getsockname: %s", strerror(err));
  }
  *fd = s;
  return GICL_SUCCESS;
}

Status connect_to(const SockAddr& addr, Deadline deadline, const CancelFlag* cancel,
                  const char* peer, int* fd, bool listening) {
  int backoff_ms = 1;
  for (;;) {
    if (cancelled(cancel)) return GICL_FAIL(GICL_ABORTED, "aborted while connecting to %s", peer);
    int s = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    GICL_SYSCHECK(s, "socket");
    int rc = ::connect(s, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      while (!deadline.expired() && !cancelled(cancel)) {
        int n = ::poll(&p, 1, deadline.poll_ms());
        if (n > 0) break;
        if (n < 0 && errno != EINTR) break;
      }
      socklen_t len = sizeof(err);
      if (p.revents == 0)
        err = ETIMEDOUT;
      else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    }
    if (err == 0) {
      int one = 1;
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      *fd = s;
      return GICL_SUCCESS;
    }
    ::close(s);
    if (listening && err == ECONNREFUSED)
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "%s refused our connection at %s: nothing listens there (its process ended)",
                       peer, addr.str().c_str());
    if (deadline.expired())
      return GICL_FAIL(GICL_TIMEOUT, "could not connect to %s at %s before the timeout: %s", peer,
                       addr.str().c_str(), strerror(err));
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN && err != ECONNRESET)
      return GICL_FAIL(GICL_SYSTEM_ERROR, "connect to %s at %s: %s", peer, addr.str().c_str(),
                       strerror(err));
    ::usleep(static_cast<useconds_t>(std::min(backoff_ms, deadline.poll_ms(50))) * 1000);
    backoff_ms = std::min(backoff_ms * 2, 50);
  }
}

namespace {
Status wait_fd(int fd, short events, Deadline deadline, const CancelFlag* cancel, const char* peer,
               const char* what) {
  for (;;) {
    if (cancelled(cancel)) return GICL_FAIL(GICL_ABORTED, "aborted while %s %s", what, peer);
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, deadline.poll_ms());
    if (n > 0) return GICL_SUCCESS;
    if (n < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
    if (deadline.expired()) return GICL_FAIL(GICL_TIMEOUT, "timed out %s %s", what, peer);
  }
}
}  // namespace

Status send_all(int fd, const void* buf, size_t n, Deadline deadline, const CancelFlag* cancel,
                const char* peer) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      GICL_CHECK(wait_fd(fd, POLLOUT, deadline, cancel, peer, "sending to"));
      continue;
    }
    return GICL_FAIL(GICL_REMOTE_ERROR, "send to %s failed: %s", peer,
                     k == 0 ? "connection closed" : strerror(errno));
  }
  return GICL_SUCCESS;
}

Status recv_all(int fd, void* buf, size_t n, Deadline deadline, const CancelFlag* cancel,
                const char* peer) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      GICL_CHECK(wait_fd(fd, POLLIN, deadline, cancel, peer, "waiting for"));
      continue;
    }
    return GICL_FAIL(GICL_REMOTE_ERROR, "%s closed its connection (%s)", peer,
                     k == 0 ? "end of stream" : strerror(errno));
  }
  return GICL_SUCCESS;
}

}  // namespace gicl
