// SPDX-License-Identifier: Apache-2.0
#include "driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/checks.hpp"
#include "options.hpp"
#include "values.hpp"

namespace perf {
namespace {

__global__ void empty_kernel() {}

int g_rank = 0, g_ranks = 1;

struct Rank {
  int rank = 0, device = 0;
  gicl_comm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void *send = nullptr, *recv = nullptr;
  void *reg_s = nullptr, *reg_r = nullptr;  // -R 1
  void* ncomm = nullptr;
  void *nsend = nullptr, *nrecv = nullptr, *nwin_s = nullptr, *nwin_r = nullptr;
  void *dsend = nullptr, *drecv = nullptr;  // NCCL's default configuration: cudaMalloc
  cudaEvent_t start = nullptr, stop = nullptr;
};

/// The type, reduction and root of the sweep running (one of -d/-o/-r's).
struct Combo {
  gicl_datatype_t dtype;
  gicl_redop_t op;
  int root;
};

struct Result {
  double us = 0;
  long long wrong = 0;
};

class Driver {
 public:
  Driver(const CollDesc& desc, const CollOptions& o)
      : desc_(desc), o_(o), cur_{o.dtypes[0], o.ops[0], o.root} {}

  int main() {
    setup();
    if (leader()) header();
    // nccl-tests' order: a whole size sweep per type, reduction and root (-d/-o/-r all).
    const std::vector<gicl_redop_t> ops = desc_.has_op ? o_.ops : std::vector{gicl_sum};
    std::vector<int> roots{o_.root};
    if (desc_.has_root && o_.all_roots)
      for (int r = 1; r < nranks_; ++r) roots.push_back(r);
    for (gicl_datatype_t d : o_.dtypes)
      for (gicl_redop_t op : ops)
        for (int root : roots) {
          cur_ = {d, op, root};
          const size_t es = gicl_datatype_size(d);
          for (size_t bytes : sweep(o_, es)) row(bytes, bytes / es);
        }
    if (leader()) footer();
    if (leader() && !o_.json.empty()) write_json();
    teardown();
    return wrong_ ? 1 : 0;
  }

 private:
  bool leader() const { return ranks_[0].rank == 0; }

  void setup() {
    // A hardware queue for every rank's stream and, on the staged network path, its copier's and
    // copy agent's, should ranks share a GPU (an MPS client gets 2 by default). CUDA reads the
    // variable once, when it starts in this process (cudaGetDeviceCount below).
    if (o_.gpus > 1)
      setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(std::clamp(3 * o_.gpus, 8, 32)).c_str(),
             0);
    int ndev = 0;
    PERF_CUDA(cudaGetDeviceCount(&ndev));
    if (o_.gpus > 1) {
      // Several GPUs in this process: one communicator per GPU (gicl_comm_init_all). More ranks
      // than GPUs share them round robin, as gicl-run places ranks (rank g on GPU g % ndev).
      if (ndev < 1) {
        std::fprintf(stderr, "-g %d: no GPU\n", o_.gpus);
        std::exit(2);
      }
      std::vector<int> devs(o_.gpus);
      for (int g = 0; g < o_.gpus; ++g) devs[g] = g % ndev;
      if (o_.gpus > ndev) {
        // Asking for more ranks than GPUs asks for threads sharing one: allowed here, said so.
        setenv("GICL_SHARED_GPU_THREADS", "1", 0);
        std::printf(
            "# -g %d on %d GPU(s): ranks share them (rank g on GPU g %% %d) as threads of this "
            "process (GICL_SHARED_GPU_THREADS=%s; CUDA does not promise that their kernels all "
            "start, docs/collectives.md)\n",
            o_.gpus, ndev, ndev, std::getenv("GICL_SHARED_GPU_THREADS"));
      }
      std::vector<gicl_comm_t> comms(o_.gpus);
      PERF_GICL(gicl_comm_init_all(comms.data(), o_.gpus, devs.data()));
      // Allocation and registration are collective: every rank of this process at once.
      ranks_.resize(o_.gpus);
      std::vector<std::thread> t;
      for (int g = 0; g < o_.gpus; ++g)
        t.emplace_back([&, g] { ranks_[g] = make_rank(comms[g], devs[g]); });
      for (auto& th : t) th.join();
      nranks_ = o_.gpus;
    } else {
      gicl_comm_t c;
      PERF_GICL(gicl_comm_init_env(&c));
      int dev = 0;
      PERF_GICL(gicl_comm_device(c, &dev));
      ranks_.push_back(make_rank(c, dev));
      PERF_GICL(gicl_comm_size(c, &nranks_));
    }
    if (o_.compare_nccl) setup_nccl();
  }

