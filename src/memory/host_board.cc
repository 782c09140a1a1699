// SPDX-License-Identifier: Apache-2.0
#include "memory/host_board.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/log.hpp"
#include "common/rank_list.hpp"

namespace gicl {
namespace {

constexpr uint32_t kBoardVersion = 1;

struct BoardHeader {
  uint32_t version;
  uint32_t nranks;
  uint8_t pad[56];
};
static_assert(sizeof(BoardHeader) == 64);

/// One rank's block of one call parity. `seq` is raised last (release) and read first
/// (acquire): it orders the writer's block and byte count before any reader's copy of them.
struct BoardSlot {
  uint64_t seq;    // the call whose block this is (0: none yet)
  uint64_t bytes;  // the block's size, compared by the readers
  uint8_t pad[48];
  uint8_t data[HostBoard::kBlockBytes];
};
static_assert(sizeof(BoardSlot) == 256);
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free, "seq words are shared by processes");

BoardSlot* slot(void* map, int nranks, uint64_t seq, int rank) {
  // Two parities: a rank can be at most one call ahead of the slowest reader (it finished the
  // previous call only once every rank had written it, so every rank had read the one before).
  auto* base = reinterpret_cast<BoardSlot*>(static_cast<char*>(map) + sizeof(BoardHeader));
  return base + (seq & 1) * nranks + rank;
}

uint64_t load_seq(const BoardSlot* s) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(s->seq)).load(std::memory_order_acquire);
}

void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

size_t HostBoard::mapping_bytes(int nranks) {
  const size_t raw = sizeof(BoardHeader) + 2 * static_cast<size_t>(nranks) * sizeof(BoardSlot);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (raw + page - 1) / page * page;
}

Status HostBoard::create(const Config& cfg, bootstrap::Bootstrap* bs, FdChannel* channel,
                         std::unique_ptr<HostBoard>* out) {
  std::unique_ptr<HostBoard> b(new HostBoard());
  b->cfg_ = cfg;
  b->nranks_ = static_cast<int>(cfg.pids.size());
  b->map_bytes_ = mapping_bytes(b->nranks_);
  const size_t bytes = b->map_bytes_;
  int fd = -1;
  // 1. Rank 0 makes the memory; every rank learns whether it could before anyone waits for it.
  Status local = [&]() -> Status {
    if (cfg.rank != 0) return GICL_SUCCESS;
    fd = ::memfd_create("gicl-host-board", MFD_CLOEXEC);
    GICL_SYSCHECK(fd, "memfd_create (host board)");
    GICL_SYSCHECK(::ftruncate(fd, static_cast<off_t>(bytes)), "ftruncate (host board)");
    return GICL_SUCCESS;
  }();
  Status s = bs->agree(local, "create the host board");
  if (!s.ok()) {
    if (fd >= 0) ::close(fd);
    return s;
  }
  // 2. Rank 0 hands it to every peer; each maps it.
  const Deadline d = Deadline::after_ms(cfg.timeout_ms);
  local = [&]() -> Status {
    if (cfg.rank == 0) {
      for (int r = 1; r < b->nranks_; ++r)
        GICL_CHECK(
            channel->send_fd(r, {kFdMessageVersion, kFdHostBoard, 0, 0, bytes}, fd, d, cfg.cancel));
    } else {
      FdMessage m{};
      GICL_CHECK(channel->recv_fd(0, &m, &fd, d, cfg.cancel));
      if (m.kind != kFdHostBoard || m.size != bytes)
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "rank 0 sent a host board of %llu bytes (kind %u), expected %zu",
                         static_cast<unsigned long long>(m.size), m.kind, bytes);
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      return GICL_FAIL(GICL_SYSTEM_ERROR, "mmap (host board) failed: %s", std::strerror(errno));
    b->map_ = p;
    auto* h = static_cast<BoardHeader*>(p);
    if (cfg.rank == 0) *h = {kBoardVersion, static_cast<uint32_t>(b->nranks_), {}};
    return GICL_SUCCESS;
  }();
  if (fd >= 0) ::close(fd);  // the mapping keeps the memory
  // The header is read only after this agreement: rank 0 wrote it before agreeing.
  GICL_CHECK(bs->agree(local, "map the host board"));
  const auto* h = static_cast<const BoardHeader*>(b->map_);
  if (h->version != kBoardVersion || h->nranks != static_cast<uint32_t>(b->nranks_))
    return GICL_FAIL(GICL_REMOTE_ERROR, "host board of version %u for %u ranks, expected %u for %d",
                     h->version, h->nranks, kBoardVersion, b->nranks_);
  *out = std::move(b);
  return GICL_SUCCESS;
}

