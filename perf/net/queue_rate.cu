// SPDX-License-Identifier: Apache-2.0
// queue_rate: descriptors per second from many GPU threads into one network-proxy ring, read by
// one host thread that completes each operation at once (what the null backend gives the proxy):
// the queue's own ceiling, before any transport. One GPU, no communicator.
//
// Each of C blocks x T threads (or each warp's lane 0 with --warp) posts N one-slot puts; the
// reader checks every producer's sequence. Rows: producers, operations, median time of R runs,
// million descriptors per second. --slots-in managed puts the slots in device memory that the
// host reads (CUDA managed memory, preferred on the GPU, accessed by the CPU) instead of pinned
// host memory that the GPU writes: the alternative placement the ring's design was chosen over.
#include <cuda_runtime.h>
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/checks.hpp"
#include "gicl/device/detail/proxy_ring.cuh"
#include "proxy/ring_memory.hpp"
#include "proxy/ring_reader.hpp"

namespace {

struct Options {
  std::vector<int> ctas{1, 8, 32, 132};
  int threads = 256;
  int per = 256;  // operations per producer
  uint32_t slots = 1u << 16;
  int reps = 5;
  bool warp = false;
  bool managed = false;  // slots in managed device memory instead of pinned host memory
  std::string json;
};

void usage(FILE* out, const char* prog) {
  std::fprintf(out,
               "usage: %s [flags]\n"
               "Descriptors/s from GPU threads into one proxy ring read by one host thread.\n"
               "  -c, --ctas LIST     block counts, comma-separated (default 1,8,32,132)\n"
               "  -t, --threads N     threads per block (default 256)\n"
               "  -n, --ops N         operations per producer (default 256)\n"
               "  -s, --slots N       ring slots, a power of two (default 65536)\n"
               "  -r, --reps N        repetitions; the median is reported (default 5)\n"
               "      --warp          one producer per warp (lane 0) instead of every thread\n"
               "      --slots-in M    pinned (host memory, the library's) or managed (device)\n"
               "  -J, --output_file F also write the rows as JSON (--json F too)\n"
               "  -h, --help          this text\n",
               prog);
}

Options parse(int argc, char** argv) {
  Options o;
  enum : int { kWarp = 256, kSlotsIn };
  static const option kLong[] = {{"ctas", required_argument, nullptr, 'c'},
                                 {"threads", required_argument, nullptr, 't'},
                                 {"ops", required_argument, nullptr, 'n'},
                                 {"slots", required_argument, nullptr, 's'},
                                 {"reps", required_argument, nullptr, 'r'},
                                 {"warp", no_argument, nullptr, kWarp},
                                 {"slots-in", required_argument, nullptr, kSlotsIn},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "c:t:n:s:r:J:h", kLong, nullptr)) != -1;) {
    switch (c) {
      case 'c': {
        o.ctas.clear();
        for (const char* p = optarg; *p;) {
          char* end = nullptr;
          const long v = std::strtol(p, &end, 10);
          if (end == p || v <= 0) {
            std::fprintf(stderr, "--ctas: '%s' is not a list of positive counts\n", optarg);
            std::exit(2);
          }
          o.ctas.push_back(static_cast<int>(v));
          p = *end == ',' ? end + 1 : end;
        }
        break;
      }
      case 't':
        o.threads = std::atoi(optarg);
        break;
      case 'n':
        o.per = std::atoi(optarg);
        break;
      case 's':
        o.slots = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 10));
        break;
      case 'r':
        o.reps = std::atoi(optarg);
        break;
      case kWarp:
        o.warp = true;
        break;
      case kSlotsIn:
        if (std::strcmp(optarg, "pinned") != 0 && std::strcmp(optarg, "managed") != 0) {
          std::fprintf(stderr, "--slots-in: '%s' is neither pinned nor managed\n", optarg);
          std::exit(2);
        }
        o.managed = std::strcmp(optarg, "managed") == 0;
        break;
      case 'J':
        o.json = optarg;
        break;
      case 'h':
        usage(stdout, argv[0]);
        std::exit(0);
      default:
        usage(stderr, argv[0]);
        std::exit(2);
    }
  }
  if (o.threads <= 0 || o.threads > 1024 || o.per <= 0 || o.reps <= 0 || o.ctas.empty()) {
    std::fprintf(stderr, "threads must be 1..1024; ops, reps and ctas positive\n");
    std::exit(2);
  }
  return o;
}

__global__ void produce(gicl::dev::detail::Reporter r, gicl::ProxyRing q, int per, bool warp) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (warp && (threadIdx.x & 31) != 0) return;
  const uint32_t id = warp ? tid / 32 : tid;
  for (int s = 0; s < per; ++s) {
    uint64_t w[2 * gicl::kProxyMaxSlots];
    const uint32_t n = gicl::proxy_encode_transfer(w, gicl::ProxyOp::kPut, id, s, s, 8);
    if (gicl::proxy_submit(r, q, w, n, GICL_OP_PUT, 0) == ~uint64_t{0}) return;
  }
}

