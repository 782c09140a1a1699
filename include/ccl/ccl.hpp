/// @file ccl.hpp
/// Header-only C++ wrapper over ccl.h: RAII communicators and symmetric buffers. Errors become
/// ccl::Error exceptions here, in the caller's code; the library itself never throws.
#ifndef CCL_CCL_HPP_
#define CCL_CCL_HPP_

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "ccl/ccl.h"

namespace ccl {

/// A failed ccl call: the result code and the library's message.
class Error : public std::runtime_error {
 public:
  Error(ccl_result_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The ccl_result_t of the failed call.
  ccl_result_t code() const noexcept { return code_; }

 private:
  ccl_result_t code_;
};

/// Throws ccl::Error when `r` is not CCL_SUCCESS.
inline void check(ccl_result_t r) {
  if (r != CCL_SUCCESS)
    throw Error(r, std::string(ccl_get_error_string(r)) + ": " + ccl_get_last_error());
}

/// A new unique id (starts the bootstrap root in this process).
inline ccl_unique_id_t make_unique_id() {
  ccl_unique_id_t id;
  check(ccl_get_unique_id(&id));
  return id;
}

/// Owns a ccl_comm_t. Destruction is ccl_comm_destroy (collective); call abort() to leave alone.
class Communicator {
 public:
  /// Collective: joins rank `rank` of `nranks` with the calling thread's CUDA device.
  Communicator(int nranks, const ccl_unique_id_t& id, int rank) {
    check(ccl_comm_init_rank(&comm_, nranks, id, rank));
  }
  /// Joins a job started by ccl-run, mpirun or srun (ccl_comm_init_env).
  static Communicator from_env() {
    ccl_comm_t c = nullptr;
    check(ccl_comm_init_env(&c));
    return Communicator(c);
  }
  /// Takes ownership of an existing handle (may be NULL).
  explicit Communicator(ccl_comm_t c) noexcept : comm_(c) {}
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

  /// Collective: ccl_comm_split. The result is empty (get() == nullptr) for CCL_SPLIT_NOCOLOR.
  Communicator split(int color, int key) const {
    ccl_comm_t c = nullptr;
    check(ccl_comm_split(comm_, color, key, &c));
    return Communicator(c);
  }
  /// Not collective: stops everything in flight and releases the communicator now.
  void abort() {
    if (comm_) check(ccl_comm_abort(std::exchange(comm_, nullptr)));
  }

  int rank() const {
    int r = -1;
    check(ccl_comm_rank(comm_, &r));
    return r;
  }
  int size() const {
    int s = -1;
    check(ccl_comm_size(comm_, &s));
    return s;
  }
  int device() const {
    int d = -1;
    check(ccl_comm_device(comm_, &d));
    return d;
  }
  ccl_comm_t get() const noexcept { return comm_; }
  explicit operator bool() const noexcept { return comm_ != nullptr; }

 private:
  void reset() noexcept {
    if (comm_) ccl_comm_destroy(std::exchange(comm_, nullptr));
  }
  ccl_comm_t comm_ = nullptr;
};

/// A symmetric allocation of `count` objects of T (collective alloc and free on comm).
template <typename T>
class SymmetricBuffer {
 public:
  SymmetricBuffer(const Communicator& comm, size_t count) : comm_(comm.get()), count_(count) {
    void* p = nullptr;
    check(ccl_mem_alloc(comm_, count * sizeof(T), &p));
    ptr_ = static_cast<T*>(p);
  }
  SymmetricBuffer(const SymmetricBuffer&) = delete;
  SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;
  ~SymmetricBuffer() {
    if (ptr_) ccl_mem_free(comm_, ptr_);
  }
  T* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return count_; }
  /// `peer`'s copy as a load/store pointer, or nullptr when the peer is not P2P-reachable.
  T* peer(int peer) const {
    void* p = nullptr;
    check(ccl_mem_peer_ptr(comm_, ptr_, peer, &p));
    return static_cast<T*>(p);
  }

 private:
  ccl_comm_t comm_;
  size_t count_;
  T* ptr_ = nullptr;
};

}  // namespace ccl

#endif  // CCL_CCL_HPP_
