// In one process: export a VMM allocation as a POSIX fd, import it back (as a thread-rank of the
// same process does), map both, check a store through one is seen through the other; tear down
// (releasing the imported handle too), then do it again with a new allocation (fd numbers are
// recycled). Does the second import refer to the second allocation?
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CU(x) do { CUresult e = (x); if (e != CUDA_SUCCESS) { const char* s; cuGetErrorString(e, &s); printf("%s: %s\n", #x, s); } } while (0)
int main() {
  cudaSetDevice(0); cudaFree(0);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0; CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const size_t size = gran;
  CUmemAccessDesc acc{}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int round = 0; round < 6; ++round) {
    CUmemGenericAllocationHandle h, hi;
    CU(cuMemCreate(&h, size, &prop, 0));
    int fd = -1; CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int fd2 = dup(fd); close(fd);
    CU(cuMemImportFromShareableHandle(&hi, (void*)(uintptr_t)fd2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd2);
    CUdeviceptr va;
    CU(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));
    CU(cuMemMap(va, size, 0, h, 0)); CU(cuMemSetAccess(va, size, &acc, 1));
    CU(cuMemMap(va + size, size, 0, hi, 0)); CU(cuMemSetAccess(va + size, size, &acc, 1));
    const unsigned v = 0x1000 + round;
    CU(cuMemsetD32(va, v, 1)); cudaDeviceSynchronize();
    unsigned got = 0; CU(cuMemcpyDtoH(&got, va + size, 4));
    printf("round %d: fd %d, fd2 %d, handle %#llx, imported %#llx (%s), wrote %#x, read back through the import %#x %s\n",
           round, fd, fd2, (unsigned long long)h, (unsigned long long)hi, h == hi ? "same" : "different", v, got, got == v ? "OK" : "STALE");
    // Teardown as ~SymmetricHeap of two thread-ranks: unmap, release own and imported handles.
    CU(cuMemUnmap(va, size)); CU(cuMemUnmap(va + size, size));
    CU(cuMemRelease(hi)); CU(cuMemRelease(h));
    CU(cuMemAddressFree(va, 2 * size));
  }
  // Interleaved: two allocations alive, a stale import of the first after its release.
  return 0;
}
