// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/bootstrap.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "bootstrap/acceptor.hpp"
#include "common/log.hpp"

namespace gicl::bootstrap {

namespace {

Hello make_hello(int rank, int nranks, const SockAddr& listen) {
  Hello h{};
  h.version = kWireVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.listen_addr = to_wire(listen);
  return h;
}

}  // namespace

Status Bootstrap::create(const UniqueIdData& id, int rank, int nranks, const CancelFlag* cancel,
                         int64_t timeout_ms, std::unique_ptr<Bootstrap>* out) {
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->timeout_ms_ = timeout_ms;
  b->cancel_ = cancel;
  std::memcpy(b->secret_, id.secret, kSecretBytes);
  std::memcpy(b->job_, id.job, kJobBytes);

  SockAddr root;
  if (id.version != kWireVersion || !from_wire(id.root, &root))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "id is not a unique id made by gicl_get_unique_id of this gicl version");
  SockAddr local, bound;
  std::string ifname;
  GICL_CHECK(find_interface_address(&local, &ifname));
  GICL_CHECK(listen_on(local, 1024, &b->listen_fd_, &bound));
  b->acceptor_ =
      std::make_unique<Acceptor>(b->listen_fd_, b->secret_, b->job_, MsgType::kPeerHello, nranks);
  GICL_INFO(kSubsysBootstrap, "bootstrap: rank %d/%d listens on %s (%s), root %s", rank, nranks,
            bound.str().c_str(), ifname.c_str(), root.str().c_str());

  // Root round: our address in, everybody's addresses (or the reason for failing) out. A root
  // under a connection flood may drop us before it challenges our hello: then we connect again,
  // until the deadline. A root that fails authentication is not this job's: we fail at once.
  const Deadline deadline = Deadline::after_ms(timeout_ms + 5000);
  const Hello hello = make_hello(rank, nranks, bound);
  std::vector<WireAddr> table(nranks);
  for (;;) {
    int fd = -1;
    GICL_CHECK(connect_to(root, deadline, cancel, "the bootstrap root", &fd));
    WireHeader h{};
    ClientHandshake hs(fd, MsgType::kRootHello, b->secret_, b->job_, hello,
                       "the bootstrap root at " + root.str());
    Status s = hs.run(deadline, cancel);
    if (s.ok()) s = recv_all(fd, &h, sizeof(h), deadline, cancel, "the bootstrap root");
    if (s.code() == GICL_REMOTE_ERROR && !hs.challenged() && !deadline.expired()) {
      ::close(fd);
      GICL_INFO(kSubsysBootstrap, "rank %d: the bootstrap root dropped our connection; retrying",
                rank);
      ::usleep(10000);
      continue;
    }
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
    const bool refused = h.type == static_cast<uint32_t>(MsgType::kRootRefuse);
    const bool lost = h.type == static_cast<uint32_t>(MsgType::kRootLost);
    if ((refused || lost || h.type == static_cast<uint32_t>(MsgType::kRootAbort)) &&
        h.length <= kMaxAbortText) {
      std::string text(h.length, '\0');
      s = recv_all(fd, text.data(), text.size(), deadline, cancel, "the bootstrap root");
      ::close(fd);
      if (!s.ok()) return s;
      return GICL_FAIL(refused ? GICL_INVALID_USAGE
                       : lost  ? GICL_REMOTE_ERROR
                               : GICL_TIMEOUT,
                       "rank %d: bootstrap: %s", rank, text.c_str());
    }
    if (h.type != static_cast<uint32_t>(MsgType::kRootTable) ||
        h.length != static_cast<uint64_t>(nranks) * sizeof(WireAddr)) {
      ::close(fd);
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "rank %d: malformed reply from the bootstrap root (type %u, %llu bytes)",
                       rank, h.type, static_cast<unsigned long long>(h.length));
    }
    s = recv_all(fd, table.data(), h.length, deadline, cancel, "the bootstrap root");
    ::close(fd);
    GICL_CHECK(s);
    break;
  }
  b->peers_.resize(nranks);
  for (int r = 0; r < nranks; ++r) {
    if (!from_wire(table[r], &b->peers_[r]))
      return GICL_FAIL(GICL_REMOTE_ERROR, "bootstrap root sent an invalid address for rank %d", r);
  }
  b->out_fds_.assign(nranks, -1);
  b->in_.resize(nranks);
  Status s = b->connect_all();
  if (s.code() == GICL_REMOTE_ERROR) {
    // A peer ended. Every other rank finds that too (its connections close, connecting to it is
    // refused) within milliseconds, but it would name this rank instead if this rank's
    // connections closed first: they stay open a moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    // When more than one peer is gone, the failure seen first may be the consequence: a peer
    // that found another one ended fails and closes its connections, and this rank may see that
    // close first. Every peer gone by now is named, so the one that ended is among them.
    const std::vector<int> gone = b->closed_peers();
    if (gone.size() > 1) {
      std::string names;
      for (int p : gone) names += (names.empty() ? "" : ", ") + b->peer_name(p);
      const std::string first = last_error();
      s = GICL_FAIL(GICL_REMOTE_ERROR, "%s; the connections of these peers had closed by then: %s",
                    first.c_str(), names.c_str());
    }
  }
  GICL_CHECK(s);
  // Every connection the job needs is open: the listener goes, so that nothing connects late.
  b->acceptor_.reset();
  close_fd(&b->listen_fd_);
  *out = std::move(b);
  return GICL_SUCCESS;
}

