// SPDX-License-Identifier: Apache-2.0
// A rank started by gicl-run (or mpirun): joins with gicl_comm_init_env, checks its identity,
// allgathers through a split, and exits with the code named by its arguments:
//   env_rank [fail_rank code]   rank fail_rank exits with `code` after init; others wait.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "gicl/gicl.h"

int main(int argc, char** argv) {
  gicl_comm_t comm;
  if (gicl_comm_init_env(&comm) != GICL_SUCCESS) {
    std::fprintf(stderr, "init failed: %s\n", gicl_get_last_error());
    return 10;
  }
  int rank = -1, size = -1;
  gicl_comm_rank(comm, &rank);
  gicl_comm_size(comm, &size);
  if (rank != std::atoi(std::getenv("GICL_RANK")) ||
      size != std::atoi(std::getenv("GICL_WORLD_SIZE")))
    return 11;
  std::printf("hello from %d of %d\n", rank, size);
  if (argc == 3 && rank == std::atoi(argv[1])) return std::atoi(argv[2]);
  if (argc == 3) {
    sleep(60);  // the launcher must stop us when the failing rank exits
    return 12;
  }
  gicl_comm_t all;
  if (gicl_comm_split(comm, 0, rank, &all) != GICL_SUCCESS) return 13;
  if (gicl_comm_destroy(all) != GICL_SUCCESS || gicl_comm_destroy(comm) != GICL_SUCCESS) return 14;
  return 0;
}
