// SPDX-License-Identifier: Apache-2.0
// The network proxy's request ring with GPU threads as producers and a host thread reading it as
// the proxy does: every thread of many blocks posts its sequence and the reader sees each one
// complete and in order; a full ring makes producers wait and, with no reader, report a timeout;
// a failed proxy ends their waits; a quiet returns only once the reader has completed what came
// before it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "gicl/device/detail/proxy_ring.cuh"
#include "gpu/gpu_ranks.cuh"
#include "proxy/cuda_copier.hpp"
#include "proxy/ring_memory.hpp"
#include "proxy/ring_reader.hpp"

namespace gicl::test {
namespace {

/// A Reporter with its own error state, as a communicator's kernels get one.
struct Errors {
  Errors(uint64_t timeout_ns) {
    EXPECT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&state), sizeof(*state), cudaHostAllocMapped),
              cudaSuccess);
    std::memset(state, 0, sizeof(*state));
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&lock), sizeof(uint32_t)), cudaSuccess);
    EXPECT_EQ(cudaMemset(lock, 0, sizeof(uint32_t)), cudaSuccess);
    gicl_device_state_t* dev_state = nullptr;
    EXPECT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_state), state, 0),
              cudaSuccess);
    reporter = {dev_state, lock, nullptr, 0, timeout_ns, 0, 1};
  }
  ~Errors() {
    cudaFree(lock);
    cudaFreeHost(state);
  }
  uint32_t kind() const {
    return __atomic_load_n(&state->error.state, __ATOMIC_ACQUIRE) == 2 ? state->error.kind : 0;
  }
  gicl_device_state_t* state = nullptr;
  uint32_t* lock = nullptr;
  dev::detail::Reporter reporter{};
};

__host__ __device__ uint64_t src_of(uint64_t s) {
  return (s & 3) == 3 ? kProxyShortOffsetLimit + s : s;  // every fourth in long form
}

__global__ void produce(dev::detail::Reporter r, ProxyRing q, uint32_t per, uint32_t* gave_up) {
  const uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t s = 0; s < per; ++s) {
    uint64_t w[2 * kProxyMaxSlots];
    const uint32_t n = proxy_encode_transfer(w, ProxyOp::kPut, id, s, src_of(s), s & 1023);
    if (proxy_submit(r, q, w, n, GICL_OP_PUT, static_cast<int>(id)) == ~uint64_t{0}) {
      atomicAdd(gave_up, 1u);
      return;
    }
  }
}

__global__ void post_then_quiet(dev::detail::Reporter r, ProxyRing q, uint32_t ops,
                                uint32_t* returned) {
  for (uint32_t s = 0; s < ops; ++s) {
    uint64_t w[2 * kProxyMaxSlots];
    const uint32_t n = proxy_encode_signal(w, ProxyOp::kSignalAdd, 1, 64, s);
    if (proxy_submit(r, q, w, n, GICL_OP_SIGNAL, 1) == ~uint64_t{0}) return;
  }
  if (proxy_wait_done(r, q, proxy_head(q), GICL_OP_QUIET, 1))
    dev::detail::store_relaxed_sys(returned, 1u);
}

struct Fixture {
  explicit Fixture(uint32_t slots, uint64_t timeout_ns) : errors(timeout_ns) {
    EXPECT_TRUE(proxy::RingMemory::create(0, slots, &mem).ok()) << last_error();
    EXPECT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(uint32_t), cudaHostAllocMapped),
              cudaSuccess);
    *flag = 0;
    EXPECT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), flag, 0), cudaSuccess);
  }
  ~Fixture() { cudaFreeHost(flag); }
  proxy::RingReader reader() {
    return proxy::RingReader(mem->slots(), mem->ring().size, mem->tail(), mem->done());
  }
  Errors errors;
  std::unique_ptr<proxy::RingMemory> mem;
  uint32_t* flag = nullptr;
  uint32_t* dev_flag = nullptr;
};

