// SPDX-License-Identifier: Apache-2.0
// launch_floor_perf: what one call can cost at least on this machine. An empty kernel launched
// back to back (host time per launch, GPU time per kernel) beside a one-rank gicl_allreduce of 8
// bytes through the LL one-shot kernel (forced: one rank alone only copies), and ncclAllReduce
// with --compare-nccl on a registered window: the per-call work of the
// library above the CUDA launch itself. Then the same calls captured 200 to a CUDA graph and
// replayed (GPU time per call), the empty kernel also with programmatic dependent launch: what a
// graph of small collectives pays between kernels. Probe kernels add the steps of a one-block
// small collective one at a time, and straight-line code of three sizes, run once and twice,
// shows what fetching a kernel's instructions costs. One GPU, one process; medians of 15
// batches of 200 calls after warm-up. Usage: launch_floor_perf [--compare-nccl] [-d DEVICE]
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/checks.hpp"
#include "nccl_loader.hpp"

namespace {

struct Args {
  char bytes[320];  // about what a collective kernel receives
};
__global__ void empty_kernel(Args) {}
/// What a PDL-launched kernel must do at least (common/kernel_launch.cuh).
__global__ void pdl_kernel(Args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/// The steps of a one-block small collective, each probe adding one to the last: what each
/// costs in a graph of PDL launches. `p` is device memory: [0] a counter as the epochs are,
/// [64..] data.
enum Probe {
  kAcquireLoad,    // thread 0: ld.acquire.sys of the counter, shared, barrier
  kRelaxedLoad,    // the same with ld.relaxed.sys
  kCounterStore,   // + thread 0 stores counter + 1 (st.relaxed.sys), as finish_epoch does
  kDataToo,        // + every thread loads 8 bytes and stores them elsewhere, as LL does
  kThreeBarriers,  // + the two more block barriers LL's epoch bookkeeping has
  kPrintfBranch,   // + an untaken branch that calls printf (as device error reports do)
  kNumProbes
};
const char* const kProbeNames[kNumProbes] = {
    "+ acquire load (sys), barrier", "+ relaxed load (sys), barrier", "acquire + counter store",
    "+ 8 B load/store per thread",   "+ 2 more block barriers",       "+ untaken printf branch"};

template <int P, typename Params = Args>
__global__ void probe_kernel(uint64_t* p, Params) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ uint64_t seen;
  const uint64_t data = P >= kDataToo ? p[64 + threadIdx.x] : 0;  // in flight with the counter
  if (threadIdx.x == 0) {
    uint64_t v;
    if (P == kRelaxedLoad)
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    seen = v;
  }
  __syncthreads();
  if (P >= kThreeBarriers) {
    __syncthreads();
    __syncthreads();
  }
  if (P >= kPrintfBranch && seen == 0x5eed5eed5eedull)
    printf("probe %d saw %llu\n", P, static_cast<unsigned long long>(seen));
  if (P >= kDataToo) p[1024 + threadIdx.x] = data + seen;
  if (P >= kCounterStore && threadIdx.x == 0)
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(seen + 1) : "memory");
}

/// Straight-line code: kLines dependent steps (about 80 bytes of SASS each on sm_90: 32 lines
/// ~2.7 KB, 128 ~10.7 KB, 512 ~41 KB), run `reps` times by every thread. The first pass runs
/// cold code (fetched), a second pass the same code again: their difference against the
/// second pass's own cost is what fetching the instructions costs.
template <int kLines>
__global__ void code_kernel(uint64_t* p, int reps, Args) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  uint32_t x = threadIdx.x, y = blockIdx.x + 1;
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
#pragma unroll
    for (int i = 0; i < kLines; ++i) {
      x = __funnelshift_l(x, y, (i % 31) + 1);
      y = y * 0x9e3779b1u + static_cast<uint32_t>(i) * 0x85ebca6bu;
      x ^= y >> (i % 7 + 1);
      y += x;
    }
  }
  if (x == 0x5eed5eedu) p[1] = y;  // keeps the chain alive
}

/// What a collective kernel's parameters weigh (device communicator, scratch table, arguments).
struct BigArgs {
  char bytes[480];
};

