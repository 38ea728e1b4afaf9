#pragma once
// Internal to the broker (namespace detail): publishing. One entry point for every publisher,
// network (any wire protocol) or in-process: it finds the channel, counts, and hands the
// messages to the channel's delivery policy. /queue channels go to queue_delivery; every other
// channel fans out here (/topic): one shared block appended to each subscriber's bounded queue,
// with the slow-consumer policy (config::slow_consumer) deciding what does not fit, and each
// in-process subscriber's handler called in turn.
//
// It never touches a socket: writes and disconnects it decides on are deferred through the
// flush_scheduler, so the subscriber lists it loops over never change under it.
//
// Fan-out publishes on /topic/ channels also reach MQTT sessions (mqtt_router::fan_out), which
// encode the run once per MQTT version.
//
// Threads: strand only.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "broker/channel_index.hpp"
#include "broker/context.hpp"
#include "broker/slice_ring.hpp"

namespace newsdesk::broker::detail {

class peer;
class flush_scheduler;
class queue_delivery;
class mqtt_router;
struct publish_meta;

class delivery {
 public:
  delivery(context& ctx, channel_index& index, queue_delivery& queues, flush_scheduler& flush,
           mqtt_router& mqtt)
      : ctx_(ctx)
      , index_(index)
      , queues_(queues)
      , flush_(flush)
      , mqtt_(mqtt) {}

  /// Publishes a run of messages (in stored form, see slice_ring.hpp) on channel `name`.
  /// `from` is the network publisher (null: in-process); `whole`, if not null, is a block
  /// holding exactly the run, shared instead of copied. Returns how many messages were taken, a
  /// prefix: fewer than all only when a /queue backlog paused `from`. Messages that cannot be
  /// delivered under the limits are dropped and counted; a publisher over
  /// max_channels_per_connection is closed (deferred). `meta`: how MQTT subscribers get it
  /// (QoS, RETAIN, MQTT 5 properties; mqtt_router.hpp).
  std::size_t publish(std::string_view name, std::span<const msg_view> msgs, peer* from,
                      const block_ptr* whole, const publish_meta& meta);

 private:
  void offer(peer& s, const block_ptr& block, std::size_t total, std::span<const msg_view> msgs);
  void deliver_local(channel& ch, std::span<const msg_view> msgs);

  context& ctx_;
  channel_index& index_;
  queue_delivery& queues_;
  flush_scheduler& flush_;
  mqtt_router& mqtt_;
};

} // namespace newsdesk::broker::detail
