// SPDX-License-Identifier: Apache-2.0
// Shared driver of the device-API benchmarks (the nccl-tests src/common.cu model): argument
// parsing, ranks from the launcher, CUDA-event timing with warm-up and medians, the table with
// NVSHMEM side by side and the ratio, and --json output. Each benchmark file fills a Bench.
//
// Flags: -h lists them (usage() below). Run with two ranks: gicl-run -n 2 ./put_bw -b 1M -e 1G
#pragma once

#include <cuda_runtime.h>
#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/checks.hpp"
#include "gicl/device.cuh"
#include "gicl/gicl.h"

#ifdef GICL_PERF_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#endif

namespace perf {

struct Options {
  size_t min_bytes = 8, max_bytes = 64 << 20;
  double factor = 2;
  int iters = 20, warmup = 5, reps = 5;
  int ctas = 32, threads = 512;
  int scope = 2;  // 0 thread, 1 warp, 2 block
  bool bidir = false;
  bool local = false;  // team collectives: Completion::kLocal (NVSHMEM's contract)
  std::string json;
};

inline void usage(FILE* out, const char* prog, const Options& d) {
  std::fprintf(
      out,
      "usage: %s [flags]\n"
      "A device-API benchmark: two or more ranks, started by gicl-run, torchrun, mpirun or\n"
      "srun (gicl-run -n 2 %s). Columns: gicl, NVSHMEM where built with it, the ratio.\n"
      "  -b, --minbytes SIZE     smallest size (default %zu)\n"
      "  -e, --maxbytes SIZE     largest size (default %zu)\n"
      "  -f, --stepfactor F      multiply the size by F between steps (default %g)\n"
      "  -n, --iters N           timed operations per repetition (default %d)\n"
      "  -w, --warmup_iters N    untimed launches first (default %d)\n"
      "  -r, --reps N            repetitions; the median is reported (default %d)\n"
      "  -c, --ctas N            thread blocks (default %d)\n"
      "  -t, --threads N         threads per block (default %d)\n"
      "      --scope S           thread, warp or block (default %s)\n"
      "      --bidir             both ranks send at once\n"
      "      --local             team collectives: local completion (NVSHMEM's contract)\n"
      "  -J, --output_file FILE  also write the results as JSON (--json FILE too)\n"
      "  -h, --help              this text\n"
      "SIZE: digits with an optional K, M, G or T suffix (powers of 1024).\n",
      prog, prog, d.min_bytes, d.max_bytes, d.factor, d.iters, d.warmup, d.reps, d.ctas, d.threads,
      d.scope == 0   ? "thread"
      : d.scope == 1 ? "warp"
                     : "block");
}

/// Parses argv over `o`'s defaults; -h prints the usage and exits 0, a bad flag prints it and
/// exits 2.
inline Options parse(int argc, char** argv, Options o) {
  const Options defaults = o;
  enum : int { kScope = 256, kBidir, kLocal, kJson };
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"reps", required_argument, nullptr, 'r'},
                                 {"ctas", required_argument, nullptr, 'c'},
                                 {"threads", required_argument, nullptr, 't'},
                                 {"scope", required_argument, nullptr, kScope},
                                 {"bidir", no_argument, nullptr, kBidir},
                                 {"local", no_argument, nullptr, kLocal},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"json", required_argument, nullptr, kJson},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  auto fail = [&](const char* what, const char* arg) {
    std::fprintf(stderr, "%s: %s%s%s\n", argv[0], what, arg ? ": " : "", arg ? arg : "");
    usage(stderr, argv[0], defaults);
    std::exit(2);
  };
  auto size_arg = [&](const char* v) {
    size_t bytes = 0;
    if (gicl_parse_size(v, &bytes) != GICL_SUCCESS) fail("not a size", v);
    return bytes;
  };
  auto int_arg = [&](const char* v) {
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < 0 || x > (1 << 30)) fail("not a count", v);
    return static_cast<int>(x);
  };
  for (int c; (c = getopt_long(argc, argv, "b:e:f:n:w:r:c:t:J:h", kLong, nullptr)) != -1;) {
    switch (c) {
      case 'h':
        usage(stdout, argv[0], defaults);
        std::exit(0);
      case 'b':
        o.min_bytes = size_arg(optarg);
        break;
      case 'e':
        o.max_bytes = size_arg(optarg);
        break;
      case 'f':
        o.factor = std::atof(optarg);
        break;
      case 'n':
        o.iters = int_arg(optarg);
        break;
      case 'w':
        o.warmup = int_arg(optarg);
        break;
      case 'r':
        o.reps = int_arg(optarg);
        break;
      case 'c':
        o.ctas = int_arg(optarg);
        break;
      case 't':
        o.threads = int_arg(optarg);
        break;
      case kScope:
        o.scope = !std::strcmp(optarg, "thread")  ? 0
                  : !std::strcmp(optarg, "warp")  ? 1
                  : !std::strcmp(optarg, "block") ? 2
                                                  : -1;
        if (o.scope < 0) fail("--scope takes thread, warp or block", optarg);
        break;
      case kBidir:
        o.bidir = true;
        break;
      case kLocal:
        o.local = true;
        break;
      case 'J':
      case kJson:
        o.json = optarg;
        break;
      default:  // getopt has named the flag
        usage(stderr, argv[0], defaults);
        std::exit(2);
    }
  }
  if (optind < argc) fail("unexpected argument", argv[optind]);
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes)
    fail("-b must be at least 1 and at most -e", nullptr);
  if (o.factor <= 1) fail("-f must be > 1", nullptr);
  if (o.iters < 1 || o.reps < 1) fail("-n and -r must be at least 1", nullptr);
  if (o.ctas < 1 || o.threads < 32) fail("-c must be at least 1 and -t at least 32", nullptr);
  return o;
}