TEST(ProxyRingGpu, EveryThreadsSequenceArrivesCompleteAndInOrder) {
  REQUIRE_GPUS(1);
  const uint32_t blocks = 132, threads = 256, per = 64;  // 2.16 M operations, 2.7 M slots
  const uint32_t producers = blocks * threads;
  Fixture f(4096, 10'000'000'000ull);
  proxy::RingReader rd = f.reader();
  produce<<<blocks, threads>>>(f.errors.reporter, f.mem->ring(), per, f.dev_flag);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<uint32_t> next(producers, 0);
  uint64_t got = 0, bad = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got < uint64_t{producers} * per && bad == 0) {
    ProxyRequest q{};
    uint64_t t = 0;
    if (!rd.next(&q, &t)) {
      rd.publish_tail(true);
      if (f.errors.kind() != 0 || std::chrono::steady_clock::now() > deadline) break;
      continue;
    }
    const uint32_t s = next[q.peer < producers ? q.peer : 0];
    if (q.op != ProxyOp::kPut || q.peer >= producers || q.dst != s || q.src != src_of(s) ||
        q.bytes != (s & 1023)) {
      ADD_FAILURE() << "ticket " << t << ": producer " << q.peer << " seq " << q.dst << " expected "
                    << s;
      ++bad;
      break;
    }
    ++next[q.peer];
    ++got;
    rd.complete(t);
  }
  if (bad != 0) f.mem->mark_failed();  // let waiting producers stop
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(f.errors.kind(), 0u);
  EXPECT_EQ(*f.flag, 0u) << "producers gave up";
  EXPECT_EQ(got, uint64_t{producers} * per);
  uint64_t head = 0;
  ASSERT_EQ(cudaMemcpy(&head, f.mem->ring().head, sizeof(head), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(rd.position(), head);
  EXPECT_EQ(*f.mem->done(), head);
  ProxyRequest q{};
  uint64_t t = 0;
  EXPECT_FALSE(rd.next(&q, &t)) << "an operation nobody posted";
}

TEST(ProxyRingGpu, AFullRingWithNoProxyReportsATimeout) {
  REQUIRE_GPUS(1);
  Fixture f(8, 100'000'000ull);  // 100 ms
  produce<<<1, 1>>>(f.errors.reporter, f.mem->ring(), 16, f.dev_flag);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(f.errors.kind(), static_cast<uint32_t>(GICL_DEVICE_ERROR_TIMEOUT));
  EXPECT_EQ(*f.flag, 1u);
  proxy::RingReader rd = f.reader();
  ProxyRequest q{};
  uint64_t t = 0;
  int read = 0;
  while (rd.next(&q, &t)) ++read;
  EXPECT_LE(read, 8);
  EXPECT_GE(read, 5);  // the ring held as many as fit (long forms take two slots)
}

TEST(ProxyRingGpu, AFailedProxyEndsTheProducersWaits) {
  REQUIRE_GPUS(1);
  Fixture f(8, 60'000'000'000ull);  // a minute: only the failure can end the wait in time
  produce<<<1, 1>>>(f.errors.reporter, f.mem->ring(), 16, f.dev_flag);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  f.mem->mark_failed();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(f.errors.kind(), static_cast<uint32_t>(GICL_DEVICE_ERROR_PROXY));
  EXPECT_EQ(f.errors.state->error.op, static_cast<uint32_t>(GICL_OP_PUT));
}

TEST(ProxyRingGpu, QuietReturnsOnlyAfterTheProxyCompletedEverythingBefore) {
  REQUIRE_GPUS(1);
  Fixture f(64, 10'000'000'000ull);
  proxy::RingReader rd = f.reader();
  post_then_quiet<<<1, 1>>>(f.errors.reporter, f.mem->ring(), 10, f.dev_flag);
  std::vector<uint64_t> tickets;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (tickets.size() < 10 && std::chrono::steady_clock::now() < deadline) {
    ProxyRequest q{};
    uint64_t t = 0;
    if (rd.next(&q, &t)) tickets.push_back(t);
  }
  ASSERT_EQ(tickets.size(), 10u);
  for (size_t i = 1; i < tickets.size(); ++i) rd.complete(tickets[i]);  // all but the first
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(__atomic_load_n(f.flag, __ATOMIC_ACQUIRE), 0u) << "quiet returned with one open";
  rd.complete(tickets[0]);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(*f.flag, 1u);
  EXPECT_EQ(f.errors.kind(), 0u);
}

// The copier's tests run with its copy agent (500 us of linger) and without it (every operation
// on its stream).
class CudaCopier : public ::testing::TestWithParam<std::chrono::microseconds> {};
INSTANTIATE_TEST_SUITE_P(Linger, CudaCopier,
                         ::testing::Values(std::chrono::microseconds(0),
                                           std::chrono::microseconds(500)),
                         [](const auto& info) {
                           return info.param.count() ? std::string("Agent") : std::string("Stream");
                         });

// The staged network path's copier: bytes to the GPU and back, signals and atomics (4- and 8-byte
// words) applied after the copies before them, markers returned in issue order once done.
TEST_P(CudaCopier, CopiesSignalsAndMarkersInIssueOrder) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, GetParam(), &copier).ok()) << last_error();
  const size_t n = 3 << 20;
  char* dev = nullptr;
  char *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, n + 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, n + 64), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&in), n, cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&out), n + 64, cudaHostAllocDefault),
            cudaSuccess);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<char>(i * 7 + (i >> 12));
  auto* word = reinterpret_cast<uint64_t*>(dev + n);
  ASSERT_TRUE(copier->to_device(dev, in, n).ok());
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 5).ok());
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 6).ok());
  ASSERT_TRUE(copier->mark(11).ok());
  ASSERT_TRUE(copier->update(word + 1, ProxyAtomic::kSet, 8, 42).ok());
  // A 32-bit word through every other update, beside a 64-bit one it must not touch.
  auto* half = reinterpret_cast<uint32_t*>(word + 2);
  ASSERT_TRUE(copier->update(half, ProxyAtomic::kSet, 4, 0xf0f0).ok());
  ASSERT_TRUE(copier->update(half, ProxyAtomic::kOr, 4, 0x0f).ok());
  ASSERT_TRUE(copier->update(half, ProxyAtomic::kAnd, 4, 0xff0f).ok());
  ASSERT_TRUE(copier->update(half, ProxyAtomic::kXor, 4, 0x1).ok());
  ASSERT_TRUE(copier->update(half, ProxyAtomic::kAdd, 4, 0xffffffffu).ok());
  ASSERT_TRUE(copier->to_host(out, dev, n + 64).ok());
  ASSERT_TRUE(copier->mark(12).ok());
  std::vector<uint64_t> done;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done.size() < 2 && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
  EXPECT_EQ(done, (std::vector<uint64_t>{11, 12}));
  EXPECT_EQ(std::memcmp(in, out, n), 0);
  uint64_t words[3];
  std::memcpy(words, out + n, sizeof(words));
  EXPECT_EQ(words[0], 11u);
  EXPECT_EQ(words[1], 42u);
  // ((0xf0f0 | 0x0f) & 0xff0f) ^ 1 = 0xf00e, minus 1 (adding 2^32 - 1 wraps) = 0xf00d.
  EXPECT_EQ(words[2], 0xf00du);
  cudaFreeHost(in);
  cudaFreeHost(out);
  cudaFree(dev);
}