HostBoard::~HostBoard() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

Status HostBoard::allgather(void* data, size_t bytes) {
  if (bytes > kBlockBytes)
    return GICL_FAIL(GICL_INTERNAL_ERROR, "host board blocks hold %zu bytes, not %zu", kBlockBytes,
                     bytes);
  const uint64_t seq = ++calls_;
  auto* out = static_cast<char*>(data);
  BoardSlot* mine = slot(map_, nranks_, seq, cfg_.rank);
  if (bytes > 0) std::memcpy(mine->data, out + cfg_.rank * bytes, bytes);  // data may be null
  mine->bytes = bytes;
  // Publish: the block and its size before the sequence word the readers poll.
  std::atomic_ref<uint64_t>(mine->seq).store(seq, std::memory_order_release);
  GICL_CHECK(wait_all(seq));
  for (int r = 0; r < nranks_; ++r) {
    if (r == cfg_.rank) continue;
    const BoardSlot* s = slot(map_, nranks_, seq, r);
    if (s->bytes != bytes)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "host exchange #%llu: rank %d put %llu bytes, rank %d %zu (the ranks are "
                       "not making the same call)",
                       static_cast<unsigned long long>(seq), r,
                       static_cast<unsigned long long>(s->bytes), cfg_.rank, bytes);
    if (bytes > 0) std::memcpy(out + r * bytes, s->data, bytes);
  }
  return GICL_SUCCESS;
}

Status HostBoard::wait_all(uint64_t seq) {
  const Clock::time_point start = Clock::now();
  const Deadline deadline = Deadline::after_ms(cfg_.timeout_ms);
  Clock::time_point next_liveness = start + std::chrono::milliseconds(100);
  int from = 0;  // ranks below have arrived
  for (uint64_t poll = 0;; ++poll) {
    while (from < nranks_ && load_seq(slot(map_, nranks_, seq, from)) == seq) ++from;
    if (from == nranks_) return GICL_SUCCESS;
    // Spin first (a peer a few microseconds behind), then yield the core (ranks may outnumber
    // cores), then sleep (a peer far behind is not helped by this rank burning a core).
    if (poll < 1024) {
      cpu_relax();
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (now - start < std::chrono::milliseconds(20))
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (cancelled(cfg_.cancel))
      return GICL_FAIL(GICL_ABORTED, "aborted in host exchange #%llu",
                       static_cast<unsigned long long>(seq));
    if (now < next_liveness && !deadline.expired()) continue;
    next_liveness = now + std::chrono::milliseconds(100);
    std::vector<int> missing;
    for (int r = from; r < nranks_; ++r)
      if (load_seq(slot(map_, nranks_, seq, r)) != seq) missing.push_back(r);
    for (int r : missing)
      if (cfg_.pids[r] > 0 && ::kill(cfg_.pids[r], 0) == -1 && errno == ESRCH)
        return GICL_FAIL(GICL_REMOTE_ERROR,
                         "rank %d: rank %d (pid %d) exited before host exchange #%llu", cfg_.rank,
                         r, static_cast<int>(cfg_.pids[r]), static_cast<unsigned long long>(seq));
    if (deadline.expired() && !missing.empty())
      return GICL_FAIL(
          GICL_TIMEOUT, "rank %d: %s %s did not reach host exchange #%llu within %lld ms",
          cfg_.rank, missing.size() == 1 ? "rank" : "ranks", rank_list(missing).c_str(),
          static_cast<unsigned long long>(seq), static_cast<long long>(cfg_.timeout_ms));
  }
}

}  // namespace gicl
