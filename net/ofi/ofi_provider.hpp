// SPDX-License-Identifier: Apache-2.0
// Which libfabric provider and domain a process uses: GICL_OFI_PROVIDER when set, else the first
// of efa, cxi, verbs;ofi_rxm, tcp;ofi_rxm and shm that offers reliable datagram endpoints with RMA
// and delivery-complete writes. GPU memory registration (FI_HMEM) and atomics are asked for first
// and dropped when the provider lacks them; the caller learns which it got.
#pragma once

#include <string>
#include <vector>

#include "net/ofi/ofi_api.hpp"

namespace gicl::net {

struct OfiChoice {
  fi_info* info = nullptr;  // owned: freed with api->freeinfo
  bool hmem = false;
  bool atomics = false;
};

/// The preference order of the default choice.
extern const char* const kOfiProviderOrder[5];

/// Chooses the provider (`wanted`, or the order above when empty) and, among its domains, the
/// first whose name is one of `nics` (the GPU's closest NICs, nearest first; a domain named
/// "<nic>-..." counts, as EFA's "rdmap0s6-rdm"), else the provider's first. An unknown or unusable
/// provider is an error listing the ones that this machine offers.
Status ofi_choose(const OfiApi& api, const std::string& wanted,
                  const std::vector<std::string>& nics, OfiChoice* out);

/// The entry of `list` (fi_getinfo's, one per domain) whose domain is the first of `nics` it
/// offers, or nullptr when it offers none of them.
const fi_info* ofi_domain_for(const fi_info* list, const std::vector<std::string>& nics);

}  // namespace gicl::net
