// SPDX-License-Identifier: Apache-2.0
// gicl-run -n N [--] prog args: starts N local ranks with the launcher environment (GICL_RANK,
// GICL_WORLD_SIZE, GICL_LOCAL_RANK, GICL_ROOT_ADDR, GICL_BOOTSTRAP_SECRET), prefixes every output
// line with its rank, stops all ranks when one fails, and exits with the first failing code.
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "common/settings.hpp"

namespace {

struct Rank {
  pid_t pid = -1;
  int out = -1;  // read end of the rank's stdout+stderr pipe
  std::string partial;
  bool exited = false;
  int code = 0;
};

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
}

int usage(FILE* out, int code) {
  std::fprintf(
      out,
      "usage: gicl-run [-h] -n N [--timeout SECONDS] [--] program [args...]\n"
      "Starts N ranks of `program` on this machine, each with the launcher environment\n"
      "(GICL_RANK, GICL_WORLD_SIZE, GICL_LOCAL_RANK, GICL_ROOT_ADDR,\n"
      "GICL_BOOTSTRAP_SECRET, and to rank 0 the root's listening socket as\n"
      "GICL_BOOTSTRAP_ROOT_FD; CUDA_DEVICE_MAX_CONNECTIONS=8 unless set), prefixes each\n"
      "output line with its rank, stops every rank when one fails and exits with the first\n"
      "failing code.\n"
      "  -n, --np N          ranks to start (1..4096)\n"
      "  -t, --timeout SEC   stop every rank after SEC seconds (exit 124)\n"
      "  -h, --help          this text\n"
      "For several nodes use torchrun, mpirun or srun: gicl reads their variables\n"
      "(docs/launching.md).\n");
  return code;
}

/// A loopback port for rank 0's bootstrap root, held for the launch by a socket bound with
/// SO_REUSEADDR and never listening (`*holder`, close-on-exec): rank 0 (SO_REUSEADDR) can still
/// listen on it, while no other bind, and no outgoing connection's local port, can take it in
/// between. Closing the probe right away let a rank's own connections draw the port first
/// ("cannot listen on 127.0.0.1:...: Address already in use", seen once on the GPU machine).
// The bootstrap root's listening socket, made here and handed to rank 0 (GICL_BOOTSTRAP_ROOT_FD):
// the port is listening before any rank starts, so no other process can take it first.
int root_listener(int* fd) {
  *fd = -1;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(s, 1024) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(s);
    return -1;
  }
  *fd = s;
  return ntohs(a.sin_port);
}

void flush_lines(int rank, Rank& r, bool all) {
  size_t pos;
  while ((pos = r.partial.find('\n')) != std::string::npos) {
    std::printf("[%d] %s\n", rank, r.partial.substr(0, pos).c_str());
    r.partial.erase(0, pos + 1);
  }
  if (all && !r.partial.empty()) {
    std::printf("[%d] %s\n", rank, r.partial.c_str());
    r.partial.clear();
  }
  std::fflush(stdout);
}

void signal_all(std::vector<Rank>& ranks, int sig) {
  for (auto& r : ranks)
    if (!r.exited && r.pid > 0) kill(-r.pid, sig);  // the rank's whole process group
}

}  // namespace

