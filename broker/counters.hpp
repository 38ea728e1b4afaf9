#pragma once
// Internal to the broker (namespace detail): the live counters behind server::stats(), and the
// reasons a connection is closed.
//
// Threads: every piece of the broker updates the counters on the broker's strand; snapshot()
// reads them from any thread. Relaxed atomics suffice: each figure is read on its own, and
// stats_snapshot promises no consistency between figures. Updated per batch, not per message.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "broker/stats.hpp"

namespace newsdesk::broker::detail {

/// Why a connection was closed; each counts in the disconnect_counts field of the same name.
/// The order is disconnect_counts' order (counters::disconnects is indexed by it).
enum class close_reason {
  client_closed,
  done,
  truncated_frame,
  frame_too_large,
  channel_name_too_long,
  slow_consumer,
  hard_limit,
  write_timeout,
  partial_frame_timeout,
  channel_limit,
  io_error,
  shutdown,
  reserved_channel,
  auth_failed,
  first_frame_timeout,
  unidentified_limit,
  mqtt_malformed_length,
  mqtt_packet_too_large,
  mqtt_malformed,
  mqtt_bad_utf8,
  mqtt_bad_topic,
  mqtt_before_connect,
  mqtt_protocol_error,
  mqtt_keep_alive,
  mqtt_taken_over,
  mqtt_refused,
  not_authorized,
  mqtt_idle,
  mqtt_will_budget,
};
inline constexpr std::size_t close_reason_count = 29;

struct counters {
  std::atomic<std::uint64_t> connections_current{0}, connections_total{0}, connections_rejected{0},
      connections_rejected_per_address{0}, channels_current{0}, subscribers_current{0},
      messages_in{0}, deliveries{0}, bytes_in{0}, bytes_out{0}, pings{0}, queued_bytes{0},
      backlog_messages{0}, backlog_bytes{0}, publishers_paused{0}, mqtt_sessions_current{0},
      retained_messages{0}, retained_bytes{0};
  std::atomic<std::uint64_t> drop_no_subscriber{0}, drop_queue_full{0}, drop_backlog_full{0},
      drop_channel_limit{0}, drop_disconnected{0}, drop_shutdown{0}, drop_expired{0},
      drop_not_authorized{0}, drop_too_large{0};
  std::atomic<std::uint64_t> disconnects[close_reason_count] = {};

  std::atomic<std::uint64_t>& disconnect(close_reason why) noexcept {
    return disconnects[static_cast<std::size_t>(why)];
  }

  /// Any thread. Each figure is read atomically.
  [[nodiscard]] stats_snapshot snapshot() const;
};

inline void add(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
  a.fetch_add(n, std::memory_order_relaxed);
}
inline void sub(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
  a.fetch_sub(n, std::memory_order_relaxed);
}
inline std::uint64_t get(const std::atomic<std::uint64_t>& a) noexcept {
  return a.load(std::memory_order_relaxed);
}

} // namespace newsdesk::broker::detail
