// SPDX-License-Identifier: Apache-2.0
#include "net/ofi/ofi_provider.hpp"

#include <rdma/fi_domain.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "common/log.hpp"

namespace gicl::net {

const char* const kOfiProviderOrder[5] = {"efa", "cxi", "verbs;ofi_rxm", "tcp;ofi_rxm", "shm"};

namespace {

constexpr uint64_t kBaseCaps =
    FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MSG | FI_SEND | FI_RECV;

/// The hints: what gicl can live with (EFA's modes and registration rules) and what it needs.
fi_info* make_hints(const OfiApi& api, const char* provider, bool hmem, bool atomics) {
  fi_info* h = api.dupinfo(nullptr);
  if (h == nullptr) return nullptr;
  h->caps = kBaseCaps | (hmem ? FI_HMEM : 0) | (atomics ? FI_ATOMIC : 0);
  h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                            FI_MR_ENDPOINT | (hmem ? FI_MR_HMEM : 0);
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->domain_attr->av_type = FI_AV_TABLE;
  // No ordering is asked for: nothing relies on it (EFA gives none).
  h->tx_attr->msg_order = FI_ORDER_NONE;
  h->rx_attr->msg_order = FI_ORDER_NONE;
  h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  h->fabric_attr->prov_name = strdup(provider);  // freed by freeinfo
  return h;
}

/// getinfo for one provider with the most it offers; false when it offers nothing usable.
/// Atomics matter more than GPU registration: without FI_HMEM the proxy stages through host
/// memory, without atomics the device API's remote atomics cannot run.
bool try_provider(const OfiApi& api, const char* provider, OfiChoice* out) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const bool hmem = attempt % 2 == 0, atomics = attempt < 2;
    fi_info* hints = make_hints(api, provider, hmem, atomics);
    if (hints == nullptr) return false;
    fi_info* info = nullptr;
    const int rc = api.getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
    api.freeinfo(hints);
    if (rc == 0 && info != nullptr) {
      out->info = info;
      out->hmem = hmem;
      out->atomics = atomics;
      return true;
    }
  }
  return false;
}

/// "tcp;ofi_rxm, shm, ..." : every provider with an RDM endpoint here, for error messages.
std::string offered(const OfiApi& api) {
  fi_info* hints = api.dupinfo(nullptr);
  if (hints == nullptr) return "?";
  hints->ep_attr->type = FI_EP_RDM;
  fi_info* list = nullptr;
  std::set<std::string> names;
  if (api.getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list) == 0) {
    for (fi_info* i = list; i != nullptr; i = i->next) names.insert(i->fabric_attr->prov_name);
    api.freeinfo(list);
  }
  api.freeinfo(hints);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

/// Keeps the entry of out->info whose domain is the first of `nics` (a copy of it alone, the
/// list freed), where the provider offers one.
void steer(const OfiApi& api, const std::vector<std::string>& nics, OfiChoice* out) {
  const fi_info* pick = ofi_domain_for(out->info, nics);
  if (pick == nullptr || pick == out->info) return;
  fi_info* one = api.dupinfo(pick);
  if (one == nullptr) return;  // keep the first domain
  api.freeinfo(out->info);
  out->info = one;
}

}  // namespace

const fi_info* ofi_domain_for(const fi_info* list, const std::vector<std::string>& nics) {
  for (const std::string& nic : nics)
    for (const fi_info* i = list; i != nullptr; i = i->next) {
      const char* d = i->domain_attr != nullptr ? i->domain_attr->name : nullptr;
      if (d == nullptr || std::strncmp(d, nic.c_str(), nic.size()) != 0) continue;
      if (d[nic.size()] == '\0' || d[nic.size()] == '-') return i;
    }
  return nullptr;
}

Status ofi_choose(const OfiApi& api, const std::string& wanted,
                  const std::vector<std::string>& nics, OfiChoice* out) {
  if (!wanted.empty()) {
    if (try_provider(api, wanted.c_str(), out)) {
      steer(api, nics, out);
      return GICL_SUCCESS;
    }
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "GICL_OFI_PROVIDER=%s: no such provider offers reliable datagram endpoints "
                     "with RMA and delivery-complete writes here (RDM providers here: %s)",
                     wanted.c_str(), offered(api).c_str());
  }
  for (const char* p : kOfiProviderOrder)
    if (try_provider(api, p, out)) {
      steer(api, nics, out);
      return GICL_SUCCESS;
    }
  return GICL_FAIL(GICL_SYSTEM_ERROR,
                   "no libfabric provider offers reliable datagram endpoints with RMA and "
                   "delivery-complete writes here (RDM providers here: %s)",
                   offered(api).c_str());
}

}  // namespace gicl::net
