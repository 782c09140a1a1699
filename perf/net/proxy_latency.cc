// SPDX-License-Identifier: Apache-2.0
// proxy_latency: the network proxies alone between two processes, no GPU. Host threads stand in
// for the kernels of the pipe collectives: they write a message into a host FIFO slot, post it
// (kFifoSend) into a real request ring, wait for the peer's message to be counted, and credit its
// slot (kFifoCredit), as collectives/pipe/fifo.cuh does; each rank's NetProxy moves them through
// the staged delivery over the transport (GICL_OFI_PROVIDER's, tcp;ofi_rxm on loopback by
// default). Per endpoint count and message size, the one-way time of a ping-pong (median, p10,
// p90) and of a round in which both ranks send and then wait for the other's message (a 2-rank
// exchange step, median). A kernel adds its own share on top (its launch, the PCIe polls).
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"
#include "gicl/gicl.h"
#include "net/connect.hpp"
#include "net/transport.hpp"
#include "perf/net/two_ranks.hpp"
#include "proxy/host_copier.hpp"
#include "proxy/host_ring.hpp"
#include "proxy/net_proxy.hpp"
#include "proxy/staged_delivery.hpp"

namespace gicl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDepth = 4;  // slots of the one lane, as the pipe channels have

struct Options {
  size_t min_bytes = 8, max_bytes = 64 << 10;
  double factor = 8;
  int iters = 2000;
  std::vector<int> endpoints{1, 4};
  int pause_us = 0;  // > 0: also exchange steps after a pause, with and without a kick
};

struct Result {
  double pingpong[3];  // one way: median, p10, p90 (seconds)
  double exchange;     // one round, median
  double paused[2];    // one round after a pause, median: the proxies kicked, not kicked
};

