// SPDX-License-Identifier: Apache-2.0
// Libraries loaded at run time (libfabric, rdma-core), so that libgicl.so loads where they are
// absent: the library opened once for the process's life (providers keep threads, handlers and
// per-device state behind it) and its entry points looked up one by one, the first missing one
// named in the error.
#pragma once

#include <dlfcn.h>

#include <string>

namespace gicl {

class SharedLibrary {
 public:
  /// Opens `name` (never closed); on failure error() says why and `install` how to get it.
  SharedLibrary(const char* name, const char* install) : name_(name) {
    lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      const char* e = dlerror();
      error_ =
          std::string("cannot load ") + name + " (" + (e != nullptr ? e : "?") + "): " + install;
    }
  }
  bool loaded() const { return lib_ != nullptr; }
  /// Looks `symbol` up into *out; false (error() naming it) when it is missing and `required`.
  /// Chained with &&, the lookups stop at the first missing one.
  template <typename F>
  bool sym(const char* symbol, F* out, bool required = true) {
    *out = reinterpret_cast<F>(dlsym(lib_, symbol));
    if (*out == nullptr && required) error_ = std::string(name_) + " lacks " + symbol;
    return *out != nullptr || !required;
  }
  /// Empty while loaded and every required symbol was found.
  const std::string& error() const { return error_; }

 private:
  const char* name_;
  void* lib_ = nullptr;
  std::string error_;
};

}  // namespace gicl
