// SPDX-License-Identifier: Apache-2.0
#include "net/transport.hpp"

#include <algorithm>

#include "common/settings.hpp"
#include "net/endpoints/multi_endpoint.hpp"
#include "net/null/null_transport.hpp"
#ifdef GICL_HAVE_OFI
#include "net/ofi/ofi_transport.hpp"
#endif
#ifdef GICL_HAVE_VERBS
#include "net/verbs/verbs_transport.hpp"
#endif

namespace gicl::net {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kNull:
      return "null";
    case Backend::kOfi:
      return "ofi";
    case Backend::kVerbs:
      return "verbs";
  }
  return "?";
}

const char* atomic_op_name(AtomicOp op) {
  switch (op) {
    case AtomicOp::kAdd:
      return "atomic add";
    case AtomicOp::kFetchAdd:
      return "atomic fetch_add";
    case AtomicOp::kSwap:
      return "atomic swap";
    case AtomicOp::kCompareSwap:
      return "atomic compare_swap";
  }
  return "atomic ?";
}

namespace {

Status open_one(Backend backend, const OpenArgs& args, std::unique_ptr<Transport>* out) {
  switch (backend) {
    case Backend::kNull:
      return open_null(args, out);
    case Backend::kOfi:
#ifdef GICL_HAVE_OFI
      return open_ofi(args, out);
#else
      break;
#endif
    case Backend::kVerbs:
#ifdef GICL_HAVE_VERBS
      return open_verbs(args, out);
#else
      break;
#endif
  }
  return GICL_FAIL(GICL_UNSUPPORTED, "net: the %s backend is not built", backend_name(backend));
}

}  // namespace

Status open_transport(Backend backend, const OpenArgs& args_in, std::unique_ptr<Transport>* out) {
  OpenArgs args = args_in;
  if (args.timeout_ms < 0) GICL_CHECK(setting_int(Setting::kNetTimeout, &args.timeout_ms));
  int64_t endpoints = 0;
  GICL_CHECK(setting_int(Setting::kNetEndpoints, &endpoints));
  if (backend == Backend::kNull) return open_one(backend, args, out);
  if (backend == Backend::kVerbs && endpoints > 1)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "GICL_NET_ENDPOINTS=%lld: the verbs backend's keys differ per protection "
                     "domain, so it takes one endpoint",
                     static_cast<long long>(endpoints));
  const size_t rails = backend == Backend::kVerbs ? 0 : args.rails.size();
  if (backend == Backend::kVerbs && !args.rails.empty()) args.nics = args.rails[0];
  // Endpoint k's arguments: its rail's NIC where there are rails.
  auto part = [&](size_t k) {
    OpenArgs a = args;
    if (rails > 1) a.nics = args.rails[k % rails];
    return a;
  };
  std::vector<std::unique_ptr<Transport>> parts(1);
  GICL_CHECK(open_one(backend, part(0), &parts[0]));
  if (endpoints == 0) endpoints = auto_endpoints(parts[0]->provider());
  if (rails > 1) endpoints = std::max<int64_t>(endpoints, static_cast<int64_t>(rails));
  if (endpoints == 1) {
    *out = std::move(parts[0]);
    return GICL_SUCCESS;
  }
  parts.resize(static_cast<size_t>(endpoints));
  for (size_t k = 1; k < parts.size(); ++k) GICL_CHECK(open_one(backend, part(k), &parts[k]));
  return open_multi_endpoint(std::move(parts), args.nranks, args.max_inflight, out);
}

int auto_endpoints(const std::string& provider) {
  // A provider over kernel TCP sockets moves data on the thread that progresses it: one
  // endpoint carries about 2-2.5 GB/s each way on loopback, four 6-8 (docs/transports.md).
  const bool sockets = provider.rfind("tcp", 0) == 0 || provider.rfind("sockets", 0) == 0;
  return sockets ? 4 : 1;
}

}  // namespace gicl::net