double at(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

/// One rank: its proxy, staging area and ring, then every size's two patterns.
Status run_rank(const bootstrap::UniqueIdData& id, int me, const Options& o,
                const std::vector<size_t>& sizes, std::vector<Result>* out) {
  std::unique_ptr<bootstrap::Bootstrap> bs;
  GICL_CHECK(bootstrap::Bootstrap::create(id, me, 2, nullptr, 30000, &bs));
  net::OpenArgs a;
  a.rank = me;
  a.nranks = 2;
  a.max_inflight = 256;
  std::unique_ptr<net::Transport> t;
  GICL_CHECK(net::open_transport(net::Backend::kOfi, a, &t));
  GICL_CHECK(net::connect_all(*t, *bs));
  GICL_CHECK(net::open_connections(*t, *bs, 30000));
  proxy::StagingView sv;
  sv.layout.nranks = 2;
  sv.layout.chunk = 8 << 10;
  sv.layout.send_slots = 4;
  sv.layout.recv_slots = 2;
  sv.layout.fifo_lanes = 1;
  sv.layout.fifo_depth = kDepth;
  sv.layout.fifo_slot = static_cast<uint32_t>((sizes.back() + 4095) / 4096 * 4096);
  GICL_CHECK(sv.layout.check());
  std::vector<char> staging(sv.layout.bytes(), 0);
  std::unique_ptr<net::Region> region;
  GICL_CHECK(t->register_memory(staging.data(), staging.size(), net::MemKind::kHost, &region));
  GICL_CHECK(net::exchange_keys(*bs, *region, &sv.keys));
  sv.base = staging.data();
  sv.region = region.get();
  std::vector<char> heap(4096, 0);  // no heap traffic: its keys only bound the requests
  net::RemoteKey bound{};
  bound.bytes = heap.size();
  proxy::HostCopier copier;
  proxy::NetProxyArgs pa;
  pa.rank = me;
  pa.transport = t.get();
  pa.heap =
      proxy::HeapView{heap.data(), heap.size(), nullptr, std::vector<net::RemoteKey>(2, bound)};
  pa.delivery =
      proxy::make_staged_delivery(t.get(), me, pa.heap, sv, &copier, std::chrono::seconds(30));
  proxy::HostRing ring(256);
  pa.rings.push_back(ring.view());
  std::unique_ptr<proxy::NetProxy> px;
  GICL_CHECK(proxy::NetProxy::start(std::move(pa), &px));

  const proxy::StagingLayout& l = sv.layout;
  const int peer = 1 - me;
  char* base = staging.data();
  proxy::HostMem m;
  m.patience = std::chrono::milliseconds(30000);
  auto counter = [&](size_t off) {
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(base + off), __ATOMIC_ACQUIRE);
  };
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  uint64_t sent = 0, rcvd = 0;
  bool stuck = false;
  // A kernel's send: a free slot (its previous message credited), the bytes, the post.
  auto send = [&](size_t bytes) {
    ++sent;
    const uint32_t k = static_cast<uint32_t>((sent - 1) % kDepth);
    while (sent > kDepth && counter(l.fifo_credit_offset(peer, 0)) < sent - kDepth)
      if (Clock::now() > deadline) return !(stuck = true);
    std::memset(base + l.fifo_out_offset(peer, k), static_cast<int>(sent), bytes);
    return proxy::host_fifo(ring, m, ProxyOp::kFifoSend, peer, k, bytes) != ~0ull;
  };
  // A kernel's receive: the slot's count, then the credit.
  auto recv = [&] {
    ++rcvd;
    const uint32_t k = static_cast<uint32_t>((rcvd - 1) % kDepth);
    while (counter(l.fifo_arrived_offset(peer, k)) < (rcvd - 1) / kDepth + 1)
      if (Clock::now() > deadline) return !(stuck = true);
    return proxy::host_fifo(ring, m, ProxyOp::kFifoCredit, peer, 0, 0) != ~0ull;
  };
  for (size_t bytes : sizes) {
    Result r{};
    std::vector<double> trips, rounds;
    GICL_CHECK(bs->barrier());
    for (int i = -o.iters / 10; i < o.iters; ++i) {  // the first tenth warms up
      const auto t0 = Clock::now();
      const bool ok = me == 0 ? send(bytes) && recv() : recv() && send(bytes);
      if (!ok) break;
      if (i >= 0) trips.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / 2);
    }
    GICL_CHECK(bs->barrier());
    for (int i = -o.iters / 10; i < o.iters && !stuck; ++i) {
      const auto t0 = Clock::now();
      if (!send(bytes) || !recv()) break;
      if (i >= 0) rounds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    if (stuck || trips.size() < static_cast<size_t>(o.iters) ||
        rounds.size() < static_cast<size_t>(o.iters)) {
      std::string why;
      px->error(&why);
      return GICL_FAIL(GICL_TIMEOUT, "proxy_latency rank %d, %zu bytes: %s", me, bytes,
                       why.empty() ? "a message or credit did not come" : why.c_str());
    }
    // Steps after a pause (a training step's compute): each rank's host thread sleeps, then
    // kicks its proxy as a collective's enqueue does (or not), then sends and waits.
    for (int kicked = 1; kicked >= 0 && o.pause_us > 0; --kicked) {
      std::vector<double> paused;
      const size_t steps = static_cast<size_t>(std::max(o.iters / 10, 20));
      GICL_CHECK(bs->barrier());
      for (size_t i = 0; i < steps && !stuck; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(o.pause_us));
        const auto t0 = Clock::now();
        if (kicked) px->kick();
        if (!send(bytes) || !recv()) break;
        paused.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      if (stuck || paused.size() < steps) {
        std::string why;
        px->error(&why);
        return GICL_FAIL(GICL_TIMEOUT, "proxy_latency rank %d, %zu bytes after a pause: %s", me,
                         bytes, why.empty() ? "a message or credit did not come" : why.c_str());
      }
      r.paused[1 - kicked] = at(paused, 0.5);
    }
    r.pingpong[0] = at(trips, 0.5);
    r.pingpong[1] = at(trips, 0.1);
    r.pingpong[2] = at(trips, 0.9);
    r.exchange = at(rounds, 0.5);
    out->push_back(r);
  }
  GICL_CHECK(bs->barrier());
  return GICL_SUCCESS;
}

