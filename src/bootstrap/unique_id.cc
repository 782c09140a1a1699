// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/unique_id.hpp"

#include <fcntl.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bootstrap/auth.hpp"
#include "bootstrap/root.hpp"
#include "common/log.hpp"
#include "common/settings.hpp"

namespace gicl::bootstrap {

Status random_secret(uint8_t* secret) {
  static_assert(kSecretBytes == kNonceBytes);
  return auth_nonce(secret);  // the same source and size
}

Status make_unique_id(UniqueIdData* id) {
  *id = UniqueIdData{};
  id->version = kWireVersion;
  GICL_CHECK(random_secret(id->secret));
  GICL_CHECK(auth_nonce(id->job));
  SockAddr local, bound;
  std::string ifname;
  GICL_CHECK(find_interface_address(&local, &ifname));
  int64_t timeout = 0;
  GICL_CHECK(setting_int(Setting::kBootstrapTimeout, &timeout));
  GICL_CHECK(start_root(local, id->secret, id->job, timeout, &bound));
  id->root = to_wire(bound);
  GICL_INFO(kSubsysBootstrap, "bootstrap: root listening on %s (%s)", bound.str().c_str(),
            ifname.c_str());
  return GICL_SUCCESS;
}

namespace {

bool hex_secret(const std::string& text, uint8_t* out) {
  if (text.size() != 2 * kSecretBytes) return false;
  for (size_t i = 0; i < kSecretBytes; ++i) {
    unsigned v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = text[2 * i + j];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        return false;
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

const char* first_env(std::initializer_list<const char*> names, const char** which) {
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (v != nullptr && *v != '\0') {
      if (which) *which = n;
      return v;
    }
  }
  return nullptr;
}

Status env_int(const char* name, const char* text, int* out) {
  int64_t v = 0;
  if (!parse_int64(text, &v) || v < 0 || v > (1 << 24))
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not a valid rank or size", name, text);
  *out = static_cast<int>(v);
  return GICL_SUCCESS;
}

/// GICL_BOOTSTRAP_ROOT_FD: the listening socket gicl-run made for the root, taken once per
/// process (a later launcher init by rank 0 binds GICL_ROOT_ADDR itself); -1 where none.
Status inherited_root_fd(int* fd) {
  *fd = -1;
  int64_t v = -1;
  GICL_CHECK(setting_int(Setting::kBootstrapRootFd, &v));
  static std::atomic<bool> taken{false};
  if (v < 0 || taken.exchange(true)) return GICL_SUCCESS;
  const int f = static_cast<int>(v);
  int listening = 0, type = 0;
  socklen_t len = sizeof(listening);
  if (::getsockopt(f, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0 ||
      (len = sizeof(type), ::getsockopt(f, SOL_SOCKET, SO_TYPE, &type, &len)) != 0 ||
      type != SOCK_STREAM)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "GICL_BOOTSTRAP_ROOT_FD=%d is not a listening TCP socket of this process", f);
  // Not for the programs this rank may start.
  GICL_SYSCHECK(::fcntl(f, F_SETFD, FD_CLOEXEC), "fcntl(GICL_BOOTSTRAP_ROOT_FD, FD_CLOEXEC)");
  *fd = f;
  return GICL_SUCCESS;
}

}  // namespace

Status launcher_ranks(int* rank, int* size, int* local_rank) {
  int64_t r = -1, n = -1, lr = -1;
  GICL_CHECK(setting_int(Setting::kRank, &r));
  GICL_CHECK(setting_int(Setting::kWorldSize, &n));
  GICL_CHECK(setting_int(Setting::kLocalRank, &lr));
  const char* name = nullptr;
  if (r < 0) {
    const char* v =
        first_env({"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, &name);
    if (v == nullptr)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "no rank in the environment: set GICL_RANK (gicl-run does) or start under "
                       "torchrun, mpirun or srun");
    int x = 0;
    GICL_CHECK(env_int(name, v, &x));
    r = x;
  }
  if (n < 0) {
    const char* v =
        first_env({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, &name);
    if (v == nullptr)
      return GICL_FAIL(GICL_INVALID_USAGE, "no world size in the environment: set GICL_WORLD_SIZE");
    int x = 0;
    GICL_CHECK(env_int(name, v, &x));
    n = x;
  }
  if (lr < 0) {
    const char* v = first_env(
        {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, &name);
    if (v != nullptr) {
      int x = 0;
      GICL_CHECK(env_int(name, v, &x));
      lr = x;
    }
  }
  if (n < 1 || r >= n)
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "launcher rank %lld is out of range for world size %lld",
                     static_cast<long long>(r), static_cast<long long>(n));
  *rank = static_cast<int>(r);
  *size = static_cast<int>(n);
  *local_rank = static_cast<int>(lr);
  return GICL_SUCCESS;
}

Status launcher_root(std::string* text, const char** source) {
  GICL_CHECK(setting_string(Setting::kRootAddr, text));
  *source = "GICL_ROOT_ADDR";
  if (!text->empty()) return GICL_SUCCESS;
  // torchrun: its own store listens on MASTER_ADDR:MASTER_PORT, so the root takes the next port.
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (addr != nullptr && *addr != '\0' && port != nullptr && *port != '\0') {
    int64_t p = 0;
    if (!parse_int64(port, &p) || p < 1 || p > 65534)
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "MASTER_PORT='%s' is not a port in 1..65534", port);
    const bool v6 = std::strchr(addr, ':') != nullptr && addr[0] != '[';
    *text = (v6 ? "[" + std::string(addr) + "]" : std::string(addr)) + ":" + std::to_string(p + 1);
    *source = "MASTER_ADDR:MASTER_PORT+1";
    return GICL_SUCCESS;
  }
  return GICL_FAIL(GICL_INVALID_USAGE,
                   "GICL_ROOT_ADDR is not set (nor torchrun's MASTER_ADDR and MASTER_PORT): launch "
                   "with gicl-run or torchrun, or set it to host:port of rank 0");
}

Status launcher_unique_id(int rank, UniqueIdData* id) {
  *id = UniqueIdData{};
  id->version = kWireVersion;
  std::string root_text, secret_text;
  const char* root_source = nullptr;
  GICL_CHECK(launcher_root(&root_text, &root_source));
  GICL_CHECK(setting_string(Setting::kBootstrapSecret, &secret_text));
  SockAddr root;
  GICL_CHECK(parse_host_port(root_text.c_str(), root_source, &root));
  const char* job = first_env({"SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid",
                               "PMI_JOBID", "TORCHELASTIC_RUN_ID"},
                              nullptr);
  const std::string job_text = std::string(job ? job : "") + "|" + root_text;
  if (!secret_text.empty()) {
    if (!hex_secret(secret_text, id->secret))
      return GICL_FAIL(GICL_INVALID_ARGUMENT, "GICL_BOOTSTRAP_SECRET must be 32 hex digits");
  } else {
    int64_t insecure = 0;
    GICL_CHECK(setting_int(Setting::kBootstrapInsecure, &insecure));
    if (insecure == 0)
      return GICL_FAIL(GICL_INVALID_USAGE,
                       "GICL_BOOTSTRAP_SECRET is not set: a launcher-started job needs a secret "
                       "shared by its ranks (32 hex digits, e.g. from 'openssl rand -hex 16', "
                       "passed by the launcher; gicl-run sets one), or GICL_BOOTSTRAP_INSECURE=1 "
                       "to derive it from the job id and root address, which anyone who can "
                       "reach the root can compute");
    GICL_WARN(kSubsysBootstrap,
              "GICL_BOOTSTRAP_INSECURE=1: the job secret is derived from %s, which guards "
              "against accidents, not attackers",
              job ? "the launcher's job id and the root address" : "the root address");
    static constexpr char kPublicKey[] = "gicl insecure bootstrap";
    GICL_CHECK(auth_derive(kPublicKey, sizeof(kPublicKey) - 1, job_text, id->secret, kSecretBytes));
  }
  GICL_CHECK(auth_derive(id->secret, kSecretBytes, "job|" + job_text, id->job, kJobBytes));
  GICL_INFO(kSubsysBootstrap, "bootstrap: rank %d of a launcher job, root %s (from %s)", rank,
            root_text.c_str(), root_source);
  if (rank == 0) {
    int64_t timeout = 0;
    GICL_CHECK(setting_int(Setting::kBootstrapTimeout, &timeout));
    int fd = -1;
    GICL_CHECK(inherited_root_fd(&fd));
    SockAddr bound;
    GICL_CHECK(start_root(root, id->secret, id->job, timeout, &bound, fd));
  }
  id->root = to_wire(root);
  return GICL_SUCCESS;
}

}  // namespace gicl::bootstrap
