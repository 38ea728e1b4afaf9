#include "broker/sys_topics.hpp"

#include <chrono>

namespace newsdesk::broker::detail {

std::vector<std::pair<std::string, std::string>> sys_topics::changed(const sys_figures& f) {
  const stats_snapshot& s = f.stats;
  const drop_counts& d = s.drops;
  clients_maximum_ = std::max<std::uint64_t>(clients_maximum_, f.clients_connected);
  const std::uint64_t dropped = d.no_subscriber + d.queue_full + d.backlog_full + d.channel_limit +
                                d.disconnected + d.shutdown + d.expired + d.not_authorized +
                                d.too_large;
  const auto n = [](std::uint64_t v) { return std::to_string(v); };
  // Mosquitto counts every packet in messages/*; here they count published messages (in) and
  // their deliveries (out), of every protocol, as publish/messages/* do.
  const std::pair<const char*, std::string> now[] = {
      {"$SYS/broker/version", "newsdesk"},
      {"$SYS/broker/uptime",
       n(static_cast<std::uint64_t>(
           std::chrono::duration_cast<std::chrono::seconds>(f.uptime).count())) +
           " seconds"},
      {"$SYS/broker/clients/connected", n(f.clients_connected)},
      {"$SYS/broker/clients/active", n(f.clients_connected)},
      {"$SYS/broker/clients/disconnected", n(f.clients_kept)},
      {"$SYS/broker/clients/inactive", n(f.clients_kept)},
      {"$SYS/broker/clients/total", n(f.clients_connected + f.clients_kept)},
      {"$SYS/broker/clients/maximum", n(clients_maximum_)},
      {"$SYS/broker/messages/received", n(s.messages_in)},
      {"$SYS/broker/messages/sent", n(s.deliveries)},
      {"$SYS/broker/publish/messages/received", n(s.messages_in)},
      {"$SYS/broker/publish/messages/sent", n(s.deliveries)},
      {"$SYS/broker/publish/messages/dropped", n(dropped)},
      {"$SYS/broker/bytes/received", n(s.bytes_in)},
      {"$SYS/broker/bytes/sent", n(s.bytes_out)},
      {"$SYS/broker/subscriptions/count", n(s.subscribers_current)},
      {"$SYS/broker/retained messages/count", n(s.retained_messages)},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [topic, value] : now) {
    auto& kept = last_[topic];
    if (kept == value && !kept.empty())
      continue;
    kept = value;
    out.emplace_back(topic, value);
  }
  return out;
}

} // namespace newsdesk::broker::detail