struct Reporter {
  Reporter() {
    PERF_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&state), sizeof(*state), cudaHostAllocMapped));
    std::memset(state, 0, sizeof(*state));
    PERF_CUDA(cudaMalloc(reinterpret_cast<void**>(&lock), sizeof(uint32_t)));
    PERF_CUDA(cudaMemset(lock, 0, sizeof(uint32_t)));
    gicl_device_state_t* dev = nullptr;
    PERF_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), state, 0));
    r = {dev, lock, nullptr, 0, 10'000'000'000ull, 0, 1};
  }
  gicl_device_state_t* state = nullptr;
  uint32_t* lock = nullptr;
  gicl::dev::detail::Reporter r{};
};

/// One run on a fresh ring: seconds from launch to the last operation read.
double run_once(const Options& o, int ctas, const Reporter& rep) {
  std::unique_ptr<gicl::proxy::RingMemory> mem;
  if (!gicl::proxy::RingMemory::create(0, o.slots, &mem).ok()) {
    std::fprintf(stderr, "ring: %s\n", gicl::last_error());
    std::exit(4);
  }
  gicl::ProxyRing ring = mem->ring();
  gicl::ProxySlot* managed = nullptr;
  if (o.managed) {
    const size_t bytes = size_t{o.slots} * sizeof(gicl::ProxySlot);
    PERF_CUDA(cudaMallocManaged(reinterpret_cast<void**>(&managed), bytes));
    std::memset(managed, 0, bytes);
    cudaMemLocation gpu{cudaMemLocationTypeDevice, 0}, cpu{cudaMemLocationTypeHost, 0};
    PERF_CUDA(cudaMemAdvise(managed, bytes, cudaMemAdviseSetPreferredLocation, gpu));
    PERF_CUDA(cudaMemAdvise(managed, bytes, cudaMemAdviseSetAccessedBy, cpu));
    PERF_CUDA(cudaMemPrefetchAsync(managed, bytes, gpu, 0, nullptr));
    PERF_CUDA(cudaDeviceSynchronize());
    ring.slots = managed;
  }
  gicl::proxy::RingReader rd(o.managed ? managed : mem->slots(), o.slots, mem->tail(), mem->done());
  const uint64_t producers = uint64_t(ctas) * o.threads / (o.warp ? 32 : 1);
  const uint64_t total = producers * o.per;
  std::vector<uint32_t> next(producers, 0);
  const auto t0 = std::chrono::steady_clock::now();
  produce<<<ctas, o.threads>>>(rep.r, ring, o.per, o.warp);
  PERF_CUDA(cudaGetLastError());
  uint64_t got = 0;
  while (got < total) {
    gicl::ProxyRequest q{};
    uint64_t t = 0;
    if (!rd.next(&q, &t)) {
      rd.publish_tail(true);
      if (__atomic_load_n(&rep.state->error.state, __ATOMIC_ACQUIRE) != 0) {
        std::fprintf(stderr, "a producer failed (kind %u)\n", rep.state->error.kind);
        std::exit(5);
      }
      continue;
    }
    if (q.peer >= producers || q.dst != next[q.peer]) {
      std::fprintf(stderr, "ticket %llu: producer %u sequence %llu, expected %u\n",
                   static_cast<unsigned long long>(t), q.peer,
                   static_cast<unsigned long long>(q.dst), q.peer < producers ? next[q.peer] : 0);
      std::exit(5);
    }
    ++next[q.peer];
    ++got;
    rd.complete(t);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  PERF_CUDA(cudaDeviceSynchronize());
  if (managed != nullptr) PERF_CUDA(cudaFree(managed));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::fprintf(stderr, "queue_rate needs a GPU\n");
    return 2;
  }
  PERF_CUDA(cudaSetDevice(0));
  Reporter rep;
  run_once(o, 1, rep);  // warm-up: module load, first PCIe mappings
  std::printf("# queue_rate: %d threads/block, %d ops/producer, %u slots in %s, %s producers\n",
              o.threads, o.per, o.slots, o.managed ? "managed device memory" : "pinned host memory",
              o.warp ? "warp" : "thread");
  std::printf("%8s %10s %12s %10s %12s\n", "ctas", "producers", "operations", "time_ms", "Mdesc/s");
  std::string rows;
  for (int ctas : o.ctas) {
    std::vector<double> t;
    for (int i = 0; i < o.reps; ++i) t.push_back(run_once(o, ctas, rep));
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    const uint64_t producers = uint64_t(ctas) * o.threads / (o.warp ? 32 : 1);
    const double ops = double(producers) * o.per;
    std::printf("%8d %10llu %12.0f %10.3f %12.2f\n", ctas,
                static_cast<unsigned long long>(producers), ops, med * 1e3, ops / med / 1e6);
    char row[256];
    std::snprintf(row, sizeof(row),
                  "%s{\"ctas\": %d, \"producers\": %llu, \"operations\": %.0f, \"ms\": %.4f, "
                  "\"mdesc_per_s\": %.3f}",
                  rows.empty() ? "" : ", ", ctas, static_cast<unsigned long long>(producers), ops,
                  med * 1e3, ops / med / 1e6);
    rows += row;
  }
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr) {
      std::perror(o.json.c_str());
      return 3;
    }
    std::fprintf(f, "{\"benchmark\": \"queue_rate\", \"rows\": [%s]}\n", rows.c_str());
    std::fclose(f);
  }
  return 0;
}
