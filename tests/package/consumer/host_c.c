/* SPDX-License-Identifier: Apache-2.0 */
/* A C11 host program against the installed package: the version, the size parser, and an
 * argument error that names the argument. Needs no GPU. */
#include <gicl/gicl.h>
#include <stdio.h>
#include <string.h>

#if GICL_VERSION_CODE < GICL_VERSION(0, 1, 0)
#error "gicl 0.1 or newer"
#endif

int main(void) {
  int version = 0;
  size_t bytes = 0;
  if (gicl_get_version(&version) != GICL_SUCCESS || version != GICL_VERSION_CODE) {
    fprintf(stderr, "library version %d, header %d\n", version, GICL_VERSION_CODE);
    return 1;
  }
  if (gicl_parse_size("4M", &bytes) != GICL_SUCCESS || bytes != 4u << 20) return 2;
  if (gicl_allreduce(NULL, NULL, 1, gicl_float32, gicl_sum, NULL, NULL) != GICL_INVALID_ARGUMENT ||
      strstr(gicl_get_last_error(), "comm") == NULL) {
    fprintf(stderr, "expected an error naming comm, got: %s\n", gicl_get_last_error());
    return 3;
  }
  printf("host_c: gicl %d.%d.%d, argument errors named\n", GICL_MAJOR, GICL_MINOR, GICL_PATCH);
  return 0;
}
