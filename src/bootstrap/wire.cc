// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/wire.hpp"

#include <netinet/in.h>

namespace gicl::bootstrap {

WireAddr to_wire(const SockAddr& a) {
  WireAddr w{};
  w.family = static_cast<uint16_t>(a.family());
  w.port = static_cast<uint16_t>(a.port());
  if (a.family() == AF_INET) {
    std::memcpy(w.addr, &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr, 4);
  } else if (a.family() == AF_INET6) {
    auto* s6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    std::memcpy(w.addr, &s6->sin6_addr, 16);
    w.scope_id = s6->sin6_scope_id;
  }
  return w;
}

bool from_wire(const WireAddr& w, SockAddr* out) {
  *out = SockAddr{};
  if (w.family == AF_INET) {
    auto* s = reinterpret_cast<sockaddr_in*>(&out->storage);
    s->sin_family = AF_INET;
    std::memcpy(&s->sin_addr, w.addr, 4);
    out->len = sizeof(sockaddr_in);
  } else if (w.family == AF_INET6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(&out->storage);
    s->sin6_family = AF_INET6;
    std::memcpy(&s->sin6_addr, w.addr, 16);
    s->sin6_scope_id = w.scope_id;
    out->len = sizeof(sockaddr_in6);
  } else {
    return false;
  }
  out->set_port(w.port);
  return true;
}

}  // namespace gicl::bootstrap
