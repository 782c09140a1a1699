// SPDX-License-Identifier: Apache-2.0
/// @file gicl.hpp
/// Header-only C++20 wrapper over gicl.h: RAII communicators, symmetric buffers, registrations and
/// groups, and collectives typed by their element (std::span<T>, the datatype deduced). Errors
/// become gicl::Error exceptions here, in the caller's code; the library itself never throws.
/// Destructors cannot throw: a failed release is written to gicl's log (gicl_log_warning).
#ifndef GICL_GICL_HPP_
#define GICL_GICL_HPP_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "gicl/gicl.h"

namespace gicl {

/// A failed gicl call: the result code and the library's message.
class Error : public std::runtime_error {
 public:
  Error(gicl_result_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The gicl_result_t of the failed call.
  gicl_result_t code() const noexcept { return code_; }

 private:
  gicl_result_t code_;
};

/// Throws gicl::Error when `r` is not GICL_SUCCESS.
inline void check(gicl_result_t r) {
  if (r != GICL_SUCCESS)
    throw Error(r, std::string(gicl_get_error_string(r)) + ": " + gicl_get_last_error());
}

namespace detail {
/// For destructors: a failed release is logged with what failed, never thrown or dropped.
inline void warn_on_failure(gicl_result_t r, const char* what) noexcept {
  if (r == GICL_SUCCESS) return;
  const std::string text = std::string(what) +
                           " failed in a destructor: " + gicl_get_error_string(r) + ": " +
                           gicl_get_last_error();
  gicl_log_warning(text.c_str());
}
inline void require(bool ok, const char* message) {
  if (!ok) throw Error(GICL_INVALID_ARGUMENT, std::string("invalid argument: ") + message);
}
}  // namespace detail

/// The gicl_datatype_t of an element type: datatype_v<float> == gicl_float32.
template <typename T>
struct datatype_of;
#define GICL_DATATYPE_OF(T, D)                  \
  template <>                                   \
  struct datatype_of<T> {                       \
    static constexpr gicl_datatype_t value = D; \
  };
GICL_DATATYPE_OF(int8_t, gicl_int8)
GICL_DATATYPE_OF(uint8_t, gicl_uint8)
GICL_DATATYPE_OF(int32_t, gicl_int32)
GICL_DATATYPE_OF(uint32_t, gicl_uint32)
GICL_DATATYPE_OF(int64_t, gicl_int64)
GICL_DATATYPE_OF(uint64_t, gicl_uint64)
GICL_DATATYPE_OF(__half, gicl_float16)
GICL_DATATYPE_OF(float, gicl_float32)
GICL_DATATYPE_OF(double, gicl_float64)
GICL_DATATYPE_OF(__nv_bfloat16, gicl_bfloat16)
GICL_DATATYPE_OF(__nv_fp8_e4m3, gicl_float8_e4m3)
GICL_DATATYPE_OF(__nv_fp8_e5m2, gicl_float8_e5m2)
#undef GICL_DATATYPE_OF
template <typename T>
inline constexpr gicl_datatype_t datatype_v = datatype_of<std::remove_cv_t<T>>::value;
/// The element types the collectives take.
template <typename T>
concept Element = requires {
  datatype_of<std::remove_cv_t<T>>::value;
};

/// A new unique id (starts the bootstrap root in this process).
inline gicl_unique_id_t make_unique_id() {
  gicl_unique_id_t id;
  check(gicl_get_unique_id(&id));
  return id;
}

/// Owns a gicl_comm_t. Destruction is gicl_comm_destroy (collective); call abort() to leave alone.
/// The collectives take spans of device memory and enqueue on `stream`, as gicl.h's calls.
class Communicator {
 public:
  /// Collective: joins rank `rank` of `nranks` with the calling thread's CUDA device.
  Communicator(int nranks, const gicl_unique_id_t& id, int rank) {
    check(gicl_comm_init_rank(&comm_, nranks, id, rank));
  }
  /// Joins a job started by gicl-run, torchrun, mpirun or srun (gicl_comm_init_env).
  static Communicator from_env() {
    gicl_comm_t c = nullptr;
    check(gicl_comm_init_env(&c));
    return Communicator(c);
  }
  /// Takes ownership of an existing handle (may be NULL).
  explicit Communicator(gicl_comm_t c) noexcept : comm_(c) {}
  Communicator(Communicator&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() { reset(); }

  /// Collective: gicl_comm_split. The result is empty (get() == nullptr) for GICL_SPLIT_NOCOLOR.
  Communicator split(int color, int key) const {
    gicl_comm_t c = nullptr;
    check(gicl_comm_split(comm_, color, key, &c));
    return Communicator(c);
  }
  /// Not collective: stops everything in flight and releases the communicator now.
  void abort() {
    if (comm_) check(gicl_comm_abort(std::exchange(comm_, nullptr)));
  }

  int rank() const {
    int r = -1;
    check(gicl_comm_rank(comm_, &r));
    return r;
  }
  int size() const {
    int s = -1;
    check(gicl_comm_size(comm_, &s));
    return s;
  }
  int device() const {
    int d = -1;
    check(gicl_comm_device(comm_, &d));
    return d;
  }
  gicl_comm_t get() const noexcept { return comm_; }
  explicit operator bool() const noexcept { return comm_ != nullptr; }

  /// recv[i] = op over ranks of send[i]; send and recv have the same length (may be the same).
  template <Element T>
  void allreduce(std::span<const T> send, std::span<T> recv, gicl_redop_t op,
                 cudaStream_t stream) const {
    detail::require(send.size() == recv.size(), "allreduce: send and recv differ in length");
    check(gicl_allreduce(send.data(), recv.data(), recv.size(), datatype_v<T>, op, comm_, stream));
  }
  /// In place.
  template <Element T>
  void allreduce(std::span<T> buf, gicl_redop_t op, cudaStream_t stream) const {
    allreduce(std::span<const T>(buf), buf, op, stream);
  }
  /// send holds size() blocks of recv.size() elements; this rank receives its block reduced.
  template <Element T>
  void reduce_scatter(std::span<const T> send, std::span<T> recv, gicl_redop_t op,
                      cudaStream_t stream) const {
    detail::require(send.size() == recv.size() * static_cast<size_t>(size()),
                    "reduce_scatter: send must hold size() x recv.size() elements");
    check(gicl_reduce_scatter(send.data(), recv.data(), recv.size(), datatype_v<T>, op, comm_,
                              stream));
  }
  /// recv block r (send.size() elements) = rank r's send.
  template <Element T>
  void allgather(std::span<const T> send, std::span<T> recv, cudaStream_t stream) const {
    detail::require(recv.size() == send.size() * static_cast<size_t>(size()),
                    "allgather: recv must hold size() x send.size() elements");
    check(gicl_allgather(send.data(), recv.data(), send.size(), datatype_v<T>, comm_, stream));
  }
  /// recv = root's send on every rank (send is read on the root only).
  template <Element T>
  void broadcast(std::span<const T> send, std::span<T> recv, int root, cudaStream_t stream) const {
    detail::require(send.empty() || send.size() == recv.size(),
                    "broadcast: send and recv differ in length");
    check(
        gicl_broadcast(send.data(), recv.data(), recv.size(), datatype_v<T>, root, comm_, stream));
  }
  /// In place.
  template <Element T>
  void broadcast(std::span<T> buf, int root, cudaStream_t stream) const {
    broadcast(std::span<const T>(buf), buf, root, stream);
  }
  /// The root's recv = op over ranks of send (recv is written on the root only).
  template <Element T>
  void reduce(std::span<const T> send, std::span<T> recv, gicl_redop_t op, int root,
              cudaStream_t stream) const {
    detail::require(recv.empty() || send.size() == recv.size(),
                    "reduce: send and recv differ in length");
    check(
        gicl_reduce(send.data(), recv.data(), send.size(), datatype_v<T>, op, root, comm_, stream));
  }
  /// Block j of send lands in block rank() of rank j's recv; both hold size() equal blocks.
  template <Element T>
  void alltoall(std::span<const T> send, std::span<T> recv, cudaStream_t stream) const {
    const size_t n = static_cast<size_t>(size());
    detail::require(send.size() == recv.size() && send.size() % n == 0,
                    "alltoall: send and recv must hold size() equal blocks each");
    check(gicl_alltoall(send.data(), recv.data(), send.size() / n, datatype_v<T>, comm_, stream));
  }
  template <Element T>
  void send(std::span<const T> buf, int peer, cudaStream_t stream) const {
    check(gicl_send(buf.data(), buf.size(), datatype_v<T>, peer, comm_, stream));
  }
  template <Element T>
  void recv(std::span<T> buf, int peer, cudaStream_t stream) const {
    check(gicl_recv(buf.data(), buf.size(), datatype_v<T>, peer, comm_, stream));
  }
  void barrier(cudaStream_t stream) const { check(gicl_barrier(comm_, stream)); }

 private:
  void reset() noexcept {
    if (comm_)
      detail::warn_on_failure(gicl_comm_destroy(std::exchange(comm_, nullptr)),
                              "gicl_comm_destroy");
  }
  gicl_comm_t comm_ = nullptr;
};

/// The calls of a scope issued together, as gicl_group_start / gicl_group_end: fused sends and
/// receives, one thread driving several communicators. end() reports the group's error; the
/// destructor ends a group still open (an exception left the scope) and logs a failure.
class Group {
 public:
  Group() { check(gicl_group_start()); }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() {
    if (open_) detail::warn_on_failure(gicl_group_end(), "gicl_group_end");
  }
  void end() {
    if (open_) {
      open_ = false;
      check(gicl_group_end());
    }
  }

