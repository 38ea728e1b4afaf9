#pragma once
// Internal to the broker (namespace detail): the $SYS/broker/... topics monitoring tools read
// (Mosquitto's names, the subset that applies), their values from the broker's counters and MQTT
// tables. The core publishes them every mqtt.sys_interval, retained (a subscriber gets the
// current values at once) at QoS 0, each only when its value changed. Only the broker publishes
// under $SYS/ (mqtt_session refuses clients there); who may read them is who may subscribe to
// $SYS/# (mqtt.anonymous_read holds it by default, a user's read list must name it).
//
// Threads: strand only.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/context.hpp"
#include "broker/stats.hpp"

namespace newsdesk::broker::detail {

/// What the topics are made of, read on the strand by the core.
struct sys_figures {
  stats_snapshot stats;
  std::size_t clients_connected = 0; // MQTT sessions with a connection
  std::size_t clients_kept = 0;      // MQTT sessions kept without one
  steady::duration uptime{};
};

class sys_topics {
 public:
  /// The topics (without "/topic/") whose values changed since the last call, with their
  /// values as text; every topic on the first call.
  std::vector<std::pair<std::string, std::string>> changed(const sys_figures& f);

 private:
  std::map<std::string, std::string> last_;
  std::uint64_t clients_maximum_ = 0;
};

} // namespace newsdesk::broker::detail