void usage(FILE* f, const char* argv0) {
  std::fprintf(f,
               "usage: %s [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-E N,N,...] [-p US]\n"
               "  the network proxies alone, host threads in the kernels' place (no GPU)\n"
               "  -b, --minbytes N     smallest message (default 8)\n"
               "  -e, --maxbytes N     largest message (default 64K)\n"
               "  -f, --stepfactor F   size step (default 8)\n"
               "  -n, --iters N        round trips per size (default 2000; a tenth more first)\n"
               "  -E, --endpoints LIST endpoint counts to run (GICL_NET_ENDPOINTS; default 1,4)\n"
               "  -p, --pause US       also exchange steps after a pause of US microseconds, the\n"
               "                       proxies kicked before the send (as a collective's enqueue\n"
               "                       does) and not\n"
               "  -h, --help           this text\n",
               argv0);
}

int main_impl(int argc, char** argv) {
  Options o;
  const option longs[] = {{"minbytes", required_argument, nullptr, 'b'},
                          {"maxbytes", required_argument, nullptr, 'e'},
                          {"stepfactor", required_argument, nullptr, 'f'},
                          {"iters", required_argument, nullptr, 'n'},
                          {"endpoints", required_argument, nullptr, 'E'},
                          {"pause", required_argument, nullptr, 'p'},
                          {"help", no_argument, nullptr, 'h'},
                          {nullptr, 0, nullptr, 0}};
  auto size_arg = [&](const char* flag, size_t* out) {
    if (gicl_parse_size(optarg, out) == GICL_SUCCESS) return true;
    std::fprintf(stderr, "proxy_latency: %s %s: not a size\n", flag, optarg);
    usage(stderr, argv[0]);
    return false;
  };
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:E:p:h", longs, nullptr)) != -1) {
    switch (c) {
      case 'b':
        if (!size_arg("-b", &o.min_bytes)) return 2;
        break;
      case 'e':
        if (!size_arg("-e", &o.max_bytes)) return 2;
        break;
      case 'f':
        o.factor = std::atof(optarg);
        break;
      case 'n':
        o.iters = std::atoi(optarg);
        break;
      case 'E':
        if (!perf_net::parse_endpoints("proxy_latency", optarg, &o.endpoints)) return 2;
        break;
      case 'p':
        o.pause_us = std::atoi(optarg);
        break;
      case 'h':
        usage(stdout, argv[0]);
        return 0;
      default:
        usage(stderr, argv[0]);
        return 2;
    }
  }
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes || o.max_bytes > (64 << 20) || o.factor <= 1 ||
      o.iters < 10 || o.pause_us < 0 || o.pause_us > 1000000) {
    std::fprintf(
        stderr,
        "proxy_latency: bad arguments (sizes 1 B to 64 MiB, -f > 1, -n >= 10, -p 0 to 1000000)\n");
    return 2;
  }
  perf_net::default_loopback_provider();
  const std::vector<size_t> sizes = perf_net::size_ladder(o.min_bytes, o.max_bytes, o.factor);
  std::printf("# proxy_latency: 2 ranks, %s, host FIFOs (1 lane of %u slots), %d round trips\n",
              getenv("GICL_OFI_PROVIDER"), kDepth, o.iters);
  if (o.pause_us > 0)
    std::printf("# after a %d us pause: exchange steps with the proxies kicked and not kicked\n",
                o.pause_us);
  std::printf("# %9s %10s %12s %10s %10s %12s%s\n", "endpoints", "bytes", "one-way us", "p10 us",
              "p90 us", "exchange us", o.pause_us > 0 ? "    kicked us not kicked us" : "");
  for (int e : o.endpoints) {
    std::vector<Result> r;
    if (!perf_net::run_two_ranks("proxy_latency", e,
                                 [&](const bootstrap::UniqueIdData& id, int me) {
                                   return run_rank(id, me, o, sizes, &r);
                                 }))
      return 1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::printf("  %9d %10zu %12.2f %10.2f %10.2f %12.2f", e, sizes[i], r[i].pingpong[0] * 1e6,
                  r[i].pingpong[1] * 1e6, r[i].pingpong[2] * 1e6, r[i].exchange * 1e6);
      if (o.pause_us > 0) std::printf(" %10.2f %14.2f", r[i].paused[0] * 1e6, r[i].paused[1] * 1e6);
      std::printf("\n");
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
