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

Status decode_unique_id(const void* bytes, size_t n, UniqueIdData* out) {
  if (n < sizeof(UniqueIdData))
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "a unique id of %zu bytes is shorter than %zu", n,
                     sizeof(UniqueIdData));
  std::memcpy(out, bytes, sizeof(*out));
  SockAddr root;
  if (out->version != kWireVersion)
    return GICL_FAIL(
        GICL_INVALID_ARGUMENT,
        "id is not a unique id from gicl_get_unique_id (or from another gicl version)");
  if (!from_wire(out->root, &root))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "id holds no root address (family %u): not a unique id from "
                     "gicl_get_unique_id",
                     out->root.family);
  return GICL_SUCCESS;
}

const char* hello_problem(const WireHeader& h, const Hello& hello, MsgType type, int nranks) {
  if (h.type != static_cast<uint32_t>(type) || h.length != sizeof(Hello))
    return "not a hello of the expected type and length";
  if (hello.version != kWireVersion) return "wrong protocol version";
  if (hello.nranks <= 0 || (nranks > 0 && hello.nranks != nranks))
    return "rank count differs from the job's";
  if (hello.rank < 0 || hello.rank >= hello.nranks) return "rank out of range";
  return nullptr;
}

Status take_messages(std::vector<char>* rx, std::deque<WireMessage>* out, const char* from) {
  size_t off = 0;
  Status s;
  while (rx->size() - off >= sizeof(WireHeader)) {
    WireHeader h;
    std::memcpy(&h, rx->data() + off, sizeof(h));
    if (h.type != static_cast<uint32_t>(MsgType::kData) || h.length > kMaxMessageBytes) {
      s = GICL_FAIL(GICL_REMOTE_ERROR, "%s sent a malformed message (type %u, %llu bytes)", from,
                    h.type, static_cast<unsigned long long>(h.length));
      break;
    }
    if (rx->size() - off - sizeof(h) < h.length) break;
    const char* p = rx->data() + off + sizeof(h);
    out->push_back({h.tag, std::vector<char>(p, p + h.length)});
    off += sizeof(h) + h.length;
  }
  rx->erase(rx->begin(), rx->begin() + static_cast<long>(off));
  return s;
}

}  // namespace gicl::bootstrap