// A staged batch's updates: one launch applies a list read from pinned host memory, in order,
// after the copies before it; its fetching form stores each old value in host memory. A list
// longer than what the copy agent reads at once (a group of 32) keeps its order across groups:
// 600 adds of 1 to one word find 0, 1, ..., 599 there.
TEST_P(CudaCopier, UpdateManyAppliesAListFromHostMemoryInOrder) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, GetParam(), &copier).ok()) << last_error();
  char* dev = nullptr;
  proxy::WordUpdate* list = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, 64), cudaSuccess);
  constexpr uint32_t kLong = 600;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&list), (9 + kLong) * sizeof(proxy::WordUpdate),
                          cudaHostAllocMapped),
            cudaSuccess);
  const auto op = [](ProxyAtomic a) { return static_cast<uint32_t>(a); };
  list[0] = {0, 40, 0, op(ProxyAtomic::kSet), 8};
  list[1] = {0, 2, 0, op(ProxyAtomic::kAdd), 8};  // after the set: 42
  list[2] = {12, 0xf0, 0, op(ProxyAtomic::kOr), 4};
  list[3] = {12, 0x0f, 0, op(ProxyAtomic::kXor), 4};
  list[4] = {16, 0x8000000000000001ull, 0, op(ProxyAtomic::kAdd), 8};
  list[5] = {16, 0x8000000000000001ull, 0, op(ProxyAtomic::kAdd), 8};  // wraps to 2
  ASSERT_TRUE(copier->update_many(dev, list, 6, nullptr).ok());
  // The fetching form: the old values in host memory, in order (a compare-swap that holds, one
  // that does not, a load).
  uint64_t* old = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&old), 3 * 8, cudaHostAllocMapped), cudaSuccess);
  proxy::WordUpdate* cas = list + 6;
  cas[0] = {24, 7, 0, op(ProxyAtomic::kCompareSwap), 8};  // 0 -> 7
  cas[1] = {24, 9, 0, op(ProxyAtomic::kCompareSwap), 8};  // stays 7
  cas[2] = {24, 0, 0, op(ProxyAtomic::kLoad), 8};
  ASSERT_TRUE(copier->update_many(dev, cas, 3, old).ok());
  uint64_t* counted = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&counted), kLong * 8, cudaHostAllocMapped),
            cudaSuccess);
  proxy::WordUpdate* adds = list + 9;
  for (uint32_t i = 0; i < kLong; ++i) adds[i] = {32, 1, 0, op(ProxyAtomic::kAdd), 8};
  ASSERT_TRUE(copier->update_many(dev, adds, kLong, counted).ok());
  ASSERT_TRUE(copier->mark(3).ok());
  std::vector<uint64_t> done;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done.empty() && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
  ASSERT_EQ(done, (std::vector<uint64_t>{3}));
  uint64_t words[5];
  ASSERT_EQ(cudaMemcpy(words, dev, sizeof(words), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(words[0], 42u);
  EXPECT_EQ(words[1], 0xffull << 32);  // 0xf0 | then ^ 0x0f in the high half; the low untouched
  EXPECT_EQ(words[2], 2u);
  EXPECT_EQ(old[0], 0u);
  EXPECT_EQ(old[1], 7u);
  EXPECT_EQ(old[2], 7u);
  EXPECT_EQ(words[4], kLong);
  for (uint32_t i = 0; i < kLong; ++i) ASSERT_EQ(counted[i], i) << "add " << i << " of the list";
  cudaFreeHost(counted);
  cudaFreeHost(old);
  cudaFreeHost(list);
  cudaFree(dev);
}

// Fetching updates (the staged path's answers): each stores the word's old value, zero-extended,
// into pinned host memory in issue order, readable once a later marker completes.
TEST_P(CudaCopier, FetchingUpdatesStoreTheOldValueInHostMemory) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, GetParam(), &copier).ok()) << last_error();
  uint64_t* dev = nullptr;
  uint64_t* old = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 16), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, 16), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&old), 8 * 8, cudaHostAllocMapped), cudaSuccess);
  std::memset(old, 0xff, 8 * 8);
  auto* half = reinterpret_cast<uint32_t*>(dev + 1) + 1;  // the high half of the second word
  const uint64_t big = 0x8000000000000005ull;             // the top bit travels
  ASSERT_TRUE(copier->fetch_update(dev, ProxyAtomic::kAdd, 8, big, 0, old + 0).ok());
  ASSERT_TRUE(copier->fetch_update(dev, ProxyAtomic::kCompareSwap, 8, 9, 1, old + 1).ok());
  ASSERT_TRUE(copier->fetch_update(dev, ProxyAtomic::kCompareSwap, 8, 9, big, old + 2).ok());
  ASSERT_TRUE(copier->fetch_update(dev, ProxyAtomic::kSet, 8, 3, 0, old + 3).ok());
  ASSERT_TRUE(copier->fetch_update(dev, ProxyAtomic::kLoad, 8, 0, 0, old + 4).ok());
  ASSERT_TRUE(copier->fetch_update(half, ProxyAtomic::kOr, 4, 0xf0000000u, 0, old + 5).ok());
  ASSERT_TRUE(copier->fetch_update(half, ProxyAtomic::kXor, 4, 0x1u, 0, old + 6).ok());
  ASSERT_TRUE(copier->fetch_update(half, ProxyAtomic::kLoad, 4, 0, 0, old + 7).ok());
  ASSERT_TRUE(copier->mark(1).ok());
  std::vector<uint64_t> done;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done.empty() && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
  ASSERT_EQ(done, (std::vector<uint64_t>{1}));
  EXPECT_EQ(old[0], 0u);
  EXPECT_EQ(old[1], big);  // compare 1 fails: unchanged
  EXPECT_EQ(old[2], big);  // compare big holds: 9 stored
  EXPECT_EQ(old[3], 9u);
  EXPECT_EQ(old[4], 3u);
  EXPECT_EQ(old[5], 0u);
  EXPECT_EQ(old[6], 0xf0000000u);
  EXPECT_EQ(old[7], 0xf0000001u);  // zero-extended: no sign bits above
  uint64_t words[2];
  ASSERT_EQ(cudaMemcpy(words, dev, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(words[1], 0xf000000100000000ull);
  cudaFreeHost(old);
  cudaFree(dev);
}

/// Spins until `*flag` is set, at most `bound_ns` (globaltimer): a stream kept busy.
__global__ void busy_until(const volatile uint32_t* flag, uint64_t bound_ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*flag == 0 && now - start < bound_ns);
}

