// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/acceptor.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.hpp"

namespace gicl::bootstrap {

namespace {
/// Handshakes in progress at most: at least this, and twice the job's rank count where it is
/// known, since every rank may be mid-handshake with one acceptor at once (each waits a round
/// trip for its challenge).
constexpr size_t kMinPending = 1024;
}  // namespace

Acceptor::Acceptor(int listen_fd, const uint8_t* secret, const uint8_t* job, MsgType type,
                   int nranks)
    : listen_fd_(listen_fd), type_(type), nranks_(nranks) {
  std::memcpy(secret_, secret, kSecretBytes);
  std::memcpy(job_, job, kJobBytes);
  expect_ranks(nranks);
}

void Acceptor::expect_ranks(int nranks) {
  max_pending_ = std::max(kMinPending, 2 * static_cast<size_t>(std::max(nranks, 0)));
}

Acceptor::~Acceptor() {
  for (auto& p : pending_) ::close(p.fd);
}

void Acceptor::reject(size_t index, const char* why) {
  GICL_INFO(kSubsysBootstrap, "bootstrap: dropped a connection: %s", why);
  ::close(pending_[index].fd);
  pending_.erase(pending_.begin() + static_cast<long>(index));
  ++rejected_;
}

bool Acceptor::challenge(size_t i) {
  Pending& p = pending_[i];
  Challenge c;
  if (!auth_nonce(c.nonce).ok() ||
      !auth_mac(secret_, AuthRole::kServer, type_, job_, p.hello, c.nonce, c.mac).ok())
    return reject(i, "no nonce or MAC for the challenge"), false;
  WireHeader h{static_cast<uint32_t>(MsgType::kChallenge), 0, sizeof(Challenge)};
  unsigned char out[sizeof(h) + sizeof(c)];
  std::memcpy(out, &h, sizeof(h));
  std::memcpy(out + sizeof(h), &c, sizeof(c));
  // 64 bytes into a new connection's empty send buffer: all of it or a broken connection.
  if (::send(p.fd, out, sizeof(out), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(sizeof(out)))
    return reject(i, "cannot send the challenge"), false;
  std::memcpy(p.nonce, c.nonce, kNonceBytes);
  p.challenged = true;
  p.got = 0;
  return true;
}

bool Acceptor::advance(size_t i, int* fd, Hello* hello) {
  Pending& p = pending_[i];
  for (;;) {
    // The hello, then (after the challenge) the proof: each a header and a fixed-size body.
    const size_t want = sizeof(WireHeader) + (p.challenged ? sizeof(Proof) : sizeof(Hello));
    ssize_t k = ::recv(p.fd, p.buf + p.got, want - p.got, 0);
    if (k > 0) {
      p.got += static_cast<size_t>(k);
      // Validate the header as soon as it is complete, before waiting for more bytes.
      if (p.got >= sizeof(WireHeader)) {
        WireHeader h;
        std::memcpy(&h, p.buf, sizeof(h));
        const bool ok =
            p.challenged
                ? h.type == static_cast<uint32_t>(MsgType::kProof) && h.length == sizeof(Proof)
                : h.type == static_cast<uint32_t>(type_) && h.length == sizeof(Hello);
        if (!ok) {
          reject(i, p.challenged ? "not a proof after the challenge"
                                 : "not a hello of the expected type and length");
          return false;
        }
      }
      if (p.got < want) continue;
      if (!p.challenged) {
        WireHeader hdr;
        std::memcpy(&hdr, p.buf, sizeof(hdr));
        std::memcpy(&p.hello, p.buf + sizeof(WireHeader), sizeof(Hello));
        if (const char* why = hello_problem(hdr, p.hello, type_, nranks_)) {
          reject(i, why);
          return false;
        }
        if (!challenge(i)) return false;
        continue;
      }
      Proof proof;
      std::memcpy(&proof, p.buf + sizeof(WireHeader), sizeof(proof));
      if (!auth_check(secret_, AuthRole::kClient, type_, job_, p.hello, p.nonce, proof.mac))
        return reject(i, "wrong proof: the client does not hold this job's secret"), false;
      *fd = p.fd;
      *hello = p.hello;
      pending_.erase(pending_.begin() + static_cast<long>(i));
      return true;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (k < 0 && errno == EINTR) continue;
    reject(i, k == 0 ? "closed before its hello" : "read error");
    return false;
  }
}

void Acceptor::out_of_descriptors(int err) {
  for (size_t k = 0; k < pending_.size(); ++k)
    if (pending_[k].got == 0) {
      reject(k, "out of file descriptors: the oldest silent connection goes");
      break;
    }
  if (backoff_.count() == 0)
    GICL_WARN(kSubsysBootstrap,
              "bootstrap: accept: %s; accepting again after pauses of up to 100 ms (raise "
              "'ulimit -n')",
              std::strerror(err));
  backoff_ = std::min(std::chrono::milliseconds(100),
                      std::max(std::chrono::milliseconds(1), backoff_ * 2));
  listen_again_ = Clock::now() + backoff_;
}

Status Acceptor::accept_one(Deadline deadline, const CancelFlag* cancel, int* fd, Hello* hello,
                            std::vector<ClientHandshake>* clients,
                            const std::vector<int>* watched) {
  std::vector<pollfd> fds;
  std::vector<size_t> client_of;  // fds[pending_.size() + 1 + k] is (*clients)[client_of[k]]
  for (;;) {
    if (cancelled(cancel)) return GICL_FAIL(GICL_ABORTED, "aborted while accepting connections");
    // Expire connections that have not said hello in time.
    const auto now = Clock::now();
    for (size_t i = pending_.size(); i-- > 0;) {
      if (now - pending_[i].started > std::chrono::milliseconds(kHelloTimeoutMs))
        reject(i, "no hello within the hello timeout");
    }
    fds.clear();
    // A negative fd is left out by poll: the listener, while out of descriptors.
    const bool listening = now >= listen_again_;
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});
    for (auto& p : pending_) fds.push_back({p.fd, POLLIN, 0});
    const size_t first_client = fds.size();
    client_of.clear();
    if (clients != nullptr)
      for (size_t k = 0; k < clients->size(); ++k) {
        fds.push_back({(*clients)[k].fd(), (*clients)[k].done() ? POLLRDHUP : POLLIN, 0});
        client_of.push_back(k);
      }
    const size_t first_watched = fds.size();
    if (watched != nullptr)
      for (int w : *watched) fds.push_back({w, POLLRDHUP, 0});
    const int wait = listening ? 50 : std::clamp<int>(static_cast<int>(backoff_.count()), 1, 50);
    int n = ::poll(fds.data(), fds.size(), deadline.poll_ms(wait));
    if (n < 0 && errno != EINTR) GICL_SYSCHECK(-1, "poll");
    if (n > 0) {
      constexpr short kHangUp = POLLRDHUP | POLLHUP | POLLERR;
      for (size_t k = 0; k < client_of.size(); ++k) {
        ClientHandshake& c = (*clients)[client_of[k]];
        const short ev = fds[first_client + k].revents;
        if (ev == 0) continue;
        if (!c.done()) {
          GICL_CHECK(c.progress(deadline, cancel));
        } else if (ev & kHangUp) {
          *fd = c.fd();
          return GICL_FAIL(GICL_REMOTE_ERROR,
                           "%s closed its connection during the bootstrap (its process ended)",
                           c.peer().c_str());
        }
      }
      for (size_t k = first_watched; k < fds.size(); ++k)
        if (fds[k].revents & kHangUp) {
          *fd = fds[k].fd;
          return Status(GICL_REMOTE_ERROR);  // the caller knows whose it is and says so
        }
      // Pending connections next: indices shift when one completes or is rejected.
      for (size_t i = first_client - 1; i >= 1; --i) {
        if (fds[i].revents == 0) continue;
        if (advance(i - 1, fd, hello)) return GICL_SUCCESS;
      }
      if (fds[0].revents & POLLIN) {
        for (;;) {
          int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) {
            if (errno == EMFILE || errno == ENFILE) out_of_descriptors(errno);
            break;
          }
          backoff_ = std::chrono::milliseconds(0);
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          if (pending_.size() >= max_pending_) {
            // Full: drop the oldest connection that has sent nothing (a scan or a squatter),
            // else the oldest not yet challenged; one waiting for its proof is more likely a rank.
            size_t victim = pending_.size();
            for (size_t k = 0; k < pending_.size() && victim == pending_.size(); ++k)
              if (pending_[k].got == 0 && !pending_[k].challenged) victim = k;
            for (size_t k = 0; k < pending_.size() && victim == pending_.size(); ++k)
              if (!pending_[k].challenged) victim = k;
            reject(victim == pending_.size() ? 0 : victim, "too many half-open connections");
          }
          pending_.push_back({c, Clock::now(), 0, {}});
        }
      }
    }
    if (deadline.expired()) return GICL_FAIL(GICL_TIMEOUT, "timed out waiting for connections");
  }
}

}  // namespace gicl::bootstrap
