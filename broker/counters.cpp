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
  s.connections_rejected_per_address = get(connections_rejected_per_address);
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
  s.mqtt_sessions_current = get(mqtt_sessions_current);
  s.retained_messages = get(retained_messages);
  s.retained_bytes = get(retained_bytes);
  s.drops.no_subscriber = get(drop_no_subscriber);
  s.drops.queue_full = get(drop_queue_full);
  s.drops.backlog_full = get(drop_backlog_full);
  s.drops.channel_limit = get(drop_channel_limit);
  s.drops.disconnected = get(drop_disconnected);
  s.drops.shutdown = get(drop_shutdown);
  s.drops.expired = get(drop_expired);
  s.drops.not_authorized = get(drop_not_authorized);
  s.drops.too_large = get(drop_too_large);
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
                             &d.unidentified_limit,
                             &d.mqtt_malformed_length,
                             &d.mqtt_packet_too_large,
                             &d.mqtt_malformed,
                             &d.mqtt_bad_utf8,
                             &d.mqtt_bad_topic,
                             &d.mqtt_before_connect,
                             &d.mqtt_protocol_error,
                             &d.mqtt_keep_alive,
                             &d.mqtt_taken_over,
                             &d.mqtt_refused,
                             &d.not_authorized,
                             &d.mqtt_idle,
                             &d.mqtt_will_budget};
  static_assert(std::size(fields) == close_reason_count);
  for (std::size_t i = 0; i < close_reason_count; ++i)
    *fields[i] = get(disconnects[i]);
  return s;
}

} // namespace newsdesk::broker::detail