/// Launches `kernel` with the PDL attribute: one block of 512 threads.
template <typename... Params, typename... A>
void launch_pdl(void (*kernel)(Params...), cudaStream_t s, A... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(512);
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  PERF_CUDA(cudaLaunchKernelEx(&cfg, kernel, args...));
}

struct Cost {
  double host_us, gpu_us;
};

/// Medians over batches of `per` calls: host time to enqueue, GPU time between events.
template <typename F>
Cost measure(cudaStream_t s, F&& call) {
  constexpr int kBatches = 15, kPer = 200;
  for (int i = 0; i < 50; ++i) call();
  PERF_CUDA(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  PERF_CUDA(cudaEventCreate(&a));
  PERF_CUDA(cudaEventCreate(&b));
  std::vector<double> host, gpu;
  for (int k = 0; k < kBatches; ++k) {
    PERF_CUDA(cudaEventRecord(a, s));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPer; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    PERF_CUDA(cudaEventRecord(b, s));
    PERF_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
    host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kPer);
    gpu.push_back(1000.0 * ms / kPer);
  }
  PERF_CUDA(cudaEventDestroy(a));
  PERF_CUDA(cudaEventDestroy(b));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(host), median(gpu)};
}

/// GPU time per call of 200 calls captured into one graph: medians of 15 replays after warm-up.
template <typename F>
double graph_us(cudaStream_t s, F&& call) {
  constexpr int kReplays = 15, kPer = 200;
  cudaGraph_t g;
  cudaGraphExec_t x;
  PERF_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kPer; ++i) call();
  PERF_CUDA(cudaStreamEndCapture(s, &g));
  PERF_CUDA(cudaGraphInstantiate(&x, g, 0));
  for (int i = 0; i < 3; ++i) PERF_CUDA(cudaGraphLaunch(x, s));
  cudaEvent_t a, b;
  PERF_CUDA(cudaEventCreate(&a));
  PERF_CUDA(cudaEventCreate(&b));
  std::vector<double> us;
  for (int k = 0; k < kReplays; ++k) {
    PERF_CUDA(cudaEventRecord(a, s));
    PERF_CUDA(cudaGraphLaunch(x, s));
    PERF_CUDA(cudaEventRecord(b, s));
    PERF_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1000.0 * ms / kPer);
  }
  PERF_CUDA(cudaEventDestroy(a));
  PERF_CUDA(cudaEventDestroy(b));
  PERF_CUDA(cudaGraphExecDestroy(x));
  PERF_CUDA(cudaGraphDestroy(g));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void graph_row(const char* what, double us, double floor) {
  std::printf("%-34s %9s %9.2f %9.2f\n", what, "graph", us, us - floor);
}

void row(const char* what, const Cost& c, const Cost& floor) {
  std::printf("%-34s %9.2f %9.2f %9.2f\n", what, c.host_us, c.gpu_us, c.host_us - floor.host_us);
}

}  // namespace

