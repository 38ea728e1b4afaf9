#pragma once
// Internal to the broker (namespace detail): the delivery policy of /queue channels. Each
// message goes to one subscriber, the next in turn whose queue has room (round-robin); what no
// subscriber can take waits in the channel's bounded backlog, in order; a network publisher
// that finds the backlog full is paused (its socket is not read: TCP backpressure) until a pump
// frees room, and an in-process one has the rest dropped and counted. Backlogs nobody
// subscribes to expire after backlog_ttl. All backlogs together stay under
// backlog_total_max_bytes.
//
// Threads: strand only. Ownership: holds the channels it waits on (starved_) and, through a
// channel's `blocked`, the paused publishers, until it resumes them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "broker/channel_index.hpp"
#include "broker/context.hpp"
#include "broker/slice_ring.hpp"

namespace newsdesk::broker::detail {

class peer;
class flush_scheduler;

class queue_delivery {
 public:
  queue_delivery(context& ctx, channel_index& index, flush_scheduler& flush)
      : ctx_(ctx)
      , index_(index)
      , flush_(flush) {}

  /// Publishes msgs on /queue channel `ch` (a table entry). Returns how many were taken, a
  /// prefix: all of them unless `from`, a network publisher, found the backlog full; then it
  /// is paused, and the rest is for the caller to keep until from->resume().
  std::size_t publish(channel& ch, std::span<const msg_view> msgs, peer* from);

  /// Moves ch's backlog on after the current step (posted once however often it is asked):
  /// a subscriber joined, or one got queue room.
  void schedule_pump(channel& ch);
  /// p's write loop freed room in its queue: if p subscribes to a /queue channel with a backlog
  /// or a paused publisher, that channel may move on.
  void room_freed(peer& p);
  /// Takes p, a paused publisher, off its channel's list of paused publishers.
  void unblock(peer& p);
  /// The sweep: drops the backlogs nobody subscribed to for backlog_ttl (drops.expired).
  void expire_unattended(steady::time_point now);
  /// Shutdown, once the channels are gone: forgets what waits for broker-wide room.
  void reset();

 private:
  // What one backlog run costs besides its data (slice, block header, allocator rounding),
  // charged against backlog_total_max_bytes so that runs of tiny messages cannot hide memory.
  static constexpr std::size_t run_overhead = 64;
  // Messages one pump round hands out: bounds the scratch vector and one round's work.
  static constexpr std::size_t pump_batch = 4096;

  std::size_t assign_and_deliver(channel& ch, std::span<const msg_view> msgs);
  void pump(channel& ch);
  void resume_blocked(channel& ch);
  void resume_starved();
  void expire_backlog(channel& ch);

  context& ctx_;
  channel_index& index_;
  flush_scheduler& flush_;

  std::size_t backlog_total_ = 0; // bytes charged against cfg.backlog_total_max_bytes
  // Channels whose paused publisher waits for room under backlog_total_max_bytes rather than
  // in its own backlog; any channel's pump that frees room resumes them.
  std::vector<std::shared_ptr<channel>> starved_;

  // Scratch reused by every publish and pump (strand only, never across a post).
  std::vector<msg_view> pump_msgs_;
  std::vector<std::uint32_t> assign_;
  std::vector<block_ptr> target_block_;
  std::vector<std::size_t> target_pos_;
};

} // namespace newsdesk::broker::detail