  Rank make_rank(gicl_comm_t c, int dev) {
    Rank r;
    r.comm = c;
    r.device = dev;
    PERF_GICL(gicl_comm_rank(c, &r.rank));
    PERF_CUDA(cudaSetDevice(dev));
    PERF_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    // The stream's first launch, alone: ranks of this process sharing a GPU whose fresh streams
    // make their first launches at once can queue one rank's kernels behind another's waiting
    // kernel (docs/collectives.md, "Ranks sharing a GPU").
    empty_kernel<<<1, 1, 0, r.stream>>>();
    PERF_CUDA(cudaGetLastError());
    PERF_CUDA(cudaStreamSynchronize(r.stream));
    PERF_CUDA(cudaEventCreate(&r.start));
    PERF_CUDA(cudaEventCreate(&r.stop));
    if (o_.registration == 2) {
      PERF_GICL(gicl_mem_alloc(c, o_.max_bytes, &r.send));
      PERF_GICL(gicl_mem_alloc(c, o_.max_bytes, &r.recv));
    } else {
      PERF_CUDA(cudaMalloc(&r.send, o_.max_bytes));
      PERF_CUDA(cudaMalloc(&r.recv, o_.max_bytes));
    }
    if (o_.registration == 1) {
      PERF_GICL(gicl_comm_register(c, r.send, o_.max_bytes, &r.reg_s));
      PERF_GICL(gicl_comm_register(c, r.recv, o_.max_bytes, &r.reg_r));
    }
    return r;
  }

  // NCCL in the configurations that can be its best for a size (--compare-nccl=W): ncclMemAlloc
  // buffers registered as symmetric windows (the faster below about 128 MB on 4 x H200) and plain
  // cudaMalloc buffers (NCCL's default, 10-13 % faster there above it). The unique id travels
  // through gicl's symmetric memory (rank 0 stores it into every peer's copy).
  void setup_nccl() {
    if (ranks_.size() != 1) {
      std::fprintf(stderr,
                   "--compare-nccl runs one GPU per process (launch with gicl-run or mpirun)\n");
      std::exit(2);
    }
    std::string err;
    if (!nccl_.load(&err)) {
      std::fprintf(stderr, "--compare-nccl: %s\n", err.c_str());
      std::exit(5);
    }
    Rank& r = ranks_[0];
    NcclUniqueId id{};
    void* sym = nullptr;
    PERF_GICL(gicl_mem_alloc(r.comm, sizeof(id), &sym));
    if (r.rank == 0) {
      if (nccl_.get_unique_id(&id) != 0) {
        std::fprintf(stderr, "ncclGetUniqueId failed\n");
        std::exit(5);
      }
      PERF_CUDA(cudaMemcpyAsync(sym, &id, sizeof(id), cudaMemcpyHostToDevice, r.stream));
    }
    // A broadcast reaches every rank, on the node or across the network path.
    PERF_GICL(gicl_broadcast(sym, sym, sizeof(id), gicl_uint8, 0, r.comm, r.stream));
    PERF_CUDA(cudaStreamSynchronize(r.stream));
    PERF_CUDA(cudaMemcpy(&id, sym, sizeof(id), cudaMemcpyDeviceToHost));
    g_rank = r.rank;
    g_ranks = nranks_;
    int rc = nccl_.init_rank(&r.ncomm, nranks_, id, r.rank);
    if (o_.nccl_configs & kNcclSymmetric) {
      if (rc == 0) rc = nccl_.mem_alloc(&r.nsend, o_.max_bytes);
      if (rc == 0) rc = nccl_.mem_alloc(&r.nrecv, o_.max_bytes);
      if (rc == 0) rc = nccl_.window_register(r.ncomm, r.nsend, o_.max_bytes, &r.nwin_s);
      if (rc == 0) rc = nccl_.window_register(r.ncomm, r.nrecv, o_.max_bytes, &r.nwin_r);
    }
    if (rc != 0) {
      std::fprintf(stderr, "NCCL setup: %s\n", nccl_.error_string(rc));
      std::exit(5);
    }
    if (o_.nccl_configs & kNcclDefault) {
      PERF_CUDA(cudaMalloc(&r.dsend, o_.max_bytes));
      PERF_CUDA(cudaMalloc(&r.drecv, o_.max_bytes));
    }
    // NCCL's results are not checked: any input of the right size serves every type.
    for (auto [send, recv] : {std::pair{r.nsend, r.nrecv}, std::pair{r.dsend, r.drecv}}) {
      if (send == nullptr) continue;
      fill(r, send, o_.max_bytes / gicl_datatype_size(cur_.dtype));
      PERF_CUDA(cudaMemset(recv, 0, o_.max_bytes));
    }
    nccl_alt_ = desc_.run_nccl_alt != nullptr && desc_.nccl_alt_ready(nccl_);
  }

