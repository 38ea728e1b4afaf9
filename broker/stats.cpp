#include "broker/stats.hpp"

#include <iterator>

#include <nlohmann/json.hpp>

#include "broker/counters.hpp"

namespace newsdesk::broker {

void to_json(nlohmann::json& j, const stats_snapshot& s) {
  const auto& d = s.drops;
  const auto& x = s.disconnects;
  j = nlohmann::json{{"connections_current", s.connections_current},
                     {"connections_total", s.connections_total},
                     {"connections_rejected", s.connections_rejected},
                     {"channels_current", s.channels_current},
                     {"subscribers_current", s.subscribers_current},
                     {"messages_in", s.messages_in},
                     {"deliveries", s.deliveries},
                     {"bytes_in", s.bytes_in},
                     {"bytes_out", s.bytes_out},
                     {"queued_bytes", s.queued_bytes},
                     {"backlog_messages", s.backlog_messages},
                     {"backlog_bytes", s.backlog_bytes},
                     {"publishers_paused", s.publishers_paused},
                     {"drops",
                      {{"no_subscriber", d.no_subscriber},
                       {"queue_full", d.queue_full},
                       {"backlog_full", d.backlog_full},
                       {"channel_limit", d.channel_limit},
                       {"disconnected", d.disconnected},
                       {"shutdown", d.shutdown},
                       {"expired", d.expired}}},
                     {"disconnects",
                      {{"client_closed", x.client_closed},
                       {"done", x.done},
                       {"truncated_frame", x.truncated_frame},
                       {"frame_too_large", x.frame_too_large},
                       {"channel_name_too_long", x.channel_name_too_long},
                       {"slow_consumer", x.slow_consumer},
                       {"hard_limit", x.hard_limit},
                       {"write_timeout", x.write_timeout},
                       {"partial_frame_timeout", x.partial_frame_timeout},
                       {"channel_limit", x.channel_limit},
                       {"io_error", x.io_error},
                       {"shutdown", x.shutdown},
                       {"reserved_channel", x.reserved_channel},
                       {"auth_failed", x.auth_failed}}}};
}

// Only here: the list of counters and the list of snapshot fields must change together.
stats_snapshot detail::counters::snapshot() const {
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
  std::uint64_t* fields[] = {
      &d.client_closed,         &d.done,          &d.truncated_frame, &d.frame_too_large,
      &d.channel_name_too_long, &d.slow_consumer, &d.hard_limit,      &d.write_timeout,
      &d.partial_frame_timeout, &d.channel_limit, &d.io_error,        &d.shutdown,
      &d.reserved_channel,      &d.auth_failed};
  static_assert(std::size(fields) == detail::close_reason_count);
  for (std::size_t i = 0; i < detail::close_reason_count; ++i)
    *fields[i] = get(disconnects[i]);
  return s;
}

} // namespace newsdesk::broker