// While another thread copies into pageable memory behind a busy stream (CUDA waits for the
// stream inside that call, and meanwhile blocks event creation process-wide), the copier's
// updates and markers still complete: the proxy thread must not wait for the application's
// stream, whose kernels may be waiting for this copier. More markers than the copier has events:
// the rest wait for a free event and complete with it, in issue order.
TEST_P(CudaCopier, MarkersCompleteWhileAnotherThreadCopiesIntoPageableMemory) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, GetParam(), &copier).ok()) << last_error();
  uint32_t* flag = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flag), 4, cudaHostAllocMapped), cudaSuccess);
  *flag = 0;
  uint64_t* word = nullptr;
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&word, 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(word, 0, 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev, 1 << 20), cudaSuccess);
  cudaStream_t busy;
  ASSERT_EQ(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking), cudaSuccess);
  std::atomic<bool> copying{false}, copied{false};
  std::thread app([&] {
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    std::vector<char> pageable(1 << 20);
    busy_until<<<1, 1, 0, busy>>>(flag, 5'000'000'000ull);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    copying = true;
    EXPECT_EQ(cudaMemcpyAsync(pageable.data(), dev, pageable.size(), cudaMemcpyDeviceToHost, busy),
              cudaSuccess);
    copied = true;
  });
  while (!copying) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // inside the pageable copy
  constexpr uint64_t kMarks = 200;
  std::vector<uint64_t> done, want;
  // No ASSERT while the thread runs: its copy returns once the flag is set below.
  const Status issued = [&]() -> Status {
    // All before the first poll, which alone frees events: most markers wait for one.
    for (uint64_t t = 1; t <= kMarks; ++t) {
      GICL_CHECK(copier->update(word, ProxyAtomic::kAdd, 8, 1));
      GICL_CHECK(copier->mark(t));
      want.push_back(t);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (done.size() < kMarks && std::chrono::steady_clock::now() < until)
      GICL_CHECK(copier->poll(&done));
    return GICL_SUCCESS;
  }();
  const bool waited = copied.load();
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  app.join();
  ASSERT_TRUE(issued.ok()) << last_error();
  EXPECT_FALSE(waited) << "the markers waited for the application's stream";
  EXPECT_EQ(done, want);
  uint64_t w = 0;
  ASSERT_EQ(cudaMemcpy(&w, word, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(w, kMarks);
  cudaStreamDestroy(busy);
  cudaFree(dev);
  cudaFree(word);
  cudaFreeHost(flag);
}

// The copy agent runs small copies and updates while the stream has nothing outstanding; stream
// work after them waits for them on the GPU, and agent work after stream work waits for the
// stream's marker: overlapping writes land in issue order. An agent that left after its linger is
// launched again by the next task.
TEST(CudaCopierAgent, LanesKeepIssueOrderAndALeftAgentIsLaunchedAgain) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, std::chrono::microseconds(200), &copier).ok())
      << last_error();
  if (copier->agent() == nullptr) GTEST_SKIP() << "the driver has no 64-bit stream wait";
  const size_t big = 1 << 20, small = 4096;
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, big + 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, big + 64), cudaSuccess);
  char* host = nullptr;  // [a: small][b: big][c: 64][out: small]
  ASSERT_EQ(
      cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * small + big + 64, cudaHostAllocMapped),
      cudaSuccess);
  char *a = host, *b = a + small, *c = b + big, *out = c + 64;
  for (size_t i = 0; i < small; ++i) a[i] = static_cast<char>(i * 3 + 1);
  for (size_t i = 0; i < big; ++i) b[i] = static_cast<char>(i * 5 + (i >> 10));
  for (size_t i = 0; i < 64; ++i) c[i] = static_cast<char>(0xc0 + i);
  auto* word = reinterpret_cast<uint64_t*>(dev + big);
  std::vector<uint64_t> done;
  const auto wait_for = [&](size_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done.size() < n && std::chrono::steady_clock::now() < until)
      ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
  };
  // The agent: a small copy and a signal after it, one task.
  ASSERT_TRUE(copier->to_device(dev, a, small).ok());
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 1).ok());
  ASSERT_TRUE(copier->mark(1).ok());
  EXPECT_EQ(copier->agent()->posted(), 1u);
  // The stream: a large copy over the same bytes, then an update queued behind it there.
  ASSERT_TRUE(copier->to_device(dev, b, big).ok());
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 10).ok());
  ASSERT_TRUE(copier->mark(2).ok());
  EXPECT_EQ(copier->agent()->posted(), 1u);
  ASSERT_NO_FATAL_FAILURE(wait_for(2));
  ASSERT_EQ(done, (std::vector<uint64_t>{1, 2}));
  // The agent again, over the large copy's first bytes: 16-byte aligned (a vector and a tail),
  // then unaligned; then read back by the agent: three tasks.
  ASSERT_TRUE(copier->to_device(dev, c, 19).ok());
  ASSERT_TRUE(copier->to_device(dev + 21, c + 32, 7).ok());
  ASSERT_TRUE(copier->to_host(out, dev, small).ok());
  ASSERT_TRUE(copier->mark(3).ok());
  EXPECT_EQ(copier->agent()->posted(), 4u);
  ASSERT_NO_FATAL_FAILURE(wait_for(3));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(std::memcmp(out, c, 19), 0);
  EXPECT_EQ(out[19], b[19]);
  EXPECT_EQ(out[20], b[20]);
  EXPECT_EQ(std::memcmp(out + 21, c + 32, 7), 0);
  EXPECT_EQ(std::memcmp(out + 28, b + 28, small - 28), 0);
  // Past its linger the agent has left; the next task launches another.
  const uint64_t launched = copier->agent()->launched();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 100).ok());
  ASSERT_TRUE(copier->mark(4).ok());
  ASSERT_NO_FATAL_FAILURE(wait_for(4));
  EXPECT_EQ(done, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_GT(copier->agent()->launched(), launched);
  uint64_t w = 0;
  ASSERT_EQ(cudaMemcpy(&w, word, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(w, 111u);
  cudaFreeHost(host);
  cudaFree(dev);
}

// Each task's lines carry its sequence, so a line the agent reads is that task's or is polled
// again: over several laps of the task ring every copy lands once with its own bytes, beside
// its neighbours' untouched bytes, and every signal counts once. A copy to the device of at most
// AgentTask::kInlineMax bytes travels inside its task: its staging bytes are overwritten as soon
// as it is issued (its task is posted only with the update after it), and the originals land.
TEST(CudaCopierAgent, TasksOverSeveralLapsOfItsRingLandOnceWithTheirOwnBytes) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, std::chrono::milliseconds(200), &copier).ok())
      << last_error();
  if (copier->agent() == nullptr) GTEST_SKIP() << "the driver has no 64-bit stream wait";
  constexpr uint32_t kCopies = 3 * proxy::CopyAgent::kTasks + 17, kStride = 16, kBatch = 32;
  char* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kCopies * kStride + 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, kCopies * kStride + 8), cudaSuccess);
  auto* word = reinterpret_cast<uint64_t*>(dev + kCopies * kStride);
  char* staging = nullptr;
  ASSERT_EQ(
      cudaHostAlloc(reinterpret_cast<void**>(&staging), kCopies * kStride, cudaHostAllocMapped),
      cudaSuccess);
  std::vector<char> want(kCopies * kStride, 0);
  const auto bytes_of = [](uint32_t i) { return 1 + i % 12; };  // 1-8 inline, 9-12 not
  std::vector<uint64_t> done;
  const auto wait_for = [&](size_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done.size() < n && std::chrono::steady_clock::now() < until)
      ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
    ASSERT_EQ(done.size(), n);
  };
  for (uint32_t i = 0; i < kCopies; ++i) {
    char* src = staging + i * kStride;
    for (uint32_t k = 0; k < bytes_of(i); ++k) {
      src[k] = static_cast<char>(i * 7 + k * 13 + 1);
      want[i * kStride + k] = src[k];
    }
    ASSERT_TRUE(copier->to_device(dev + i * kStride, src, bytes_of(i)).ok()) << last_error();
    if (bytes_of(i) <= proxy::AgentTask::kInlineMax) std::memset(src, 0x5a, bytes_of(i));
    ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 1).ok()) << last_error();
    ASSERT_TRUE(copier->mark(i + 1).ok()) << last_error();
    if ((i + 1) % kBatch == 0) ASSERT_NO_FATAL_FAILURE(wait_for(i + 1));
  }
  ASSERT_NO_FATAL_FAILURE(wait_for(kCopies));
  // One task for each copy and its signal: none fell back to the stream.
  EXPECT_EQ(copier->agent()->posted(), kCopies);
  std::vector<char> got(kCopies * kStride);
  ASSERT_EQ(cudaMemcpy(got.data(), dev, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint32_t i = 0; i < kCopies; ++i)
    ASSERT_EQ(std::memcmp(got.data() + i * kStride, want.data() + i * kStride, kStride), 0)
        << "copy " << i << " of " << bytes_of(i) << " bytes";
  uint64_t w = 0;
  ASSERT_EQ(cudaMemcpy(&w, word, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(w, kCopies);
  cudaFreeHost(staging);
  cudaFree(dev);
}

/// Holds its block's SM slots until `*flag` is set, at most `bound_ns`; thread 0 polls.
__global__ void occupy_until(const volatile uint32_t* flag, uint64_t bound_ns) {
  if (threadIdx.x == 0) {
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (*flag == 0 && now - start < bound_ns);
  }
  __syncthreads();
}

/// Every SM of the current device held by blocks of occupy_until until release() (at most
/// `bound_ns`), so that no other kernel of this process starts meanwhile.
struct HeldSms {
  explicit HeldSms(uint64_t bound_ns) {
    int sms = 0, per_sm = 0;
    if (cudaHostAlloc(reinterpret_cast<void**>(&flag), 4, cudaHostAllocMapped) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, occupy_until, 1024, 0) !=
            cudaSuccess ||
        per_sm == 0 || cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking) != cudaSuccess)
      return;
    *flag = 0;
    occupy_until<<<sms * per_sm, 1024, 0, busy>>>(flag, bound_ns);
    ok = cudaGetLastError() == cudaSuccess;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // every block resident
  }
  ~HeldSms() {
    release();
    if (busy != nullptr) {
      EXPECT_EQ(cudaStreamSynchronize(busy), cudaSuccess);
      cudaStreamDestroy(busy);
    }
    cudaFreeHost(flag);
  }
  void release() {
    if (flag != nullptr) __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  }
  bool ok = false;
  uint32_t* flag = nullptr;
  cudaStream_t busy = nullptr;
};