Bootstrap::~Bootstrap() {
  for (int& fd : out_fds_) close_fd(&fd);
  for (auto& c : in_) close_fd(&c.fd);
  acceptor_.reset();
  close_fd(&listen_fd_);
}

void Bootstrap::shutdown() {
  for (int fd : out_fds_)
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  for (auto& c : in_)
    if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
}

Status Bootstrap::connect_all() {
  // Every rank connects out and sends its hellos first (a connect completes in the peer's
  // backlog, a hello fits the socket buffer), then serves its acceptor while advancing its own
  // handshakes in the same poll: each rank is a client and a server at once, so no rank waits
  // on another's order.
  const Deadline d = Deadline::after_ms(timeout_ms_);
  std::vector<ClientHandshake> clients;
  clients.reserve(static_cast<size_t>(nranks_));
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    const std::string name = peer_name(p);
    // Every rank listens before its hello reaches the root, so before the table is out.
    GICL_CHECK(connect_to(peers_[p], d, cancel_, name.c_str(), &out_fds_[p], true));
    clients.emplace_back(out_fds_[p], MsgType::kPeerHello, secret_, job_,
                         make_hello(rank_, nranks_, SockAddr{}), name);
    GICL_CHECK(clients.back().start(d, cancel_));
  }
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_) GICL_CHECK(in_conn(p, &clients));
  // Our incoming connections are complete; a peer still owes us a challenge only while it waits
  // for our proof, so it is still serving.
  for (ClientHandshake& c : clients) {
    while (!c.done()) {
      if (cancelled(cancel_)) return GICL_FAIL(GICL_ABORTED, "rank %d: aborted", rank_);
      pollfd p{c.fd(), POLLIN, 0};
      int n = ::poll(&p, 1, d.poll_ms());
      if (n < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
      if (n > 0) GICL_CHECK(c.progress(d, cancel_));
      if (!c.done() && d.expired())
        return GICL_FAIL(GICL_TIMEOUT, "rank %d: %s did not answer our hello within %lld ms", rank_,
                         c.peer().c_str(), static_cast<long long>(timeout_ms_));
    }
  }
  return GICL_SUCCESS;
}

std::vector<std::pair<int, int>> Bootstrap::connections() const {
  std::vector<std::pair<int, int>> out;
  for (int p = 0; p < nranks_; ++p) {
    if (p < static_cast<int>(out_fds_.size()) && out_fds_[p] >= 0) out.push_back({out_fds_[p], p});
    if (p < static_cast<int>(in_.size()) && in_[p].fd >= 0) out.push_back({in_[p].fd, p});
  }
  return out;
}

