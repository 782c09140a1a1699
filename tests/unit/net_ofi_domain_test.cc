// SPDX-License-Identifier: Apache-2.0
// Which of a provider's domains the libfabric backend takes: the first of the GPU's closest NICs
// (NIC affinity, nearest first) that the provider offers, by its name or its name and a "-..."
// suffix (EFA's "rdmap0s6-rdm"); none of them, the provider's first.
#include <gtest/gtest.h>

#include <rdma/fabric.h>

#include <string>
#include <vector>

#include "net/ofi/ofi_provider.hpp"

namespace gicl::net {
namespace {

TEST(OfiDomain, TheFirstOfTheGpusNicsThatTheProviderOffersIsTaken) {
  char n0[] = "eth0", n1[] = "rdmap0s6-rdm", n2[] = "mlx5_1";
  fi_domain_attr d[3]{};
  fi_info i[3]{};
  char* names[3] = {n0, n1, n2};
  for (int k = 0; k < 3; ++k) {
    d[k].name = names[k];
    i[k].domain_attr = &d[k];
    i[k].next = k < 2 ? &i[k + 1] : nullptr;
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(ofi_domain_for(i, V{"ib9", "mlx5_1", "rdmap0s6"}), &i[2]);  // nearest first
  EXPECT_EQ(ofi_domain_for(i, V{"rdmap0s6"}), &i[1]);                   // "<nic>-..." counts
  EXPECT_EQ(ofi_domain_for(i, V{"rdmap0"}), nullptr);  // a prefix of a name does not
  EXPECT_EQ(ofi_domain_for(i, V{"mlx5_"}), nullptr);
  EXPECT_EQ(ofi_domain_for(i, V{"eth0", "mlx5_1"}), &i[0]);
  EXPECT_EQ(ofi_domain_for(i, V{}), nullptr);
  EXPECT_EQ(ofi_domain_for(nullptr, V{"eth0"}), nullptr);
  d[0].name = nullptr;  // a domain without a name is passed over
  EXPECT_EQ(ofi_domain_for(i, V{"eth0", "mlx5_1"}), &i[2]);
}

}  // namespace
}  // namespace gicl::net
