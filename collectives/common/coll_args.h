// SPDX-License-Identifier: Apache-2.0
// What a collective kernel receives besides the device communicator: the communicator's
// collective scratch (symmetric staging, per-block flags, pipe FIFOs) and its epoch counter.
// Shared by the host planner and the kernels: fixed layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/schedule/limits.hpp"
#include "collectives/schedule/step.hpp"

namespace gicl::coll {

/// What a rank publishes to each peer at a direct kernel's entry barrier, per block: where its
/// windows are (window addresses, below, and block strides in elements; kNoWindow when it has
/// none). Peers address each other through these, so ranks need not pass buffers at the same
/// heap offset.
struct Windows {
  uint64_t src_off, src_ld;
  uint64_t dst_off, dst_ld;
  // Elements of the launch (DirectArgs::count): ranks that cut a call into different pieces
  // (one passed a staged buffer beyond the staging, a peer a zero-copy one) would pair launches
  // of different ranges; the kernel compares and reports instead.
  uint64_t count;
  // An in-place alltoall's buffer when it is a window, else kNoWindow: where every rank's buffer
  // is one, ranks trade blocks in place (direct.cu, swap_blocks) instead of pushing to inboxes.
  uint64_t swap_off;
};
inline constexpr int kWindowFields = sizeof(Windows) / sizeof(uint64_t);
inline constexpr int kReadyWords = 4 * kWindowFields;  // 16 bits of a field per word

/// Entry flag of one (block, peer): the peer's Windows at epoch e, each 8-byte word 16 bits of a
/// field beside the epoch's low 48 bits, so that a word read is its own proof of arrival (as an
/// LL entry is) and the writer needs no system fence between the fields and a flag (one round
/// trip of NVLink, 1.4-1.5 us a launch on 2 x H200). Epochs stay far below 2^48 (at most 2^40
/// from GICL_EPOCH_BASE, then one a launch), so a row's old words never pass for new ones.
struct alignas(64) Ready {
  uint64_t word[kReadyWords];
};
static_assert(sizeof(Ready) == 192, "three lines per (block, peer) entry flag");

/// Word i of the entry carrying `w` at epoch e: field i / 4, its bits 16 x (i % 4) and up.
GICL_HD uint64_t ready_word(uint64_t e, const Windows& w, int i) {
  uint64_t v[kWindowFields] = {w.src_off, w.src_ld, w.dst_off, w.dst_ld, w.count, w.swap_off};
  return (e << 16) | ((v[i / 4] >> (16 * (i % 4))) & 0xffff);
}
/// Whether word `w` was written at epoch e.
GICL_HD bool ready_word_at(uint64_t w, uint64_t e) {
  return (w >> 16) == (e & ((uint64_t{1} << 48) - 1));
}
/// Whether every word of an entry was written at epoch e (the entry has arrived whole).
GICL_HD bool ready_at(const uint64_t* word, uint64_t e) {
  bool all = true;
  for (int i = 0; i < kReadyWords; ++i) all = all && ready_word_at(word[i], e);
  return all;
}
/// The Windows an entry's words (every one written at the same epoch) carry.
GICL_HD Windows ready_windows(const uint64_t* word) {
  uint64_t v[kWindowFields] = {};
  for (int i = 0; i < kReadyWords; ++i) v[i / 4] |= (word[i] & 0xffff) << (16 * (i % 4));
  return Windows{v[0], v[1], v[2], v[3], v[4], v[5]};
}
inline constexpr uint64_t kNoWindow = ~uint64_t{0};

/// A receiver's rendezvous offer to a sender: its destination window and size for the sender's
/// rendezvous operation number `seq` (1-based, counted per pair across launches).
struct alignas(16) P2pOffer {
  uint64_t seq;
  uint64_t win;    // window address, or kNoWindow: the operation goes through the FIFOs
  uint64_t bytes;  // the receive's size: a larger send would write past the window
  uint64_t pad;
};

/// This rank's running rendezvous counts with one peer, kept across launches (zeroed at setup).
struct P2pCounts {
  uint64_t offers_made;  // offers I posted to the peer (my receives)
  uint64_t offers_read;  // the peer's offers my sends have read
  uint64_t bytes_due;    // bytes the peer owes my windows, summed over zero-copy receives
  uint64_t ll_sent;      // LL operations sent to the peer
  uint64_t ll_rcvd;      // LL operations received from the peer
};

/// A window address is a byte offset in the symmetric heap, or (top bit set) a byte offset in a
/// registered buffer (gicl_comm_register): registration slot in bits 48..62, offset in 0..47.
/// Byte offsets may be added to either form.
inline constexpr uint64_t kRegWindow = uint64_t{1} << 63;
inline constexpr int kRegShift = 48;
inline constexpr uint64_t kRegOffsetMask = (uint64_t{1} << kRegShift) - 1;
constexpr uint64_t registered_window(int slot, uint64_t offset) {
  return kRegWindow | (static_cast<uint64_t>(slot) << kRegShift) | offset;
}
/// A registered window's slot and byte offset (the kernels' and the copy engines' reading).
GICL_HD int registered_slot(uint64_t w) {
  return static_cast<int>((w & ~kRegWindow) >> kRegShift);
}
GICL_HD uint64_t registered_offset(uint64_t w) {
  return w & kRegOffsetMask;
}

struct CollScratch {
  char* stage[2];      // symmetric staging, alternating by epoch parity (local view)
  size_t stage_bytes;  // bytes of each staging buffer
  Ready* ready;        // symmetric [2 (epoch parity)][kMaxBlocks][nranks]
  uint64_t* done;      // symmetric [kMaxBlocks][nranks]: epoch at which rank j left the block
  uint64_t* pushed;    // symmetric [kMaxBlocks][nranks]: epoch whose pushes into this rank's
                       // inbox rank j completed for the block (direct kernels in push mode)
  uint64_t* swapped;   // symmetric [kMaxBlocks][nranks]: (epoch << 20) + chunks of its block for
                       // this rank that rank j has loaded (in-place alltoall, swap_blocks)
  uint64_t* epoch;     // symmetric [nranks]: last epoch rank j completed (j pushes it here)
  uint32_t* finished;  // local device: blocks of the running kernel that finished
  // Pipe FIFOs (pairwise, sequence-numbered: independent of the epoch).
  char* inbox;          // symmetric [sender][channel][slot][slot_bytes]
  uint64_t* p2p_sizes;  // symmetric [sender][channel][slot]: the size of the point-to-point
                        // operation whose message fills that inbox slot
  size_t slot_bytes;
  uint64_t* head;  // symmetric [sender][channel]: messages the sender has delivered to me
  uint64_t* tail;  // symmetric [receiver][channel]: my messages the receiver has consumed
  // Network peers (fifo.cuh): a message is gathered into this rank's outbox and travels as one
  // put_signal whose signal is the message's number in `arrived`, a word per slot, since the
  // proxy may deliver two messages of a channel out of order; consumption is counted in `tail`
  // by adds, which commute.
  char* outbox;  // symmetric [receiver][channel][slot][slot_bytes]; empty without network peers
  uint64_t* arrived;  // symmetric [sender][channel][slot]: the last message delivered there
  // The staged network path's host FIFOs (core/net_path.hpp), where set: messages to network
  // peers go through pinned host slots the kernel writes and reads, counted by the proxy (no
  // outbox then). Indexed as the inbox: [peer][channel][slot], credits [peer][channel].
  char* fifo_out;                // pinned host, mapped
  const char* fifo_in;           // pinned host, mapped
  const uint64_t* fifo_arrived;  // messages that arrived per incoming slot
  const uint64_t* fifo_credits;  // messages each peer consumed per channel
  size_t fifo_slot_bytes;        // bytes between host FIFO slots (>= slot_bytes, a message's most)
  uint64_t* seq;                 // local device [peer][channel][2]: sent, received so far
  char* temp;                    // local device, stage_bytes: work space (ring reduce-scatter)
  uint64_t* ll;                  // symmetric [2 (epoch parity)][sender][ll_entries]: LL entries
  size_t ll_entries;             // entries of one LL row: ll_capacity(nranks) / 4
  char* ll128;        // symmetric [2 (epoch parity)][sender][ll128_row bytes]: LL128 lines
  size_t ll128_row;   // ll128_row_bytes(nranks)
  char* const* regs;  // local device [registration slot][rank]: registered buffers as mapped here
  // Point-to-point rendezvous (collectives/schedule/p2p.hpp).
  P2pOffer* offers;       // symmetric [receiver][kMaxP2pOps]: a ring of offers made to me
  uint64_t* offers_read;  // symmetric [sender]: my offers the sender has read (frees the ring)
  uint64_t* zc_bytes;     // symmetric [sender]: bytes the sender wrote into my windows
  P2pCounts* p2p;         // local device [peer]
  uint32_t* p2p_readers;  // local device [kMaxP2pOps]: blocks of the running kernel that read
                          // a batch's offers, per batch
  // Point-to-point LL operations (collectives/schedule/p2p.hpp).
  uint64_t* p2p_ll;         // symmetric [kP2pLLSlots][sender][p2p_ll_entries]: LL entries
  size_t p2p_ll_entries;    // entries of one row: 2 per 8 data bytes of p2p_ll_capacity
  uint64_t* p2p_ll_credit;  // symmetric [receiver][kP2pLLSlots]: last LL operation read there
  uint32_t* p2p_ll_done;    // local device: LL blocks of the running kernel that finished
  uint32_t* p2p_ll_read;    // local device [kMaxP2pOps]: blocks of a receive done reading
};

}  // namespace gicl::coll