  void header() const {
    std::printf(
        "# gicl %s_perf: %d ranks, type %s, op %s, root %s, iters %d, agg %d, warmup %d, "
        "graph %d, check %d, buffers %s%s%s%s\n",
        desc_.name, nranks_, o_.dtypes.size() > 1 ? "all" : dtype_label(o_.dtypes[0]),
        o_.ops.size() > 1 ? "all" : op_label(o_.ops[0]),
        o_.all_roots ? "all" : std::to_string(o_.root).c_str(), o_.iters, o_.agg_iters, o_.warmup,
        o_.graph_iters, o_.check,
        o_.registration == 2   ? "symmetric (gicl_mem_alloc)"
        : o_.registration == 1 ? "cudaMalloc + gicl_comm_register"
                               : "cudaMalloc",
        o_.compare_nccl ? ", NCCL: " : "", o_.compare_nccl ? nccl_label().c_str() : "",
        o_.p2p ? ", gicl: grouped gicl_send/gicl_recv" : "");
    if (o_.compare_nccl)
      std::printf(
          "# NCCL time: the fastest of its configurations per size (nccl_cfg: sym, "
          "default%s); ratio = NCCL time / gicl's out-of-place time\n",
          nccl_alt_ ? "; +alt: the second way of the call" : "");
    if (nccl_alt_) std::printf("# NCCL's ways of the call: %s\n", desc_.nccl_ways);
    std::printf("#%11s %12s %8s %6s %5s   %9s %8s %8s %7s   %9s %8s %8s %7s", "size", "count",
                "type", "redop", "root", "time(us)", "algbw", "busbw", "#wrong", "time(us)",
                "algbw", "busbw", "#wrong");
    if (o_.compare_nccl)
      std::printf("   %9s %8s %6s %-11s", "nccl(us)", "busbw", "ratio", "nccl_cfg");
    if (o_.graph_iters == 0) std::printf("   %7s", "enq(us)");
    std::printf("\n");
  }

  void fill(Rank& r, void* buf, size_t count) {
    std::vector<char> h(count * gicl_datatype_size(cur_.dtype));
    for (size_t i = 0; i < count; ++i)
      store_as(cur_.dtype, input_value(r.rank, i, is_unsigned(cur_.dtype)), h.data(), i);
    PERF_CUDA(cudaSetDevice(r.device));
    PERF_CUDA(cudaMemcpy(buf, h.data(), h.size(), cudaMemcpyHostToDevice));
    // The benchmark streams do not wait for the legacy default stream.
    PERF_CUDA(cudaDeviceSynchronize());
  }

