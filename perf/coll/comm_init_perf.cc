// SPDX-License-Identifier: Apache-2.0
// comm_init_perf: what making and ending a communicator costs, gicl beside NCCL in the same
// processes (--compare-nccl). One process per GPU: gicl-run -n N -- comm_init_perf.
//
// Each process makes its CUDA context first, so neither library's figure includes it. Then gicl's
// first init in the process (gicl_comm_init_env, its one-time set-up included: the kernel preload),
// NCCL's first (ncclCommInitRank, its own one-time set-up), and R rounds of init, destroy, and a
// split of the first communicator (one color) with its destroy, for each library, alternated.
// Every timed step starts on all ranks together: a barrier through the first gicl communicator
// that each rank waits for on the host. Times are the slowest rank's: per rank the median of the
// rounds, then the maximum over ranks. The first gicl init also waits for the other processes to
// start (nothing can line them up before a communicator exists): with several ranks it is an
// upper bound. Usage: comm_init_perf [-r ROUNDS] [--compare-nccl]
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

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

struct Options {
  int rounds = 10;
  bool compare = false;
};

int usage(FILE* out, const char* prog, int code) {
  std::fprintf(out,
               "usage: %s [-h] [-r ROUNDS] [--compare-nccl]\n"
               "Communicator set-up and teardown: the process's first init, then ROUNDS of init,\n"
               "split and destroy; the slowest rank's medians, beside NCCL's with --compare-nccl.\n"
               "Start it as ranks of a launcher (gicl-run -n 2 %s).\n"
               "  -r, --rounds N     repetitions, 1..100 (default 10)\n"
               "      --compare-nccl time ncclCommInitRank / ncclCommSplit too (libnccl.so.2)\n"
               "  -h, --help         this text\n",
               prog, prog);
  return code;
}

Options parse(int argc, char** argv) {
  Options o;
  static const option kLong[] = {{"rounds", required_argument, nullptr, 'r'},
                                 {"compare-nccl", no_argument, nullptr, 'N'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "r:h", kLong, nullptr)) != -1;) {
    if (c == 'h') std::exit(usage(stdout, argv[0], 0));
    if (c == 'N') {
      o.compare = true;
    } else if (c == 'r') {
      char* end = nullptr;
      const long v = std::strtol(optarg, &end, 10);
      if (end == optarg || *end != '\0' || v < 1 || v > 100) {
        std::fprintf(stderr, "%s: -r %s: ROUNDS must be 1..100\n", argv[0], optarg);
        std::exit(usage(stderr, argv[0], 2));
      }
      o.rounds = static_cast<int>(v);
    } else {
      std::exit(usage(stderr, argv[0], 2));
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    std::exit(usage(stderr, argv[0], 2));
  }
  return o;
}

/// The first gicl communicator: it lines the ranks up and carries rank 0's ids to the others.
struct Job {
  gicl_comm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0, nranks = 0;
  void* sym = nullptr;
  static constexpr size_t kSymBytes = 64 << 10;

  void start() {
    PERF_GICL(gicl_comm_rank(comm, &rank));
    PERF_GICL(gicl_comm_size(comm, &nranks));
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PERF_GICL(gicl_mem_alloc(comm, kSymBytes, &sym));
  }
  /// Returns on every rank within a few microseconds of the others.
  void sync() {
    PERF_GICL(gicl_barrier_on_stream(comm, stream));
    PERF_CUDA(cudaStreamSynchronize(stream));
  }
  /// Rank 0's `bytes` at `data` to every rank.
  void share(void* data, size_t bytes) {
    if (bytes > kSymBytes) {
      std::fprintf(stderr, "comm_init_perf: %zu bytes of ids do not fit\n", bytes);
      std::exit(2);
    }
    if (rank == 0)
      for (int q = 0; q < nranks; ++q) {
        void* dst = nullptr;
        PERF_GICL(gicl_mem_peer_ptr(comm, sym, q, &dst));
        PERF_CUDA(cudaMemcpy(dst, data, bytes, cudaMemcpyHostToDevice));
      }
    sync();  // orders rank 0's stores before every rank's read
    PERF_CUDA(cudaMemcpy(data, sym, bytes, cudaMemcpyDeviceToHost));
  }
  /// Each of v[0..n) becomes its maximum over the ranks.
  void max_over_ranks(double* v, int n) {
    PERF_CUDA(cudaMemcpy(sym, v, n * sizeof(double), cudaMemcpyHostToDevice));
    PERF_GICL(gicl_allreduce(sym, sym, n, gicl_float64, gicl_max, comm, stream));
    PERF_CUDA(cudaStreamSynchronize(stream));
    PERF_CUDA(cudaMemcpy(v, sym, n * sizeof(double), cudaMemcpyDeviceToHost));
  }
};

void check_nccl(const perf::Nccl& nccl, int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "%s: %s\n", what, nccl.error_string(rc));
  std::exit(5);
}

