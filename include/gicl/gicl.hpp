// SPDX-License-Identifier: Apache-2.0
/// @file gicl.hpp
/// Header-only C++ wrapper over gicl.h: RAII communicators and symmetric buffers. Errors become
/// gicl::Error exceptions here, in the caller's code; the library itself never throws.
#ifndef GICL_GICL_HPP_
#define GICL_GICL_HPP_

#include <cstddef>
#include <stdexcept>
#include <string>
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

/// A new unique id (starts the bootstrap root in this process).
inline gicl_unique_id_t make_unique_id() {
  gicl_unique_id_t id;
  check(gicl_get_unique_id(&id));
  return id;
}

/// Owns a gicl_comm_t. Destruction is gicl_comm_destroy (collective); call abort() to leave alone.
class Communicator {
 public:
  /// Collective: joins rank `rank` of `nranks` with the calling thread's CUDA device.
  Communicator(int nranks, const gicl_unique_id_t& id, int rank) {
    check(gicl_comm_init_rank(&comm_, nranks, id, rank));
  }
  /// Joins a job started by gicl-run, mpirun or srun (gicl_comm_init_env).
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

 private:
  void reset() noexcept {
    if (comm_) gicl_comm_destroy(std::exchange(comm_, nullptr));
  }
  gicl_comm_t comm_ = nullptr;
};

/// A symmetric allocation of `count` objects of T (collective alloc and free on comm).
template <typename T>
class SymmetricBuffer {
 public:
  SymmetricBuffer(const Communicator& comm, size_t count) : comm_(comm.get()), count_(count) {
    void* p = nullptr;
    check(gicl_mem_alloc(comm_, count * sizeof(T), &p));
    ptr_ = static_cast<T*>(p);
  }
  SymmetricBuffer(const SymmetricBuffer&) = delete;
  SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;
  ~SymmetricBuffer() {
    if (ptr_) gicl_mem_free(comm_, ptr_);
  }
  T* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return count_; }
  /// `peer`'s copy as a load/store pointer, or nullptr when the peer is not P2P-reachable.
  T* peer(int peer) const {
    void* p = nullptr;
    check(gicl_mem_peer_ptr(comm_, ptr_, peer, &p));
    return static_cast<T*>(p);
  }

 private:
  gicl_comm_t comm_;
  size_t count_;
  T* ptr_ = nullptr;
};

}  // namespace gicl

#endif  // GICL_GICL_HPP_
