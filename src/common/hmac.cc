// SPDX-License-Identifier: Apache-2.0
#include "common/hmac.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>

#include <mutex>

namespace gicl {
namespace {

std::mutex g_mutex;

void lock_for_fork() {
  g_mutex.lock();
}
void unlock_after_fork() {
  g_mutex.unlock();
}

// Registered while the library loads, before any thread can compute a MAC. Registered at the
// first MAC instead, a fork() during that first one (OpenSSL's one-time setup, under its write
// locks) would not wait, and a child could also inherit the registration's guard held.
const int g_atfork = pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);

}  // namespace

bool hmac_sha256(const void* key, size_t key_bytes, const void* msg, size_t bytes, uint8_t* out) {
  if (g_atfork != 0) return false;  // without the handler a forked child could hang in OpenSSL
  std::lock_guard<std::mutex> lock(g_mutex);
  unsigned int len = 0;
  return HMAC(EVP_sha256(), key, static_cast<int>(key_bytes),
              static_cast<const unsigned char*>(msg), bytes, out, &len) != nullptr &&
         len == kHmacBytes;
}

void hmac_thread_done() {
  std::lock_guard<std::mutex> lock(g_mutex);
  OPENSSL_thread_stop();
}

}  // namespace gicl