/// The environment a benchmark runs in: a gicl communicator (and NVSHMEM when built with it).
struct Env {
  gicl_comm_t comm = nullptr;
  gicl_device_comm_t dc{};
  int rank = 0, n = 0;
  cudaStream_t stream = nullptr;
  bool nvshmem = false;
};

inline void sync_all(Env& env) {
  PERF_GICL(gicl_barrier_on_stream(env.comm, env.stream));
  PERF_CUDA(cudaStreamSynchronize(env.stream));
}

/// Keeps every multiprocessor busy for about `ms` milliseconds: the first sizes of a sweep
/// otherwise ran before the GPU's clocks had risen (a step of about 1 us a call in the middle of
/// the small sizes, one H100).
__global__ void warm_kernel(long long cycles) {
  const long long end = clock64() + cycles;
  while (clock64() < end) {
  }
}
inline void warm_up(cudaStream_t s, int ms) {
  int dev = 0, sms = 0, khz = 0;
  PERF_CUDA(cudaGetDevice(&dev));
  PERF_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PERF_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  warm_kernel<<<sms, 128, 0, s>>>(static_cast<long long>(khz) * ms);
  PERF_CUDA(cudaStreamSynchronize(s));
}

inline Env start(int argc, char** argv) {
  (void)argc;
  (void)argv;
  Env env;
  PERF_GICL(gicl_comm_init_env(&env.comm));
  PERF_GICL(gicl_comm_rank(env.comm, &env.rank));
  PERF_GICL(gicl_comm_size(env.comm, &env.n));
  PERF_GICL(gicl_comm_get_device_comm(env.comm, &env.dc));
  PERF_CUDA(cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking));
#ifdef GICL_PERF_NVSHMEM
  // The NVSHMEM unique id travels through gicl's own symmetric memory: rank 0 stores it into every
  // peer's copy, then a gicl barrier.
  nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
  char* sym = nullptr;
  PERF_GICL(gicl_mem_alloc(env.comm, sizeof(uid), reinterpret_cast<void**>(&sym)));
  if (env.rank == 0) {
    nvshmemx_get_uniqueid(&uid);
    for (int p = 0; p < env.n; ++p) {
      void* dst = nullptr;
      PERF_GICL(gicl_mem_peer_ptr(env.comm, sym, p, &dst));
      PERF_CUDA(cudaMemcpy(dst, &uid, sizeof(uid), cudaMemcpyHostToDevice));
    }
  }
  sync_all(env);
  PERF_CUDA(cudaMemcpy(&uid, sym, sizeof(uid), cudaMemcpyDeviceToHost));
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(env.rank, env.n, &uid, &attr);
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
    std::fprintf(stderr, "NVSHMEM init failed\n");
    std::exit(5);
  }
  env.nvshmem = true;