int main(int argc, char** argv) {
  bool compare = false;
  int device = 0;
  static const option kLong[] = {{"device", required_argument, nullptr, 'd'},
                                 {"compare-nccl", no_argument, nullptr, 'N'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  auto usage = [&](FILE* out, int code) {
    std::fprintf(
        out,
        "usage: %s [-h] [-d DEVICE] [--compare-nccl]\n"
        "The host and GPU time of an empty kernel launch beside a one-rank gicl_allreduce\n"
        "(and ncclAllReduce with --compare-nccl), eager and captured in a graph: the floor\n"
        "under any call. One process, no launcher.\n"
        "  -d, --device N     the CUDA device (default 0)\n"
        "      --compare-nccl time ncclAllReduce too (libnccl.so.2)\n"
        "  -h, --help         this text\n",
        argv[0]);
    return code;
  };
  for (int c; (c = getopt_long(argc, argv, "d:h", kLong, nullptr)) != -1;) {
    if (c == 'h') return usage(stdout, 0);
    if (c == 'N') {
      compare = true;
    } else if (c == 'd') {
      char* end = nullptr;
      device = static_cast<int>(std::strtol(optarg, &end, 10));
      if (end == optarg || *end != '\0' || device < 0) {
        std::fprintf(stderr, "%s: -d %s: not a device number\n", argv[0], optarg);
        return usage(stderr, 2);
      }
    } else {
      return usage(stderr, 2);
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    return usage(stderr, 2);
  }
  PERF_CUDA(cudaSetDevice(device));
  cudaStream_t s;
  PERF_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("# launch_floor_perf: device %d, medians of 15 x 200 back-to-back calls\n", device);
  std::printf("# %-32s %9s %9s %9s\n", "call", "host(us)", "gpu(us)", "over(us)");
  const Args args{};
  const Cost floor1 = measure(s, [&] { empty_kernel<<<1, 512, 0, s>>>(args); });
  const Cost floor64 = measure(s, [&] { empty_kernel<<<64, 512, 0, s>>>(args); });
  PERF_CUDA(cudaGetLastError());
  row("empty kernel, 1 block", floor1, floor1);
  row("empty kernel, 64 blocks", floor64, floor1);
  const double g_floor = graph_us(s, [&] { empty_kernel<<<1, 512, 0, s>>>(args); });
  const double g_pdl = graph_us(s, [&] { launch_pdl(pdl_kernel, s, args); });
  uint64_t* probe_mem = nullptr;
  PERF_CUDA(cudaMalloc(&probe_mem, 16384));
  PERF_CUDA(cudaMemset(probe_mem, 0, 16384));
  double g_probe[kNumProbes];
  g_probe[kAcquireLoad] =
      graph_us(s, [&] { launch_pdl(probe_kernel<kAcquireLoad>, s, probe_mem, args); });
  g_probe[kRelaxedLoad] =
      graph_us(s, [&] { launch_pdl(probe_kernel<kRelaxedLoad>, s, probe_mem, args); });
  g_probe[kCounterStore] =
      graph_us(s, [&] { launch_pdl(probe_kernel<kCounterStore>, s, probe_mem, args); });
  g_probe[kDataToo] = graph_us(s, [&] { launch_pdl(probe_kernel<kDataToo>, s, probe_mem, args); });
  g_probe[kThreeBarriers] =
      graph_us(s, [&] { launch_pdl(probe_kernel<kThreeBarriers>, s, probe_mem, args); });
  g_probe[kPrintfBranch] =
      graph_us(s, [&] { launch_pdl(probe_kernel<kPrintfBranch>, s, probe_mem, args); });
  // The barriers probe with a collective kernel's parameter size.
  const BigArgs big{};
  const double g_big =
      graph_us(s, [&] { launch_pdl(probe_kernel<kThreeBarriers, BigArgs>, s, probe_mem, big); });
  // Code size: 0 lines (the loop alone), then each size once and twice.
  constexpr int kCodeSizes = 3;
  const int lines[kCodeSizes] = {32, 128, 512};
  double g_code0 = graph_us(s, [&] { launch_pdl(code_kernel<0>, s, probe_mem, 1, args); });
  double g_code[kCodeSizes][2];
  for (int reps = 1; reps <= 2; ++reps) {
    g_code[0][reps - 1] =
        graph_us(s, [&] { launch_pdl(code_kernel<32>, s, probe_mem, reps, args); });
    g_code[1][reps - 1] =
        graph_us(s, [&] { launch_pdl(code_kernel<128>, s, probe_mem, reps, args); });
    g_code[2][reps - 1] =
        graph_us(s, [&] { launch_pdl(code_kernel<512>, s, probe_mem, reps, args); });
  }
  PERF_CUDA(cudaFree(probe_mem));

  // The LL one-shot kernel, what the probes take apart: a one-rank call otherwise only copies
  // (collectives/host/run.cc). A GICL_ALGO or GICL_PROTO already set wins.
  setenv("GICL_ALGO", "allreduce:one_shot", 0);
  setenv("GICL_PROTO", "LL", 0);
  gicl_unique_id_t id;
  PERF_GICL(gicl_get_unique_id(&id));
  gicl_comm_t comm;
  PERF_GICL(gicl_comm_init_rank(&comm, 1, id, 0));
  void* sym = nullptr;
  PERF_GICL(gicl_mem_alloc(comm, 1 << 20, &sym));
  char* out = static_cast<char*>(sym) + 4096;
  const Cost gicl = measure(s, [&] {
    if (gicl_allreduce(sym, out, 2, gicl_float32, gicl_sum, comm, s) != GICL_SUCCESS) std::exit(4);
  });
  row("gicl_allreduce 8 B (symmetric)", gicl, floor1);
  // The same steps on symmetric-heap memory (where the collectives' counters live).
  auto* heap_probe = static_cast<uint64_t*>(sym) + 16384;
  PERF_CUDA(cudaMemset(heap_probe, 0, 16384));
  const double g_heap_store =
      graph_us(s, [&] { launch_pdl(probe_kernel<kCounterStore>, s, heap_probe, args); });
  const double g_heap_all =
      graph_us(s, [&] { launch_pdl(probe_kernel<kThreeBarriers>, s, heap_probe, args); });
  const double g_gicl = graph_us(s, [&] {
    if (gicl_allreduce(sym, out, 2, gicl_float32, gicl_sum, comm, s) != GICL_SUCCESS) std::exit(4);
  });
  double g_nccl = 0;

  if (compare) {
    perf::Nccl nccl;
    std::string why;
    if (!nccl.load(&why)) {
      std::fprintf(stderr, "--compare-nccl: %s\n", why.c_str());
      return 5;
    }
    perf::NcclUniqueId nid;
    void* ncomm = nullptr;
    void* buf = nullptr;
    void* win = nullptr;
    if (nccl.get_unique_id(&nid) || nccl.init_rank(&ncomm, 1, nid, 0) ||
        nccl.mem_alloc(&buf, 1 << 20) || nccl.window_register(ncomm, buf, 1 << 20, &win)) {
      std::fprintf(stderr, "NCCL set-up failed\n");
      return 5;
    }
    char* nout = static_cast<char*>(buf) + 4096;
    const Cost n = measure(s, [&] {
      if (nccl.allreduce(buf, nout, 2, gicl_float32, gicl_sum, ncomm, s) != 0) std::exit(5);
    });
    row("ncclAllReduce 8 B (window)", n, floor1);
    g_nccl = graph_us(s, [&] {
      if (nccl.allreduce(buf, nout, 2, gicl_float32, gicl_sum, ncomm, s) != 0) std::exit(5);
    });
    std::printf("# NCCL %d; host time NCCL / gicl: %.2f\n", nccl.version(),
                n.host_us / gicl.host_us);
    if (nccl.window_deregister(ncomm, win) || nccl.mem_free(buf) || nccl.destroy(ncomm)) {
      std::fprintf(stderr, "NCCL tear-down failed\n");
      return 5;
    }
  }
  // Graph rows: "over" is above the empty kernel's graph time.
  graph_row("empty kernel, 1 block", g_floor, g_floor);
  graph_row("empty kernel, 1 block, PDL", g_pdl, g_floor);
  for (int i = 0; i < kNumProbes; ++i) graph_row(kProbeNames[i], g_probe[i], g_floor);
  graph_row("barriers probe, 488 B of parameters", g_big, g_floor);
  graph_row("acquire + counter store, heap", g_heap_store, g_floor);
  graph_row("+ data + barriers, heap", g_heap_all, g_floor);
  graph_row("straight-line code, 0 lines", g_code0, g_floor);
  for (int i = 0; i < kCodeSizes; ++i) {
    char what[64];
    for (int reps = 1; reps <= 2; ++reps) {
      std::snprintf(what, sizeof(what), "%d lines, %s", lines[i], reps == 1 ? "once" : "twice");
      graph_row(what, g_code[i][reps - 1], g_floor);
    }
    // Cold pass minus warm pass: the instruction fetch of this much code.
    std::printf("# %d lines: first pass %.2f us, second %.2f us\n", lines[i],
                g_code[i][0] - g_code0, g_code[i][1] - g_code[i][0]);
  }
  graph_row("gicl_allreduce 8 B (symmetric)", g_gicl, g_floor);
  if (compare) graph_row("ncclAllReduce 8 B (window)", g_nccl, g_floor);
  PERF_GICL(gicl_mem_free(comm, sym));
  PERF_GICL(gicl_comm_destroy(comm));
  return 0;
}