enum Row { kFirst, kInit, kDestroy, kSplit, kRows };
const char* const kRowNames[kRows] = {"first init in the process", "init", "destroy",
                                      "split (one color)"};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  // The device gicl_comm_init_env will pick, with its context made before anything is timed.
  int ndev = 0;
  PERF_CUDA(cudaGetDeviceCount(&ndev));
  const int local = env_int("GICL_LOCAL_RANK", env_int("GICL_RANK", 0));
  PERF_CUDA(cudaSetDevice(local % ndev));
  PERF_CUDA(cudaFree(nullptr));

  Job job;
  double gicl_ms[kRows] = {}, nccl_ms[kRows] = {};
  const Clock::time_point t_first = Clock::now();
  PERF_GICL(gicl_comm_init_env(&job.comm));
  gicl_ms[kFirst] = ms_since(t_first);
  job.start();

  perf::Nccl nccl;
  if (o.compare) {
    std::string why;
    if (!nccl.load(&why)) {
      std::fprintf(stderr, "--compare-nccl: %s\n", why.c_str());
      return 5;
    }
  }
  // Every round's ids, made by rank 0 (gicl's each start a bootstrap root in this process).
  std::vector<gicl_unique_id_t> cids(o.rounds);
  std::vector<perf::NcclUniqueId> nids(o.compare ? o.rounds + 1 : 0);
  if (job.rank == 0) {
    for (auto& id : cids) PERF_GICL(gicl_get_unique_id(&id));
    for (auto& id : nids) check_nccl(nccl, nccl.get_unique_id(&id), "ncclGetUniqueId");
  }
  job.share(cids.data(), cids.size() * sizeof(cids[0]));
  if (o.compare) job.share(nids.data(), nids.size() * sizeof(nids[0]));

  void* nparent = nullptr;
  if (o.compare) {
    job.sync();
    const Clock::time_point t0 = Clock::now();
    check_nccl(nccl, nccl.init_rank(&nparent, job.nranks, nids[0], job.rank), "ncclCommInitRank");
    nccl_ms[kFirst] = ms_since(t0);
  }

  std::vector<double> gicl_rounds[kRows], nccl_rounds[kRows];
  for (int i = 0; i < o.rounds; ++i) {
    gicl_comm_t c = nullptr;
    job.sync();
    Clock::time_point t0 = Clock::now();
    PERF_GICL(gicl_comm_init_rank(&c, job.nranks, cids[i], job.rank));
    gicl_rounds[kInit].push_back(ms_since(t0));
    job.sync();
    t0 = Clock::now();
    PERF_GICL(gicl_comm_destroy(c));
    gicl_rounds[kDestroy].push_back(ms_since(t0));
    job.sync();
    t0 = Clock::now();
    PERF_GICL(gicl_comm_split(job.comm, 0, job.rank, &c));
    gicl_rounds[kSplit].push_back(ms_since(t0));
    PERF_GICL(gicl_comm_destroy(c));
    if (!o.compare) continue;

    void* nc = nullptr;
    job.sync();
    t0 = Clock::now();
    check_nccl(nccl, nccl.init_rank(&nc, job.nranks, nids[i + 1], job.rank), "ncclCommInitRank");
    nccl_rounds[kInit].push_back(ms_since(t0));
    job.sync();
    t0 = Clock::now();
    check_nccl(nccl, nccl.destroy(nc), "ncclCommDestroy");
    nccl_rounds[kDestroy].push_back(ms_since(t0));
    job.sync();
    t0 = Clock::now();
    check_nccl(nccl, nccl.split(nparent, 0, job.rank, &nc), "ncclCommSplit");
    nccl_rounds[kSplit].push_back(ms_since(t0));
    check_nccl(nccl, nccl.destroy(nc), "ncclCommDestroy");
  }
  for (int r = kInit; r < kRows; ++r) {
    gicl_ms[r] = median(gicl_rounds[r]);
    nccl_ms[r] = median(nccl_rounds[r]);
  }
  job.max_over_ranks(gicl_ms, kRows);
  job.max_over_ranks(nccl_ms, kRows);

  if (job.rank == 0) {
    int version = 0;
    PERF_GICL(gicl_get_version(&version));
    std::printf(
        "# comm_init_perf: %d rank(s), one process per GPU, %d rounds; ms, the slowest "
        "rank's median\n",
        job.nranks, o.rounds);
    std::printf("# gicl %d", version);
    if (o.compare)
      std::printf(", NCCL %d (ncclCommInitRank, ncclCommSplit; default configuration)",
                  nccl.version());
    std::printf("\n# %-28s %10s", "step", "gicl(ms)");
    if (o.compare) std::printf(" %10s %8s", "nccl(ms)", "ratio");
    std::printf("\n");
    for (int r = 0; r < kRows; ++r) {
      std::printf("  %-28s %10.2f", kRowNames[r], gicl_ms[r]);
      if (o.compare) std::printf(" %10.2f %8.2f", nccl_ms[r], nccl_ms[r] / gicl_ms[r]);
      std::printf("\n");
    }
  }
  if (o.compare) check_nccl(nccl, nccl.destroy(nparent), "ncclCommDestroy");
  PERF_GICL(gicl_mem_free(job.comm, job.sym));
  PERF_GICL(gicl_comm_destroy(job.comm));
  PERF_CUDA(cudaStreamDestroy(job.stream));
  return 0;
}