  long long count_wrong(Rank& r, const void* buf, const Counts& c) {
    if (desc_.root_receives_only && r.rank != cur_.root) return 0;
    const size_t es = gicl_datatype_size(cur_.dtype), elems = c.recv_elems;
    std::vector<char> got(elems * es), want(elems * es);
    PERF_CUDA(cudaSetDevice(r.device));
    PERF_CUDA(cudaMemcpy(got.data(), buf, got.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i)
      store_as(
          cur_.dtype,
          desc_.expected(r.rank, nranks_, i, c.count, cur_.op, cur_.root, is_unsigned(cur_.dtype)),
          want.data(), i);
    long long wrong = 0;
    for (size_t i = 0; i < elems; ++i) wrong += std::memcmp(&got[i * es], &want[i * es], es) != 0;
    return wrong;
  }

  /// The call's buffers. Out of place: the rank's two buffers; in place: nccl-tests' layout
  /// inside the receive buffer (the collective's Counts say where).
  struct Buffers {
    const void* send;
    void* recv;
  };
  Buffers buffers(const Rank& r, const Counts& c, bool in_place) const {
    if (!in_place) return {r.send, r.recv};
    char* b = static_cast<char*>(r.recv);
    const size_t es = gicl_datatype_size(cur_.dtype);
    return {b + c.in_place_send_off * es, b + c.in_place_recv_off * es};
  }

  /// One column of the row: -c checked calls, each on freshly filled inputs (and, out of place,
  /// a poisoned output), then the timed calls (which repeat the call on its own output).
  Result measure(size_t bytes, size_t elems, bool in_place) {
    Result res;
    auto counts = [&](const Rank& r) { return desc_.counts(elems, nranks_, r.rank); };
    auto call = [&](Rank& r) {
      const Counts c = counts(r);
      const Buffers b = buffers(r, c, in_place);
      PERF_GICL((o_.p2p ? desc_.run_p2p : desc_.run)(b.send, b.recv, c.count, cur_.dtype, cur_.op,
                                                     cur_.root, r.comm, r.stream));
    };
    auto prepare = [&] {
      each([&](Rank& r) {
        const Counts c = counts(r);
        if (!in_place) PERF_CUDA(cudaMemset(r.recv, 0x5a, bytes));
        fill(r, const_cast<void*>(buffers(r, c, in_place).send), c.send_elems);
      });
    };
    for (int k = 0; k < o_.check; ++k) {
      prepare();
      round(call);
      each([&](Rank& r) {
        PERF_CUDA(cudaStreamSynchronize(r.stream));
        const Counts c = counts(r);
        res.wrong += count_wrong(r, buffers(r, c, in_place).recv, c);
      });
    }
    if (o_.check == 0) prepare();
    res.us = timed(call);
    stop_on_device_error();
    return res;
  }

  // A kernel that failed (a wait that timed out naming its peer, ranks that cut a call
  // differently) leaves the outputs and times meaningless: stop with its report, not a row.
  void stop_on_device_error() {
    each([](Rank& r) {
      gicl_result_t async = GICL_SUCCESS;
      const char* msg = nullptr;
      PERF_GICL(gicl_comm_get_async_error(r.comm, &async, &msg));
      if (async != GICL_SUCCESS) {
        std::fprintf(stderr, "rank %d: the communicator is in error (%d): %s\n", r.rank, async,
                     msg != nullptr ? msg : "");
        std::exit(3);
      }
    });
  }

  // Runs `op(rank)` on every local rank, interleaved so that no GPU's waiting kernel blocks the
  // launch of its partner's.
  void each(const std::function<void(Rank&)>& op) {
    for (auto& r : ranks_) {
      PERF_CUDA(cudaSetDevice(r.device));
      op(r);
    }
  }

  // One call on every local rank. Several local ranks (-g) make it one gicl group, as nccl-tests
  // does: a thread that drives several GPUs must group their calls, or a call that meets its
  // peers before it is enqueued (GICL_CHECK_MODE, the copy-engine exchange) waits for a partner
  // call this thread has not made yet. (NCCL always runs one local rank: setup_nccl.)
  void round(const std::function<void(Rank&)>& op) {
    if (ranks_.size() == 1) return each(op);
    PERF_GICL(gicl_group_start());
    each(op);
    PERF_GICL(gicl_group_end());
  }

  void check_nccl(int rc) {
    if (rc == 0) return;
    std::fprintf(stderr, "NCCL: %s\n", nccl_.error_string(rc));
    std::exit(5);
  }

  /// One iteration: -m calls on every local rank, in one group when m > 1 (nccl-tests'
  /// aggregation; NCCL's calls in an NCCL group).
  void iteration(const std::function<void(Rank&)>& one, bool nccl) {
    if (o_.agg_iters == 1) return round(one);
    if (nccl)
      check_nccl(nccl_.group_start());
    else
      PERF_GICL(gicl_group_start());
    for (int a = 0; a < o_.agg_iters; ++a) round(one);
    if (nccl)
      check_nccl(nccl_.group_end());
    else
      PERF_GICL(gicl_group_end());
  }

  /// Time per call (us): warm-up, then -n iterations eager or captured in a graph (-G).
  double timed(const std::function<void(Rank&)>& one, bool nccl = false) {
    for (int i = 0; i < o_.warmup; ++i) iteration(one, nccl);
    each([](Rank& r) { PERF_CUDA(cudaStreamSynchronize(r.stream)); });
    std::vector<cudaGraphExec_t> graphs(ranks_.size(), nullptr);
    if (o_.graph_iters > 0) {
      // Every local rank's stream captures at once, so that the grouped rounds are captured.
      each([](Rank& r) {
        PERF_CUDA(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
      });
      for (int i = 0; i < o_.iters; ++i) iteration(one, nccl);
      // Every capture ends before any instantiation (not permitted while one is in progress).
      std::vector<cudaGraph_t> g(ranks_.size(), nullptr);
      for (size_t k = 0; k < ranks_.size(); ++k) {
        PERF_CUDA(cudaSetDevice(ranks_[k].device));
        PERF_CUDA(cudaStreamEndCapture(ranks_[k].stream, &g[k]));
      }
      for (size_t k = 0; k < ranks_.size(); ++k) {
        PERF_CUDA(cudaSetDevice(ranks_[k].device));
        PERF_CUDA(cudaGraphInstantiate(&graphs[k], g[k], 0));
        PERF_CUDA(cudaGraphDestroy(g[k]));
      }
    }
    for (auto& r : ranks_) PERF_GICL(gicl_barrier_on_stream(r.comm, r.stream));
    each([](Rank& r) { PERF_CUDA(cudaEventRecord(r.start, r.stream)); });
    if (o_.graph_iters > 0) {
      for (int g = 0; g < o_.graph_iters; ++g)
        for (size_t k = 0; k < ranks_.size(); ++k) {
          PERF_CUDA(cudaSetDevice(ranks_[k].device));
          PERF_CUDA(cudaGraphLaunch(graphs[k], ranks_[k].stream));
        }
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o_.iters; ++i) {
        iteration(one, nccl);
        if (o_.blocking) each([](Rank& r) { PERF_CUDA(cudaStreamSynchronize(r.stream)); });
      }
      // Host time to enqueue one call (every local rank's), the CPU cost a framework pays.
      enqueue_us_ =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          (o_.iters * static_cast<double>(o_.agg_iters) * static_cast<double>(ranks_.size()));
    }
    each([](Rank& r) { PERF_CUDA(cudaEventRecord(r.stop, r.stream)); });
    double total = 0, lo = 1e30, hi = 0;
    for (auto& r : ranks_) {
      PERF_CUDA(cudaEventSynchronize(r.stop));
      float ms = 0;
      PERF_CUDA(cudaEventElapsedTime(&ms, r.start, r.stop));
      const double us =
          1000.0 * ms /
          (o_.iters * static_cast<double>(o_.agg_iters) * std::max(1, o_.graph_iters));
      total += us, lo = std::min(lo, us), hi = std::max(hi, us);
    }
    for (size_t k = 0; k < graphs.size(); ++k)
      if (graphs[k]) cudaGraphExecDestroy(graphs[k]);
    return across_ranks(o_.average == 0   ? ranks_[0].rank == 0 ? total / ranks_.size() : 0
                        : o_.average == 2 ? lo
                        : o_.average == 3 ? hi
                                          : total / ranks_.size());
  }

  /// The sum of `local` over the ranks of every process, through gicl itself (exact: a float64 sum
  /// of integers below 2^53).
  long long sum_over_ranks(long long local) {
    if (o_.gpus > 1) return local;  // every rank is in this process
    return static_cast<long long>(reduce_over_ranks(static_cast<double>(local), gicl_sum));
  }

  double reduce_over_ranks(double local, gicl_redop_t op) {
    double* d = nullptr;
    Rank& r = ranks_[0];
    PERF_CUDA(cudaMalloc(&d, sizeof(double)));
    PERF_CUDA(cudaMemcpy(d, &local, sizeof(double), cudaMemcpyHostToDevice));
    PERF_GICL(gicl_allreduce(d, d, 1, gicl_float64, op, r.comm, r.stream));
    PERF_CUDA(cudaStreamSynchronize(r.stream));
    double v = 0;
    PERF_CUDA(cudaMemcpy(&v, d, sizeof(double), cudaMemcpyDeviceToHost));
    PERF_CUDA(cudaFree(d));
    return v;
  }

  // -a: average (or min / max, or rank 0's) over all ranks of every process, through gicl itself.
  double across_ranks(double local) {
    if (o_.gpus > 1) return local;  // every rank is in this process
    const gicl_redop_t op = o_.average == 2 ? gicl_min : o_.average == 3 ? gicl_max : gicl_sum;
    const double v = reduce_over_ranks(local, op);
    return o_.average == 1 ? v / nranks_ : v;
  }

  void row(size_t bytes, size_t elems) {
    const size_t count = desc_.counts(elems, nranks_, 0).count;
    if (count == 0) return;  // fewer elements than ranks: nothing to move
    enqueue_us_ = 0;
    const Result oop = measure(bytes, elems, false);
    const double enq = enqueue_us_;
    // Point to point has no in-place form: a rank's send would race with the data arriving
    // (sendrecv_perf, and alltoall_perf --p2p).
    const Result ip = desc_.in_place && !o_.p2p ? measure(bytes, elems, true) : Result{};
    const gicl_redop_t op = cur_.op;
    const int root = cur_.root;
    const double factor = desc_.busbw_factor(nranks_);
    double nccl_us = 0;
    std::string nccl_cfg;
    if (o_.compare_nccl) nccl_us = nccl_time(count, &nccl_cfg);
    // #wrong counts every rank's wrong elements (each rank checks its own output).
    const long long oop_wrong = sum_over_ranks(oop.wrong), ip_wrong = sum_over_ranks(ip.wrong);
    wrong_ += oop_wrong + ip_wrong;
    if (!leader()) return;
    // No in-place run (point to point): report zeros, not a division by zero.
    const double alg_o = bytes / oop.us / 1e3, alg_i = ip.us > 0 ? bytes / ip.us / 1e3 : 0;
    std::printf("%12zu %12zu %8s %6s %5d   %9.2f %8.2f %8.2f %7lld   %9.2f %8.2f %8.2f %7lld",
                bytes, count, dtype_label(cur_.dtype), desc_.has_op ? op_label(op) : "none",
                desc_.has_root ? root : -1, oop.us, alg_o, alg_o * factor, oop_wrong, ip.us, alg_i,
                alg_i * factor, ip_wrong);
    if (o_.compare_nccl) {
      const double nbus = bytes / nccl_us / 1e3 * factor;
      std::printf("   %9.2f %8.2f %6.3f %-11s", nccl_us, nbus, nccl_us / oop.us, nccl_cfg.c_str());
    }
    if (o_.graph_iters == 0) std::printf("   %7.2f", enq);
    std::printf("\n");
    std::fflush(stdout);
    json_rows_.push_back({cur_, bytes, count, oop.us, alg_o * factor, oop_wrong, ip.us,
                          alg_i * factor, ip_wrong, nccl_us,
                          nccl_us > 0 ? bytes / nccl_us / 1e3 * factor : 0, nccl_cfg});
    // nccl-tests' average: every timed column, out of place and in place.
    bus_sum_ += alg_o * factor + alg_i * factor;
    bus_runs_ += ip.us > 0 ? 2 : 1;
    if (nccl_us > 0) nccl_bus_sum_ += bytes / nccl_us / 1e3 * factor, ++nccl_runs_;
  }

  /// nccl-tests' closing lines (scripts read them): the wrong elements of every rank and row, and
  /// the average bus bandwidth; with --compare-nccl, NCCL's average beside it.
  void footer() const {
    std::printf("# Out of bounds values : %lld %s\n", wrong_, wrong_ ? "FAILED" : "OK");
    const double avg = bus_runs_ ? bus_sum_ / bus_runs_ : 0;
    std::printf("# Avg bus bandwidth    : %g\n", avg);
    if (nccl_runs_ > 0) {
      const double nccl = nccl_bus_sum_ / nccl_runs_;
      std::printf("# NCCL avg bus bandwidth (out of place) : %g\n", nccl);
    }
    std::printf("#\n");
  }

  /// NCCL's fastest time per call over its configurations and ways of the call; `cfg` names the
  /// one that gave it (sym or default, +alt for the descriptor's second way).
  double nccl_time(size_t count, std::string* cfg) {
    const bool sym = o_.nccl_configs & kNcclSymmetric;
    const Rank& r0 = ranks_[0];
    double best = 1e30;
    for (int k = 0; k < 2; ++k) {
      if (k == 0 ? !sym : r0.dsend == nullptr) continue;
      for (int way = 0; way < (nccl_alt_ ? 2 : 1); ++way) {
        const auto run = way == 0 ? desc_.run_nccl : desc_.run_nccl_alt;
        const double t = timed(
            [&](Rank& r) {
              check_nccl(run(nccl_, k == 0 ? r.nsend : r.dsend, k == 0 ? r.nrecv : r.drecv, count,
                             cur_.dtype, cur_.op, cur_.root, r.ncomm, r.stream));
            },
            true);
        if (t < best) {
          best = t;
          *cfg = std::string(k == 0 ? "sym" : "default") + (way == 1 ? "+alt" : "");
        }
      }
    }
    return best;
  }

  std::string nccl_label() const {
    const unsigned c = o_.nccl_configs;
    std::string s = c == (kNcclSymmetric | kNcclDefault)
                        ? "the faster of ncclMemAlloc + symmetric windows and cudaMalloc"
                    : c == kNcclSymmetric ? "ncclMemAlloc + symmetric windows"
                                          : "cudaMalloc";
    if (nccl_alt_) s += std::string(", each as ") + desc_.nccl_ways;
    return s;
  }

  /// Which ranks the run reaches through the network path, from the variables that choose it:
  /// "p2p_off" (GICL_P2P_DISABLE=1: every peer), "hostid" (GICL_HOSTID: node emulation), or ""
  /// (the machine's own nodes). A baseline row's configuration carries it.
  static std::string net_label() {
    const char* off = std::getenv("GICL_P2P_DISABLE");
    if (off != nullptr && std::strcmp(off, "1") == 0) return "p2p_off";
    const char* host = std::getenv("GICL_HOSTID");
    return host != nullptr && *host != '\0' ? "hostid" : "";
  }

  void write_json() const {
    FILE* f = std::fopen(o_.json.c_str(), "w");
    if (!f) return;
    // The run's type and op at the top (the first of -d/-o all); each row names its own. The
    // configuration (-R, -G, --algo) and NCCL's are what perf/check_baseline.py matches rows by.
    int version = 0;
    PERF_GICL(gicl_get_version(&version));
    const std::string nccl = o_.compare_nccl ? nccl_label() : "none";
    std::fprintf(f,
                 "{\"benchmark\":\"%s_perf\",\"gicl_version\":%d,\"ranks\":%d,\"type\":\"%s\","
                 "\"op\":\"%s\",\"graph\":%d,\"registration\":%d,\"algo\":\"%s\",\"nccl\":\"%s\","
                 "\"net\":\"%s\",\"rows\":[",
                 desc_.name, version, nranks_, dtype_label(o_.dtypes[0]), op_label(o_.ops[0]),
                 o_.graph_iters, o_.registration, o_.algo.c_str(), nccl.c_str(),
                 net_label().c_str());
    for (size_t i = 0; i < json_rows_.size(); ++i) {
      const auto& j = json_rows_[i];
      std::fprintf(
          f,
          "%s{\"type\":\"%s\",\"op\":\"%s\",\"root\":%d,\"bytes\":%zu,\"count\":%zu,"
          "\"oop_us\":%.3f,\"oop_busbw\":%.3f,\"oop_wrong\":%lld,\"ip_us\":%.3f,\"ip_busbw\":%.3f,"
          "\"ip_wrong\":%lld,\"nccl_us\":%.3f,\"nccl_busbw\":%.3f,\"nccl_config\":\"%s\"}",
          i ? "," : "", dtype_label(j.combo.dtype), desc_.has_op ? op_label(j.combo.op) : "none",
          desc_.has_root ? j.combo.root : -1, j.bytes, j.count, j.oop_us, j.oop_bus, j.oop_wrong,
          j.ip_us, j.ip_bus, j.ip_wrong, j.nccl_us, j.nccl_bus, j.nccl_cfg.c_str());
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }

  void teardown() {
    if (o_.compare_nccl) {
      Rank& r = ranks_[0];
      if (r.nsend != nullptr) {
        nccl_.window_deregister(r.ncomm, r.nwin_s);
        nccl_.window_deregister(r.ncomm, r.nwin_r);
        nccl_.mem_free(r.nsend);
        nccl_.mem_free(r.nrecv);
      }
      if (r.dsend != nullptr) {
        PERF_CUDA(cudaFree(r.dsend));
        PERF_CUDA(cudaFree(r.drecv));
      }
      nccl_.destroy(r.ncomm);
    }
    for (auto& r : ranks_) PERF_GICL(gicl_barrier_on_stream(r.comm, r.stream));
    each([](Rank& r) { PERF_CUDA(cudaStreamSynchronize(r.stream)); });
    // Deregistration and destroy are collective: every rank of this process at once.
    const int reg = o_.registration;
    auto finish = [reg](Rank& r) {
      PERF_CUDA(cudaSetDevice(r.device));
      if (reg == 1) {
        PERF_GICL(gicl_comm_deregister(r.comm, r.reg_s));
        PERF_GICL(gicl_comm_deregister(r.comm, r.reg_r));
      }
      if (reg != 2) {
        cudaFree(r.send);
        cudaFree(r.recv);
      }
      PERF_GICL(gicl_comm_destroy(r.comm));
    };
    if (ranks_.size() == 1) {
      finish(ranks_[0]);
    } else {
      std::vector<std::thread> t;
      for (auto& r : ranks_) t.emplace_back([&r, &finish] { finish(r); });
      for (auto& th : t) th.join();
    }
  }

  struct JsonRow {
    Combo combo;
    size_t bytes, count;
    double oop_us, oop_bus;
    long long oop_wrong;
    double ip_us, ip_bus;
    long long ip_wrong;
    double nccl_us, nccl_bus;
    std::string nccl_cfg;
  };

  const CollDesc& desc_;
  CollOptions o_;
  Combo cur_;
  std::vector<Rank> ranks_;
  int nranks_ = 1;
  Nccl nccl_;
  bool nccl_alt_ = false;  // the descriptor's second NCCL way is in this NCCL
  long long wrong_ = 0;    // every rank's wrong elements, all rows
  double bus_sum_ = 0, nccl_bus_sum_ = 0;
  int bus_runs_ = 0, nccl_runs_ = 0;
  std::vector<JsonRow> json_rows_;
  double enqueue_us_ = 0;
};

}  // namespace

int run_driver(int argc, char** argv, const CollDesc& desc) {
  CollOptions o;
  std::string error;
  const bool ok = parse_coll_options(argc, argv, &o, &error);
  if (!ok || o.help) {
    FILE* out = ok ? stdout : stderr;
    if (!ok) std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    std::fprintf(out,
                 "usage: %s [flags]\nThe %s benchmark in nccl-tests' form: one rank per GPU, "
                 "started by gicl-run, torchrun, mpirun or srun (or -g N GPUs in one process).\n"
                 "busbw = algbw x %s (n ranks; docs/performance.md).\n%s",
                 argv[0], desc.name, desc.busbw_formula, coll_usage());
    return ok ? 0 : 2;
  }
  if (o.p2p && desc.run_p2p == nullptr) {
    std::fprintf(stderr, "%s: --p2p: only alltoall_perf makes its call of sends and receives\n",
                 argv[0]);
    return 2;
  }
  // --algo NAME: GICL_ALGO for this run (the communicator reads it at its first collective; an
  // unknown name or one the collective lacks fails there with a message naming it).
  if (!o.algo.empty()) setenv("GICL_ALGO", o.algo.c_str(), 1);
  Driver d(desc, o);
  return d.main();
}

int nccl_rank() {
  return g_rank;
}
int nccl_ranks() {
  return g_ranks;
}

}  // namespace perf