#endif
  warm_up(env.stream, 200);
  return env;
}

inline void finish(Env& env) {
#ifdef GICL_PERF_NVSHMEM
  nvshmem_finalize();
#endif
  sync_all(env);
  // A device operation that failed (a bad argument, a timeout) moved nothing: no figure stands.
  gicl_result_t async = GICL_SUCCESS;
  const char* why = nullptr;
  PERF_GICL(gicl_comm_get_async_error(env.comm, &async, &why));
  if (async != GICL_SUCCESS) {
    std::fprintf(stderr, "rank %d: the communicator failed during the benchmark: %s\n", env.rank,
                 why != nullptr ? why : "?");
    std::exit(5);
  }
  PERF_GICL(gicl_comm_destroy(env.comm));
}

/// Median over `reps` of the time of `iters` calls of `launch` (after `warmup` calls), per call,
/// in microseconds. Every rank times; ranks start each repetition together.
inline double time_us(Env& env, const Options& o, const std::function<void(cudaStream_t)>& launch) {
  cudaEvent_t a, b;
  PERF_CUDA(cudaEventCreate(&a));
  PERF_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < o.warmup; ++i) launch(env.stream);
  PERF_CUDA(cudaStreamSynchronize(env.stream));
  std::vector<double> t;
  for (int r = 0; r < o.reps; ++r) {
    sync_all(env);
    PERF_CUDA(cudaEventRecord(a, env.stream));
    for (int i = 0; i < o.iters; ++i) launch(env.stream);
    PERF_CUDA(cudaEventRecord(b, env.stream));
    PERF_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(1000.0 * ms / o.iters);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// One table row: gicl and NVSHMEM figures of the same measurement and their ratio.
struct Row {
  size_t bytes;
  double gicl_us, gicl_value;
  double ref_us = 0, ref_value = 0;  // NVSHMEM; 0 when not built with it
};

struct Table {
  std::string name, unit;  // unit of the value column: "GB/s", "Mops/s", "us"
  bool higher_is_better = true;
  std::vector<Row> rows;

  void print_header(const Env& env) const {
    if (env.rank != 0) return;
    std::printf("# %s: %d ranks; value in %s; ratio = gicl / NVSHMEM%s\n", name.c_str(), env.n,
                unit.c_str(), higher_is_better ? "" : " (lower is better)");
    std::printf("%12s %12s %12s %12s %12s %8s\n", "bytes", "gicl_us", ("gicl_" + unit).c_str(),
                "nvshmem_us", ("nvsh_" + unit).c_str(), "ratio");
  }
  void add(const Env& env, Row r) {
    rows.push_back(r);
    if (env.rank != 0) return;
    if (r.ref_us > 0)
      std::printf("%12zu %12.2f %12.2f %12.2f %12.2f %8.3f\n", r.bytes, r.gicl_us, r.gicl_value,
                  r.ref_us, r.ref_value, r.gicl_value / r.ref_value);
    else
      std::printf("%12zu %12.2f %12.2f %12s %12s %8s\n", r.bytes, r.gicl_us, r.gicl_value, "n/a",
                  "n/a", "n/a");
    std::fflush(stdout);
  }
  void write_json(const Env& env, const Options& o) const {
    if (env.rank != 0 || o.json.empty()) return;
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) return;
    std::fprintf(f,
                 "{\"benchmark\":\"%s\",\"unit\":\"%s\",\"ranks\":%d,\"ctas\":%d,\"threads\":%d,"
                 "\"scope\":%d,\"bidir\":%s,\"local\":%s,\"rows\":[",
                 name.c_str(), unit.c_str(), env.n, o.ctas, o.threads, o.scope,
                 o.bidir ? "true" : "false", o.local ? "true" : "false");
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(
          f,
          "%s{\"bytes\":%zu,\"gicl_us\":%.3f,\"gicl\":%.3f,\"nvshmem_us\":%.3f,\"nvshmem\":%.3f}",
          i ? "," : "", rows[i].bytes, rows[i].gicl_us, rows[i].gicl_value, rows[i].ref_us,
          rows[i].ref_value);
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
};

inline std::vector<size_t> sizes(const Options& o) {
  std::vector<size_t> v;
  for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes) * 1.0001;
       s *= o.factor)
    v.push_back(static_cast<size_t>(s));
  return v;
}

}  // namespace perf
