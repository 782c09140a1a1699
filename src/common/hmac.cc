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

}  // namespace

bool hmac_sha256(const void* key, size_t key_bytes, const void* msg, size_t bytes, uint8_t* out) {
  static const int once = pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
  (void)once;
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
