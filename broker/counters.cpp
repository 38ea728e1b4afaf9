#include "broker/counters.hpp"

#include <iterator>

// Not in stats.cpp: the static library would then link that file's JSON code into every binary
// that reads counters, newsdesk-broker included, which never prints them.

namespace newsdesk::broker::detail {

stats_snapshot counters::snapshot() const {
  stats_snapshot s;
  s.connections_current = get(connections_current);
  s.connections_total = get(connections_total);
  s.connections_rejected = get(connections_rejected);
  s.channels_current = get(channels_current);
  s.subscribers_current = get(subscribers_current);
  s.messages_in = get(messages_in);
  s.deliveries = get(deliveries);
  s.bytes_in = get(bytes_in);
  s.bytes_out = get(bytes_out);
  s.pings = get(pings);
  s.queued_bytes = get(queued_bytes);
  s.backlog_messages = get(backlog_messages);
  s.backlog_bytes = get(backlog_bytes);
  s.publishers_paused = get(publishers_paused);
  s.drops.no_subscriber = get(drop_no_subscriber);
  s.drops.queue_full = get(drop_queue_full);
  s.drops.backlog_full = get(drop_backlog_full);
  s.drops.channel_limit = get(drop_channel_limit);
  s.drops.disconnected = get(drop_disconnected);
  s.drops.shutdown = get(drop_shutdown);
  s.drops.expired = get(drop_expired);
  auto& d = s.disconnects;
  std::uint64_t* fields[] = {&d.client_closed,
                             &d.done,
                             &d.truncated_frame,
                             &d.frame_too_large,
                             &d.channel_name_too_long,
                             &d.slow_consumer,
                             &d.hard_limit,
                             &d.write_timeout,
                             &d.partial_frame_timeout,
                             &d.channel_limit,
                             &d.io_error,
                             &d.shutdown,
                             &d.reserved_channel,
                             &d.auth_failed,
                             &d.first_frame_timeout,
                             &d.unidentified_limit};
  static_assert(std::size(fields) == close_reason_count);
  for (std::size_t i = 0; i < close_reason_count; ++i)
    *fields[i] = get(disconnects[i]);
  return s;
}

} // namespace newsdesk::broker::detail