std::vector<int> Bootstrap::closed_peers() const {
  std::vector<int> out;
  for (int p = 0; p < nranks_; ++p) {
    bool gone = false;
    for (int fd : {p < static_cast<int>(out_fds_.size()) ? out_fds_[p] : -1,
                   p < static_cast<int>(in_.size()) ? in_[p].fd : -1}) {
      if (fd < 0) continue;
      pollfd q{fd, POLLRDHUP, 0};
      gone = gone || (::poll(&q, 1, 0) > 0 && (q.revents & (POLLRDHUP | POLLHUP | POLLERR)));
    }
    if (gone) out.push_back(p);
  }
  return out;
}

std::string Bootstrap::peer_name(int peer) const {
  return "rank " + std::to_string(peer);
}

Status Bootstrap::out_conn(int peer, int* fd) {
  if (out_fds_[peer] < 0)
    return GICL_FAIL(GICL_INTERNAL_ERROR, "rank %d: no connection to rank %d", rank_, peer);
  *fd = out_fds_[peer];
  return GICL_SUCCESS;
}

Status Bootstrap::in_conn(int peer, std::vector<ClientHandshake>* clients) {
  const Deadline d = Deadline::after_ms(timeout_ms_);
  while (in_[peer].fd < 0) {
    if (acceptor_ == nullptr)
      return GICL_FAIL(GICL_INTERNAL_ERROR, "rank %d: no connection from rank %d", rank_, peer);
    int fd = -1;
    Hello hello{};
    Status s = acceptor_->accept_one(d, cancel_, &fd, &hello, clients);
    if (s.code() == GICL_TIMEOUT)
      return GICL_FAIL(GICL_TIMEOUT, "rank %d: rank %d did not connect within %lld ms", rank_, peer,
                       static_cast<long long>(timeout_ms_));
    GICL_CHECK(s);
    if (in_[hello.rank].fd >= 0) {
      GICL_WARN(kSubsysBootstrap, "rank %d: second connection claiming rank %d dropped", rank_,
                hello.rank);
      ::close(fd);
      continue;
    }
    in_[hello.rank].fd = fd;
  }
  return GICL_SUCCESS;
}

