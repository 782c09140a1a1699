// A rank started by ccl-run (or mpirun): joins with ccl_comm_init_env, checks its identity,
// allgathers through a split, and exits with the code named by its arguments:
//   env_rank [fail_rank code]   rank fail_rank exits with `code` after init; others wait.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ccl/ccl.h"

int main(int argc, char** argv) {
  ccl_comm_t comm;
  if (ccl_comm_init_env(&comm) != CCL_SUCCESS) {
    std::fprintf(stderr, "init failed: %s\n", ccl_get_last_error());
    return 10;
  }
  int rank = -1, size = -1;
  ccl_comm_rank(comm, &rank);
  ccl_comm_size(comm, &size);
  if (rank != std::atoi(std::getenv("CCL_RANK")) ||
      size != std::atoi(std::getenv("CCL_WORLD_SIZE")))
    return 11;
  std::printf("hello from %d of %d\n", rank, size);
  if (argc == 3 && rank == std::atoi(argv[1])) return std::atoi(argv[2]);
  if (argc == 3) {
    sleep(60);  // the launcher must stop us when the failing rank exits
    return 12;
  }
  ccl_comm_t all;
  if (ccl_comm_split(comm, 0, rank, &all) != CCL_SUCCESS) return 13;
  if (ccl_comm_destroy(all) != CCL_SUCCESS || ccl_comm_destroy(comm) != CCL_SUCCESS) return 14;
  return 0;
}
