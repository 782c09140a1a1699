// SPDX-License-Identifier: Apache-2.0
// transport_bw: the network transport alone between two processes, host memory, no GPU: both
// ranks write into each other at once (as a ring's steps do), `window` writes in flight each, in
// pieces of each size; rows give GB/s each way (the slower rank's) for every endpoint count
// asked (GICL_NET_ENDPOINTS, net/endpoints), median of R runs of `total` bytes each way. Per
// endpoint count a line first gives the higher rank's first write after connecting and the
// one-way latency of an 8-byte write_imm ping-pong, posted as the staged path posts them
// (net::Completion::kSent) and with delivery complete. The provider is GICL_OFI_PROVIDER's
// (tcp;ofi_rxm on loopback by default here).
//
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "gicl/gicl.h"
#include "net/connect.hpp"
#include "net/transport.hpp"
#include "perf/net/two_ranks.hpp"

namespace gicl {
namespace {

constexpr int kPingPongs = 2000;

struct Options {
  size_t min_bytes = 64 << 10, max_bytes = 4 << 20, total = size_t{1} << 30;
  double factor = 4;
  std::vector<int> endpoints{1, 2, 4};
  int window = 32, reps = 3;
};

void usage(FILE* out, const char* prog) {
  std::fprintf(out,
               "usage: %s [-b MIN] [-e MAX] [-f FACTOR] [-E 1,2,4] [-t TOTAL] [-w WINDOW] [-r R]\n"
               "Both ranks (two processes) write TOTAL bytes into each other at once, WINDOW\n"
               "writes in flight, per piece size and endpoint count (GICL_NET_ENDPOINTS).\n"
               "  -b, --minbytes SIZE   smallest piece (default 64K)\n"
               "  -e, --maxbytes SIZE   largest piece (default 4M)\n"
               "  -f, --stepfactor F    piece size factor (default 4)\n"
               "  -E, --endpoints LIST  endpoint counts, 1 to 16 (default 1,2,4)\n"
               "  -t, --total SIZE      bytes each way per run (default 1G)\n"
               "  -w, --window N        writes in flight per rank (default 32)\n"
               "  -r, --reps N          runs per row, the median printed (default 3)\n"
               "  -h, --help            this text\n"
               "SIZE: digits with an optional K, M, G or T suffix (powers of 1024).\n",
               prog);
}

/// One rank: `reps` timed exchanges per piece size; appends each size's median seconds (the
/// slower rank's) to `secs`; `first_write`: the seconds of rank 1's first write to rank 0;
/// `latency`: one way of an 8-byte ping-pong, seconds: posted as kSent, then as kDelivered.
Status run_rank(const bootstrap::UniqueIdData& id, int me, const Options& o,
                const std::vector<size_t>& sizes, std::vector<double>* secs, double* first_write,
                double latency[2]) {
  std::unique_ptr<bootstrap::Bootstrap> bs;
  GICL_CHECK(bootstrap::Bootstrap::create(id, me, 2, nullptr, 30000, &bs));
  net::OpenArgs a;
  a.rank = me;
  a.nranks = 2;
  a.max_inflight = std::max(256, 2 * o.window);
  std::unique_ptr<net::Transport> t;
  GICL_CHECK(net::open_transport(net::Backend::kOfi, a, &t));
  GICL_CHECK(net::connect_all(*t, *bs));
  GICL_CHECK(net::open_connections(*t, *bs, 30000));
  // Source and destination: one region, the pieces cycling through 64 MiB of each half.
  constexpr size_t kHalf = 64 << 20;
  std::vector<char> mem(2 * kHalf, static_cast<char>(me + 1));
  std::unique_ptr<net::Region> region;
  GICL_CHECK(t->register_memory(mem.data(), mem.size(), net::MemKind::kHost, &region));
  std::vector<net::RemoteKey> keys;
  GICL_CHECK(net::exchange_keys(*bs, *region, &keys));
  const int peer = 1 - me;
  net::Event ev[64];
  // Immediates polled while this rank was still in a bootstrap exchange: the peer may have left
  // the exchange and sent its first ping already. The ping-pong counts them before polling.
  int early_immediates = 0;
  // Bootstrap exchanges while polling: the peer's writes land only while this rank progresses.
  auto polling = [&](auto exchange) -> Status {
    auto f = std::async(std::launch::async, exchange);
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      int n = 0;
      GICL_CHECK(t->poll(ev, 64, &n));
      for (int i = 0; i < n; ++i) early_immediates += ev[i].kind == net::EventKind::kImmediate;
    }
    return f.get();
  };
  auto barrier = [&] { return polling([&] { return bs->barrier(); }); };
  // The first write from the higher rank: connections are opened from the lower one, so this
  // shows whether the open left the other direction ready.
  GICL_CHECK(barrier());
  double first[2] = {0, 0};
  if (me == 1) {
    const auto t0 = std::chrono::steady_clock::now();
    GICL_CHECK(t->write(peer, *region, mem.data() + kHalf, keys[peer], 0, 8, 0));
    for (bool done = false; !done;) {
      int n = 0;
      GICL_CHECK(t->poll(ev, 64, &n));
      for (int i = 0; i < n; ++i) done |= ev[i].kind == net::EventKind::kDone;
    }
    first[1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  GICL_CHECK(polling([&] { return bs->allgather(first, sizeof(double)); }));
  *first_write = first[1];
  // Ping-pong of 8-byte writes with an immediate, each side answering the other's immediate:
  // the one-way latency of a small message through this endpoint count (rank 0's median).
  for (const net::Completion when : {net::Completion::kSent, net::Completion::kDelivered}) {
    GICL_CHECK(barrier());
    std::vector<double> trips;
    for (int i = 0; i < kPingPongs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (me == 0)
        GICL_CHECK(t->write_imm(peer, *region, mem.data() + kHalf, keys[peer], 0, 8, i, 0, when));
      for (bool heard = early_immediates > 0; !heard;) {
        int n = 0;
        GICL_CHECK(t->poll(ev, 64, &n));
        for (int j = 0; j < n; ++j) heard |= ev[j].kind == net::EventKind::kImmediate;
      }
      if (early_immediates > 0) --early_immediates;
      if (me == 1)
        GICL_CHECK(t->write_imm(peer, *region, mem.data() + kHalf, keys[peer], 0, 8, i, 0, when));
      trips.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(trips.begin(), trips.end());
    double one_way[2] = {0, 0};
    one_way[me] = trips[trips.size() / 2] / 2;
    GICL_CHECK(polling([&] { return bs->allgather(one_way, sizeof(double)); }));
    latency[when == net::Completion::kSent ? 0 : 1] = one_way[0];
  }
  for (size_t sz : sizes) {
    std::vector<double> runs;
    const size_t count = std::max<size_t>(1, o.total / sz);
    for (int rep = 0; rep < o.reps; ++rep) {
      GICL_CHECK(barrier());
      const auto t0 = std::chrono::steady_clock::now();
      size_t posted = 0, done = 0;
      while (done < count) {
        while (posted < count && posted - done < static_cast<size_t>(o.window)) {
          const size_t off = (posted * sz) % (kHalf - sz + 1);
          GICL_CHECK(
              t->write(peer, *region, mem.data() + kHalf + off, keys[peer], off, sz, posted));
          ++posted;
        }
        int n = 0;
        GICL_CHECK(t->poll(ev, 64, &n));
        for (int i = 0; i < n; ++i) {
          if (ev[i].kind != net::EventKind::kDone) continue;
          if (ev[i].status != GICL_SUCCESS)
            return GICL_FAIL(ev[i].status, "transport_bw: a write to rank %d failed", peer);
          ++done;
        }
      }
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(runs.begin(), runs.end());
    double median = runs[runs.size() / 2];
    // The slower rank's figure: each side's time is its own writes' completion.
    double both[2] = {0, 0};
    both[me] = median;
    GICL_CHECK(polling([&] { return bs->allgather(both, sizeof(double)); }));
    secs->push_back(std::max(both[0], both[1]));
  }
  GICL_CHECK(barrier());
  return GICL_SUCCESS;
}

int main_impl(int argc, char** argv) {
  Options o;
  const option longs[] = {{"minbytes", required_argument, nullptr, 'b'},
                          {"maxbytes", required_argument, nullptr, 'e'},
                          {"stepfactor", required_argument, nullptr, 'f'},
                          {"endpoints", required_argument, nullptr, 'E'},
                          {"total", required_argument, nullptr, 't'},
                          {"window", required_argument, nullptr, 'w'},
                          {"reps", required_argument, nullptr, 'r'},
                          {"help", no_argument, nullptr, 'h'},
                          {nullptr, 0, nullptr, 0}};
  auto size_arg = [&](const char* flag, size_t* out) {
    if (gicl_parse_size(optarg, out) == GICL_SUCCESS) return true;
    std::fprintf(stderr, "transport_bw: %s %s: not a size\n", flag, optarg);
    usage(stderr, argv[0]);
    return false;
  };
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:E:t:w:r:h", longs, nullptr)) != -1) {
    switch (c) {
      case 'b':
        if (!size_arg("-b", &o.min_bytes)) return 2;
        break;
      case 'e':
        if (!size_arg("-e", &o.max_bytes)) return 2;
        break;
      case 't':
        if (!size_arg("-t", &o.total)) return 2;
        break;
      case 'f':
        o.factor = std::atof(optarg);
        break;
      case 'w':
        o.window = std::atoi(optarg);
        break;
      case 'r':
        o.reps = std::atoi(optarg);
        break;
      case 'E':
        if (!perf_net::parse_endpoints("transport_bw", optarg, &o.endpoints)) return 2;
        break;
      case 'h':
        usage(stdout, argv[0]);
        return 0;
      default:
        usage(stderr, argv[0]);
        return 2;
    }
  }
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes || o.factor <= 1 || o.window < 1 ||
      o.reps < 1 || o.total == 0) {
    std::fprintf(stderr, "transport_bw: bad arguments (sizes, -f > 1, -w, -r, -t)\n");
    return 2;
  }
  perf_net::default_loopback_provider();
  const std::vector<size_t> sizes = perf_net::size_ladder(o.min_bytes, o.max_bytes, o.factor);
  std::printf(
      "# transport_bw: 2 ranks, %s, both ways at once, window %d, %zu MiB each way, "
      "median of %d\n",
      getenv("GICL_OFI_PROVIDER"), o.window, o.total >> 20, o.reps);
  std::printf("# %10s %10s %14s\n", "endpoints", "piece", "GB/s each way");
  for (int e : o.endpoints) {
    std::vector<double> secs;
    double first = 0, latency[2] = {0, 0};
    if (!perf_net::run_two_ranks("transport_bw", e, [&](const bootstrap::UniqueIdData& id, int me) {
          return run_rank(id, me, o, sizes, &secs, &first, latency);
        }))
      return 1;
    std::printf(
        "# %d endpoints: rank 1's first 8-byte write to rank 0 took %.1f us; 8-byte write_imm "
        "ping-pong, one way (median of %d): %.1f us sent-complete, %.1f us delivery-complete\n",
        e, first * 1e6, kPingPongs, latency[0] * 1e6, latency[1] * 1e6);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t count = std::max<size_t>(1, o.total / sizes[i]);
      std::printf("  %10d %10zu %14.2f\n", e, sizes[i],
                  static_cast<double>(count * sizes[i]) / secs[i] / 1e9);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace gicl

int main(int argc, char** argv) {
  return gicl::main_impl(argc, argv);
}
