// SPDX-License-Identifier: Apache-2.0
// HMAC-SHA-256, the one way the library calls into OpenSSL's MACs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gicl {

inline constexpr size_t kHmacBytes = 32;

/// HMAC-SHA-256 of `msg` under `key` into `out` (kHmacBytes); false where OpenSSL failed.
///
/// Calls run one at a time, and fork() waits for the one in progress. OpenSSL 3 holds
/// process-wide locks inside a call (its algorithm store); a child forked while the bootstrap
/// root or the heartbeat thread held one would block at its first use of OpenSSL, gicl's or any
/// other library's (measured: a rank forked beside a running root hung in HMAC's
/// CRYPTO_THREAD_read_lock).
bool hmac_sha256(const void* key, size_t key_bytes, const void* msg, size_t bytes, uint8_t* out);

/// Releases what OpenSSL keeps for the calling thread, as fork() waits. A library thread that
/// computed MACs calls it last: OpenSSL would otherwise release it as the thread ends, under a
/// process-wide write lock that a fork at that moment would leave held in the child.
void hmac_thread_done();

}  // namespace gicl
