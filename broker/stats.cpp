#include "broker/stats.hpp"

#include <nlohmann/json.hpp>

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
                     {"pings", s.pings},
                     {"queued_bytes", s.queued_bytes},
                     {"backlog_messages", s.backlog_messages},
                     {"backlog_bytes", s.backlog_bytes},
                     {"publishers_paused", s.publishers_paused},
                     {"mqtt_sessions_current", s.mqtt_sessions_current},
                     {"retained_messages", s.retained_messages},
                     {"retained_bytes", s.retained_bytes},
                     {"drops",
                      {{"no_subscriber", d.no_subscriber},
                       {"queue_full", d.queue_full},
                       {"backlog_full", d.backlog_full},
                       {"channel_limit", d.channel_limit},
                       {"disconnected", d.disconnected},
                       {"shutdown", d.shutdown},
                       {"expired", d.expired},
                       {"not_authorized", d.not_authorized},
                       {"too_large", d.too_large}}},
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
                       {"auth_failed", x.auth_failed},
                       {"first_frame_timeout", x.first_frame_timeout},
                       {"unidentified_limit", x.unidentified_limit},
                       {"mqtt_malformed_length", x.mqtt_malformed_length},
                       {"mqtt_packet_too_large", x.mqtt_packet_too_large},
                       {"mqtt_malformed", x.mqtt_malformed},
                       {"mqtt_bad_utf8", x.mqtt_bad_utf8},
                       {"mqtt_bad_topic", x.mqtt_bad_topic},
                       {"mqtt_before_connect", x.mqtt_before_connect},
                       {"mqtt_protocol_error", x.mqtt_protocol_error},
                       {"mqtt_keep_alive", x.mqtt_keep_alive},
                       {"mqtt_taken_over", x.mqtt_taken_over},
                       {"mqtt_refused", x.mqtt_refused},
                       {"not_authorized", x.not_authorized}}}};
}

} // namespace newsdesk::broker