int main(int argc, char** argv) {
  int n = -1;
  double timeout_s = 0;
  // '+': options end at the program's name, whose own flags are its own.
  static const option kLong[] = {{"help", no_argument, nullptr, 'h'},
                                 {"np", required_argument, nullptr, 'n'},
                                 {"timeout", required_argument, nullptr, 't'},
                                 {nullptr, 0, nullptr, 0}};
  for (int c; (c = getopt_long(argc, argv, "+hn:t:", kLong, nullptr)) != -1;) {
    int64_t v = 0;
    switch (c) {
      case 'h':
        return usage(stdout, 0);
      case 'n':
        if (!gicl::parse_int64(optarg, &v) || v < 1 || v > 4096) {
          std::fprintf(stderr, "gicl-run: -n '%s' must be a number of ranks in 1..4096\n", optarg);
          return 2;
        }
        n = static_cast<int>(v);
        break;
      case 't':
        if (!gicl::parse_int64(optarg, &v) || v < 1) {
          std::fprintf(stderr, "gicl-run: --timeout '%s' must be a whole number of seconds >= 1\n",
                       optarg);
          return 2;
        }
        timeout_s = static_cast<double>(v);
        break;
      default:
        return usage(stderr, 2);
    }
  }
  const int i = optind;
  if (n < 1) {
    std::fprintf(stderr, "gicl-run: -n N is required\n");
    return usage(stderr, 2);
  }
  if (i >= argc) {
    std::fprintf(stderr, "gicl-run: no program to run\n");
    return usage(stderr, 2);
  }
  char** prog = argv + i;

  int root_fd = -1;
  const int port = root_listener(&root_fd);
  uint8_t secret[16];
  if (port < 0 || !gicl::bootstrap::random_secret(secret).ok()) {
    std::fprintf(stderr, "gicl-run: cannot prepare the bootstrap (port or random source)\n");
    return 1;
  }
  char hex[33];
  for (int k = 0; k < 16; ++k) std::snprintf(hex + 2 * k, 3, "%02x", secret[k]);
  const std::string root = "127.0.0.1:" + std::to_string(port);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return std::perror("gicl-run: pipe"), 1;
    pid_t pid = fork();
    if (pid < 0) return std::perror("gicl-run: fork"), 1;
    if (pid == 0) {
      setpgid(0, 0);
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      setenv("GICL_RANK", std::to_string(r).c_str(), 1);
      setenv("GICL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("GICL_LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("GICL_ROOT_ADDR", root.c_str(), 1);
      setenv("GICL_BOOTSTRAP_SECRET", hex, 1);
      if (r == 0) {  // the root's socket stays open across exec in rank 0 only
        fcntl(root_fd, F_SETFD, 0);
        setenv("GICL_BOOTSTRAP_ROOT_FD", std::to_string(root_fd).c_str(), 1);
      } else {
        unsetenv("GICL_BOOTSTRAP_ROOT_FD");
      }
      setenv("GICL_SOCKET_IFNAME", "lo", 0);  // one node: keep bootstrap traffic on loopback
      // CUDA's hardware queues without MPS; an MPS client gets 2 unless asked, too few for a
      // rank's stream beside the network path's copier and copy agent (docs/transports.md).
      setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 0);
      execvp(prog[0], prog);
      std::fprintf(stderr, "gicl-run: cannot run '%s': %s\n", prog[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    ranks[r].pid = pid;
    ranks[r].out = fds[0];
  }
  close(root_fd);  // rank 0 holds it now

  const auto start = std::chrono::steady_clock::now();
  int first_failure = 0, live = n, open_pipes = n;
  bool stopping = false;
  auto stop_time = start;
  while (live > 0 || open_pipes > 0) {
    std::vector<pollfd> p;
    std::vector<int> which;
    for (int r = 0; r < n; ++r)
      if (ranks[r].out >= 0) p.push_back({ranks[r].out, POLLIN, 0}), which.push_back(r);
    if (!p.empty())
      poll(p.data(), p.size(), 100);
    else
      usleep(20000);
    for (size_t k = 0; k < p.size(); ++k) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = ranks[which[k]];
      char buf[4096];
      ssize_t got = read(r.out, buf, sizeof(buf));
      if (got > 0) {
        r.partial.append(buf, static_cast<size_t>(got));
        flush_lines(which[k], r, false);
      } else if (got == 0 || errno != EINTR) {
        flush_lines(which[k], r, true);
        close(r.out);
        r.out = -1;
        --open_pipes;
      }
    }
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (int r = 0; r < n; ++r) {
        if (ranks[r].pid != pid) continue;
        ranks[r].exited = true;
        ranks[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --live;
        if (ranks[r].code != 0 && first_failure == 0 && !stopping) {
          first_failure = ranks[r].code;
          std::fprintf(stderr, "gicl-run: rank %d exited with code %d; stopping the other ranks\n",
                       r, ranks[r].code);
          stopping = true;
          stop_time = std::chrono::steady_clock::now();
          signal_all(ranks, SIGTERM);
        }
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!stopping && g_signal != 0) {
      std::fprintf(stderr, "gicl-run: signal %d; stopping all ranks\n", static_cast<int>(g_signal));
      first_failure = 128 + g_signal;
      stopping = true;
      stop_time = now;
      signal_all(ranks, SIGTERM);
    }
    if (!stopping && timeout_s > 0 &&
        std::chrono::duration<double>(now - start).count() > timeout_s) {
      std::fprintf(stderr, "gicl-run: --timeout %.0f s expired; stopping all ranks\n", timeout_s);
      first_failure = 124;
      stopping = true;
      stop_time = now;
      signal_all(ranks, SIGTERM);
    }
    // Ranks that ignore SIGTERM get SIGKILL after a grace period.
    if (stopping && live > 0 && now - stop_time > std::chrono::seconds(3))
      signal_all(ranks, SIGKILL);
    if (live == 0 && open_pipes > 0 && now - stop_time > std::chrono::seconds(5)) break;
  }
  return first_failure;
}