 private:
  bool open_ = true;
};

/// A symmetric allocation of `count` objects of T (collective alloc and free on comm). The
/// communicator must outlive it.
template <typename T>
class SymmetricBuffer {
 public:
  SymmetricBuffer(const Communicator& comm, size_t count) : comm_(comm.get()), count_(count) {
    void* p = nullptr;
    check(gicl_mem_alloc(comm_, count * sizeof(T), &p));
    ptr_ = static_cast<T*>(p);
  }
  SymmetricBuffer(SymmetricBuffer&& o) noexcept
      : comm_(o.comm_), count_(std::exchange(o.count_, 0)), ptr_(std::exchange(o.ptr_, nullptr)) {}
  SymmetricBuffer& operator=(SymmetricBuffer&& o) noexcept {
    if (this != &o) {
      release();
      comm_ = o.comm_;
      count_ = std::exchange(o.count_, 0);
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  SymmetricBuffer(const SymmetricBuffer&) = delete;
  SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;
  /// Collective: every rank frees its buffers in the same order.
  ~SymmetricBuffer() { release(); }

  T* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return count_; }
  std::span<T> span() const noexcept { return {ptr_, count_}; }
  /// `peer`'s copy as a load/store pointer, or nullptr when the peer is not P2P-reachable.
  T* peer(int peer) const {
    void* p = nullptr;
    check(gicl_mem_peer_ptr(comm_, ptr_, peer, &p));
    return static_cast<T*>(p);
  }

 private:
  void release() noexcept {
    if (ptr_)
      detail::warn_on_failure(gicl_mem_free(comm_, std::exchange(ptr_, nullptr)), "gicl_mem_free");
  }
  gicl_comm_t comm_;
  size_t count_;
  T* ptr_ = nullptr;
};

/// gicl_comm_register for a scope: collectives on buffers inside the range run zero copy.
/// Collective at construction and destruction, in the same order on every rank; the memory must
/// outlive it.
class Registration {
 public:
  Registration(const Communicator& comm, void* buff, size_t bytes) : comm_(comm.get()) {
    check(gicl_comm_register(comm_, buff, bytes, &handle_));
  }
  template <typename T>
  Registration(const Communicator& comm, std::span<T> buf)
      : Registration(comm, const_cast<std::remove_const_t<T>*>(buf.data()), buf.size_bytes()) {}
  Registration(Registration&& o) noexcept
      : comm_(o.comm_), handle_(std::exchange(o.handle_, nullptr)) {}
  Registration& operator=(Registration&& o) noexcept {
    if (this != &o) {
      release();
      comm_ = o.comm_;
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() { release(); }
  void* handle() const noexcept { return handle_; }

 private:
  void release() noexcept {
    if (handle_)
      detail::warn_on_failure(gicl_comm_deregister(comm_, std::exchange(handle_, nullptr)),
                              "gicl_comm_deregister");
  }
  gicl_comm_t comm_;
  void* handle_ = nullptr;
};

}  // namespace gicl

#endif  // GICL_GICL_HPP_