// A copy agent launched while every SM is full is reported as not started, not as an agent that
// runs and lost its task; once the SMs free up it runs the task, and while it lingers it is
// reported as polling. This is what a lost chunk's report says of its own rank's copier.
TEST(CudaCopierAgent, ItsStateTellsAnAgentWaitingForAnSmFromOneThatPolls) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, std::chrono::seconds(2), &copier).ok()) << last_error();
  if (copier->agent() == nullptr) GTEST_SKIP() << "the driver has no 64-bit stream wait";
  uint64_t* word = nullptr;
  ASSERT_EQ(cudaMalloc(&word, 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(word, 0, 8), cudaSuccess);
  HeldSms held(10'000'000'000ull);
  ASSERT_TRUE(held.ok);
  std::vector<uint64_t> done;
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 1).ok()) << last_error();
  ASSERT_TRUE(copier->mark(1).ok()) << last_error();
  const auto polls_for = [&](std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (done.empty() && std::chrono::steady_clock::now() < until)
      ASSERT_TRUE(copier->poll(&done).ok()) << last_error();
  };
  ASSERT_NO_FATAL_FAILURE(polls_for(std::chrono::milliseconds(100)));
  const std::string waiting = copier->state();
  const bool ran_early = !done.empty();
  held.release();
  ASSERT_FALSE(ran_early) << "the agent ran while every SM was held";
  EXPECT_NE(waiting.find("1 tasks posted, 0 done, generation 1 launched"), std::string::npos)
      << waiting;
  EXPECT_NE(waiting.find("not yet started on the GPU"), std::string::npos) << waiting;
  ASSERT_NO_FATAL_FAILURE(polls_for(std::chrono::seconds(10)));
  ASSERT_EQ(done, std::vector<uint64_t>{1});
  const std::string polling = copier->state();
  EXPECT_NE(polling.find("1 tasks posted, 1 done, generation 1 running, polling for its next task"),
            std::string::npos)
      << polling;
  uint64_t w = 0;
  ASSERT_EQ(cudaMemcpy(&w, word, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(w, 1u);
  cudaFree(word);
}

// Teardown of a copier whose agent cannot leave (it never got an SM) returns within the agent's
// stop bound instead of waiting for the GPU, and leaves the agent's memory to it: once the SMs
// free up, the agent starts, sees the stop and leaves without a fault.
TEST(CudaCopierAgent, AnAgentThatCannotLeaveIsLeftBehindWithinItsBound) {
  REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::unique_ptr<proxy::CudaCopier> copier;
  ASSERT_TRUE(proxy::CudaCopier::create(0, std::chrono::milliseconds(500), &copier).ok())
      << last_error();
  if (copier->agent() == nullptr) GTEST_SKIP() << "the driver has no 64-bit stream wait";
  uint64_t* word = nullptr;
  ASSERT_EQ(cudaMalloc(&word, 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(word, 0, 8), cudaSuccess);
  HeldSms held(20'000'000'000ull);
  ASSERT_TRUE(held.ok);
  ASSERT_TRUE(copier->update(word, ProxyAtomic::kAdd, 8, 1).ok()) << last_error();
  ASSERT_TRUE(copier->mark(1).ok()) << last_error();
  const bool started = copier->agent()->started() != 0;
  const auto t0 = std::chrono::steady_clock::now();
  copier.reset();  // the agent's stop gives up after kStopWait and leaves its memory allocated
  const auto took = std::chrono::steady_clock::now() - t0;
  held.release();
  EXPECT_FALSE(started) << "the agent started while every SM was held";
  EXPECT_LT(took, proxy::CopyAgent::kStopWait + std::chrono::seconds(1));
  EXPECT_GE(took, proxy::CopyAgent::kStopWait);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the agent ran, saw the stop, and left
  cudaFree(word);
}

}  // namespace
}  // namespace gicl::test
