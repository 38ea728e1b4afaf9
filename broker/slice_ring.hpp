#pragma once
// Internal to the broker (namespace detail): the buffers messages travel in, and the FIFO that
// holds them, both for a connection's outbound queue and for a /queue channel's backlog.
//
// A block is one run of messages in the broker's stored form: each message a 4-byte big-endian
// length then its data (frame.hpp's data frame, so the frame protocol writes a block as it is;
// another wire protocol re-encodes on the way out). Blocks are immutable once filled and shared
// by every receiver, so one allocation serves a batch of messages and all its deliveries.
//
// Threads: none of this is synchronised; the broker uses it on its strand only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace newsdesk::broker::detail {

using block_ptr = std::shared_ptr<char[]>;

/// n bytes, uninitialised: the caller fills them before sharing the block.
inline block_ptr make_block(std::size_t n) {
  return std::make_shared_for_overwrite<char[]>(n);
}

/// A part of a block owed to one receiver: `messages` whole messages, `length` bytes from
/// `offset`.
struct slice {
  block_ptr block;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t messages = 0;
};

/// FIFO of slices, a power-of-two ring. Storage is allocated on first use and released whenever
/// the ring drains, so an idle connection holds no queue memory, even after its CONNACK or its
/// last message. front() and at() require a non-empty ring (at(i): i < size()).
class slice_ring {
 public:
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// Slices it holds storage for (0 while drained).
  [[nodiscard]] std::size_t capacity() const noexcept { return cap_; }
  slice& front() noexcept { return buf_[head_]; }
  slice& at(std::size_t i) noexcept { return buf_[(head_ + i) & (cap_ - 1)]; }
  const slice& at(std::size_t i) const noexcept { return buf_[(head_ + i) & (cap_ - 1)]; }

  void push_back(slice s) {
    if (count_ == cap_)
      grow();
    buf_[(head_ + count_) & (cap_ - 1)] = std::move(s);
    ++count_;
  }

  void pop_front() noexcept {
    buf_[head_] = slice{};
    head_ = (head_ + 1) & (cap_ - 1);
    if (--count_ == 0)
      clear();
  }

  void clear() noexcept {
    buf_.reset();
    cap_ = head_ = count_ = 0;
  }

 private:
  // Not even a small ring is kept when it drains: it would cost every connection that was
  // ever written to 144 bytes for good (4 slices and the allocator's header), while a busy
  // connection pays one small allocation per drained batch, from the allocator's per-thread
  // cache (bench/broker measured no change in throughput).
  void grow() {
    const std::size_t cap = cap_ == 0 ? 4 : cap_ * 2;
    auto fresh = std::make_unique<slice[]>(cap);
    for (std::size_t i = 0; i < count_; ++i)
      fresh[i] = std::move(at(i));
    buf_ = std::move(fresh);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<slice[]> buf_;
  std::size_t cap_ = 0;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

/// One message in stored form (length header included), pointing into a read buffer or a
/// backlog block; valid only while that buffer is.
struct msg_view {
  const char* data;
  std::uint32_t size;
  std::uint32_t pair_start; ///< offset of its channel frame in the read buffer (network only)
};

} // namespace newsdesk::broker::detail