Status Bootstrap::pump(int peer) {
  InConn& c = in_[peer];
  char buf[65536];
  while (!c.closed) {
    ssize_t k = ::recv(c.fd, buf, sizeof(buf), 0);
    if (k > 0) {
      c.rx.insert(c.rx.end(), buf, buf + k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (k < 0 && errno == EINTR) continue;
    // A peer that sent its last message and exited is not an error until we need more from it.
    c.closed = true;
  }
  const std::string from = "rank " + std::to_string(rank_) + ": rank " + std::to_string(peer);
  return take_messages(&c.rx, &c.ready, from.c_str());
}

bool Bootstrap::take(int peer, uint32_t tag, WireMessage* m) {
  auto& q = in_[peer].ready;
  for (auto it = q.begin(); it != q.end(); ++it) {
    if (it->tag == tag) {
      *m = std::move(*it);
      q.erase(it);
      return true;
    }
  }
  return false;
}

Status Bootstrap::exchange(int to, uint32_t tag, const void* sdata, size_t sbytes, int from,
                           void* rdata, size_t rbytes) {
  if (cancelled(cancel_)) return GICL_FAIL(GICL_ABORTED, "rank %d: aborted", rank_);
  const bool do_send = to >= 0, do_recv = from >= 0;
  if (do_send && sbytes > kMaxMessageBytes)
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "bootstrap message of %zu bytes exceeds the limit",
                     sbytes);
  int ofd = -1;
  if (do_send) GICL_CHECK(out_conn(to, &ofd));
  if (do_recv) GICL_CHECK(in_conn(from));
  std::vector<char> tx;
  if (do_send) {
    WireHeader h{static_cast<uint32_t>(MsgType::kData), tag, sbytes};
    tx.resize(sizeof(h) + sbytes);
    std::memcpy(tx.data(), &h, sizeof(h));
    if (sbytes) std::memcpy(tx.data() + sizeof(h), sdata, sbytes);
  }
  size_t sent = 0;
  bool received = !do_recv;
  const Deadline d = Deadline::after_ms(timeout_ms_);
  for (;;) {
    while (sent < tx.size()) {
      ssize_t k = ::send(ofd, tx.data() + sent, tx.size() - sent, MSG_NOSIGNAL);
      if (k > 0) {
        sent += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (cancelled(cancel_)) return GICL_FAIL(GICL_ABORTED, "rank %d: aborted", rank_);
      return GICL_FAIL(GICL_REMOTE_ERROR, "rank %d: sending to rank %d failed: %s", rank_, to,
                       strerror(errno));
    }
    if (!received) {
      WireMessage m;
      if (take(from, tag, &m)) {
        if (m.payload.size() != rbytes)
          return GICL_FAIL(GICL_REMOTE_ERROR,
                           "rank %d: rank %d sent %zu bytes with tag %u, expected %zu (mismatched "
                           "calls?)",
                           rank_, from, m.payload.size(), tag, rbytes);
        if (rbytes) std::memcpy(rdata, m.payload.data(), rbytes);
        received = true;
      }
    }
    if (sent == tx.size() && received) return GICL_SUCCESS;
    if (cancelled(cancel_)) return GICL_FAIL(GICL_ABORTED, "rank %d: aborted", rank_);
    if (!received && in_[from].closed)
      return GICL_FAIL(GICL_REMOTE_ERROR,
                       "rank %d: rank %d closed its connection before sending tag %u (it exited "
                       "or aborted)",
                       rank_, from, tag);
    if (d.expired()) {
      if (!received)
        return GICL_FAIL(GICL_TIMEOUT, "rank %d: no message from rank %d (tag %u) within %lld ms",
                         rank_, from, tag, static_cast<long long>(timeout_ms_));
      return GICL_FAIL(GICL_TIMEOUT, "rank %d: rank %d did not take our message within %lld ms",
                       rank_, to, static_cast<long long>(timeout_ms_));
    }
    pollfd p[2];
    int n = 0;
    if (sent < tx.size()) p[n++] = {ofd, POLLOUT, 0};
    if (!received) p[n++] = {in_[from].fd, POLLIN, 0};
    int rc = ::poll(p, n, d.poll_ms());
    if (rc < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
    if (!received) GICL_CHECK(pump(from));
  }
}

Status Bootstrap::send(int peer, uint32_t tag, const void* data, size_t bytes) {
  return exchange(peer, tag, data, bytes, -1, nullptr, 0);
}

Status Bootstrap::recv(int peer, uint32_t tag, void* data, size_t bytes) {
  return exchange(-1, tag, nullptr, 0, peer, data, bytes);
}

Status Bootstrap::allgather(void* data, size_t bytes) {
  char* base = static_cast<char*>(data);
  const int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
  // Step s forwards the block that originated s ranks behind us.
  for (int s = 0; s < nranks_ - 1; ++s) {
    const int send_block = (rank_ - s + nranks_) % nranks_;
    const int recv_block = (rank_ - s - 1 + nranks_) % nranks_;
    GICL_CHECK(exchange(next, kTagAllgather, base + send_block * bytes, bytes, prev,
                        base + recv_block * bytes, bytes));
  }
  return GICL_SUCCESS;
}

Status Bootstrap::broadcast(void* data, size_t bytes, int root) {
  if (rank_ == root) {
    for (int r = 0; r < nranks_; ++r)
      if (r != root) GICL_CHECK(send(r, kTagBroadcast, data, bytes));
    return GICL_SUCCESS;
  }
  return recv(root, kTagBroadcast, data, bytes);
}

Status Bootstrap::agree(Status local, const char* what) {
  std::vector<int32_t> codes(nranks_);
  codes[rank_] = local.code();
  GICL_CHECK(allgather(codes.data(), sizeof(int32_t)));
  if (!local.ok()) return local;
  for (int r = 0; r < nranks_; ++r)
    if (codes[r] != GICL_SUCCESS)
      return GICL_FAIL(GICL_REMOTE_ERROR, "rank %d failed to %s (%s)", r, what,
                       gicl_get_error_string(static_cast<gicl_result_t>(codes[r])));
  return GICL_SUCCESS;
}

Status Bootstrap::barrier() {
  for (int dist = 1; dist < nranks_; dist <<= 1) {
    GICL_CHECK(exchange((rank_ + dist) % nranks_, kTagBarrier, nullptr, 0,
                        (rank_ - dist + nranks_) % nranks_, nullptr, 0));
  }
  return GICL_SUCCESS;
}

}  // namespace gicl::bootstrap
