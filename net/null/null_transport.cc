// SPDX-License-Identifier: Apache-2.0
#include "net/null/null_transport.hpp"

#include <cstring>

#include "net/table_transport.hpp"

namespace gicl::net {
namespace {

class NullRegion : public Region {
 public:
  NullRegion(void* base, size_t bytes, MemKind kind) {
    base_ = base;
    bytes_ = bytes;
    kind_ = kind;
    key_.version = RemoteKey::kVersion;
    key_.backend = static_cast<uint8_t>(Backend::kNull);
    key_.addr = reinterpret_cast<uintptr_t>(base);
    key_.bytes = bytes;
  }
};

class NullTransport : public TableTransport {
 public:
  explicit NullTransport(const OpenArgs& a) {
    args_ = a;
    table_.init(a.nranks, a.max_inflight);
  }

  Backend backend() const override { return Backend::kNull; }
  std::string provider() const override { return "null"; }
  std::string describe() const override { return "null (completes at once, moves no data)"; }
  Caps caps() const override { return Caps{true, true, size_t{1} << 40, 8}; }

  size_t address_bytes() const override { return sizeof(int); }
  Status local_address(void* out) const override {
    std::memcpy(out, &args_.rank, sizeof(int));
    return GICL_SUCCESS;
  }
  Status connect(const void*, size_t) override { return GICL_SUCCESS; }

  Status register_memory(void* base, size_t bytes, MemKind kind,
                         std::unique_ptr<Region>* out) override {
    GICL_ARG_CHECK(base != nullptr && bytes > 0, "net register: empty region %p + %zu bytes", base,
                   bytes);
    *out = std::make_unique<NullRegion>(base, bytes, kind);
    return GICL_SUCCESS;
  }

  Status write(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
               size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_peer("write", peer, args_.nranks));
    GICL_CHECK(check_local("write", "src_ptr", src, p, bytes));
    GICL_CHECK(check_remote("write", peer, Backend::kNull, dst, off, bytes));
    return done(peer, cookie, 0);
  }
  Status write_imm(int peer, const Region& src, const void* p, const RemoteKey& dst, uint64_t off,
                   size_t bytes, uint64_t, uint64_t cookie, Completion) override {
    GICL_CHECK(check_peer("write_imm", peer, args_.nranks));
    GICL_CHECK(check_local("write_imm", "src_ptr", src, p, bytes));
    GICL_CHECK(check_remote("write_imm", peer, Backend::kNull, dst, off, bytes));
    return done(peer, cookie, 0);
  }
  Status read(int peer, const Region& dst, void* p, const RemoteKey& src, uint64_t off,
              size_t bytes, uint64_t cookie) override {
    GICL_CHECK(check_peer("read", peer, args_.nranks));
    GICL_CHECK(check_local("read", "dst_ptr", dst, p, bytes));
    GICL_CHECK(check_remote("read", peer, Backend::kNull, src, off, bytes));
    return done(peer, cookie, 0);
  }
  Status atomic(int peer, AtomicOp op, const RemoteKey& dst, uint64_t off, uint64_t, uint64_t,
                uint64_t cookie) override {
    GICL_CHECK(check_peer(atomic_op_name(op), peer, args_.nranks));
    GICL_CHECK(check_atomic(atomic_op_name(op), peer, Backend::kNull, dst, off));
    return done(peer, cookie, 0);
  }

 protected:
  Status progress() override { return GICL_SUCCESS; }  // every operation completed when posted

 private:
  Status done(int peer, uint64_t cookie, uint64_t value) {
    table_.complete(table_.begin(peer, cookie, 0), GICL_SUCCESS, value);
    return GICL_SUCCESS;
  }
};

}  // namespace

Status open_null(const OpenArgs& args, std::unique_ptr<Transport>* out) {
  *out = std::make_unique<NullTransport>(args);
  return GICL_SUCCESS;
}

}  // namespace gicl::net
