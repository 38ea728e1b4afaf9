#pragma once
// Counters of the broker, read with server::stats() from any thread.
//
// Counters only grow; gauges (the *_current and backlog/queue figures) go up and down. They
// are updated once per batch of messages, not per message, so reading them is cheap and the
// hot path pays a handful of relaxed atomic adds per read chunk.

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace newsdesk::broker {

struct drop_counts {
  std::uint64_t no_subscriber = 0; ///< /topic message published where nobody listens
  std::uint64_t queue_full = 0;    ///< a subscriber's queue had no room (drop_newest policy)
  std::uint64_t backlog_full = 0;  ///< in-process /queue publish with a full backlog
  std::uint64_t channel_limit = 0; ///< /queue publish that would create a channel over max_channels
  std::uint64_t disconnected = 0;  ///< still queued for a subscriber when it was closed
  std::uint64_t shutdown = 0;      ///< in-process publish after shutdown began
  std::uint64_t expired = 0;       ///< in a /queue backlog nobody subscribed to for backlog_ttl
  std::uint64_t not_authorized = 0; ///< MQTT 5 publish refused (PUBACK 0x87 or, at QoS 0, none)
  std::uint64_t too_large = 0; ///< larger than an MQTT 5 client's Maximum Packet Size, not sent
};

struct disconnect_counts {
  std::uint64_t client_closed = 0;         ///< EOF or reset between frames
  std::uint64_t done = 0;                  ///< zero-length channel frame: flushed, then closed
  std::uint64_t truncated_frame = 0;       ///< EOF or reset in the middle of a frame
  std::uint64_t frame_too_large = 0;       ///< length prefix above max_frame_bytes
  std::uint64_t channel_name_too_long = 0; ///< channel frame above max_channel_name
  std::uint64_t slow_consumer = 0;         ///< queue full under the disconnect policy
  std::uint64_t hard_limit = 0;            ///< owed bytes above hard_limit_bytes
  std::uint64_t write_timeout = 0;         ///< no write progress within write_deadline
  std::uint64_t partial_frame_timeout = 0; ///< half a frame and then silence
  std::uint64_t channel_limit = 0;         ///< subscribe to a new channel over max_channels
  std::uint64_t io_error = 0;              ///< other socket errors
  std::uint64_t shutdown = 0;              ///< closed by graceful shutdown
  std::uint64_t reserved_channel = 0;      ///< published to a reserved channel prefix
  std::uint64_t auth_failed = 0;           ///< first frame was not the configured token
  std::uint64_t first_frame_timeout = 0;   ///< no complete first frame within first_frame_timeout
  std::uint64_t unidentified_limit = 0;    ///< closed to make room for a new connection (still
                                           ///< unidentified at max_unidentified_connections or
                                           ///< max_connections)
  std::uint64_t mqtt_malformed_length = 0; ///< MQTT remaining length over 4 bytes
  std::uint64_t mqtt_packet_too_large =
      0; ///< MQTT packet above mqtt.max_packet_bytes (or payload above max_frame_bytes)
  std::uint64_t mqtt_malformed =
      0; ///< MQTT packet with a field past its end, a reserved bit set or a bad value
  std::uint64_t mqtt_bad_utf8 = 0; ///< MQTT string that is not well-formed UTF-8
  std::uint64_t mqtt_bad_topic =
      0; ///< MQTT PUBLISH topic with a wildcard, empty, or too long for a channel name
  std::uint64_t mqtt_before_connect = 0; ///< MQTT packet before CONNECT, or a second CONNECT
  std::uint64_t mqtt_protocol_error =
      0; ///< MQTT packet not allowed (QoS 2, topic alias, unknown type, bad version)
  std::uint64_t mqtt_keep_alive = 0; ///< MQTT client silent for 1.5 times its keep-alive
  std::uint64_t mqtt_taken_over =
      0; ///< MQTT session taken over by a new connection with the same client id
  std::uint64_t mqtt_refused = 0;   ///< MQTT CONNECT refused: session quota, client id rejected
  std::uint64_t not_authorized = 0; ///< MQTT client without the right: anonymous where not allowed,
                                    ///< a publish its user may not make (3.1.1)
  std::uint64_t mqtt_idle = 0;      ///< MQTT client at keep-alive 0 silent for mqtt.idle_timeout
  std::uint64_t mqtt_will_budget =
      0; ///< MQTT CONNECT refused: its will passes mqtt.max_will_bytes_per_address
};

struct stats_snapshot {
  std::uint64_t connections_current = 0;
  std::uint64_t connections_total = 0;
  std::uint64_t connections_rejected = 0; ///< every slot held by an identified connection
  /// MQTT connections closed at accept: their address held mqtt.max_connections_per_address
  std::uint64_t connections_rejected_per_address = 0;
  std::uint64_t channels_current = 0;
  std::uint64_t subscribers_current = 0;
  std::uint64_t messages_in = 0; ///< messages published (network and in-process)
  std::uint64_t deliveries = 0;  ///< message copies queued to a subscriber
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t pings = 0;            ///< zero-length keep-alive frames queued to idle subscribers
  std::uint64_t queued_bytes = 0;     ///< bytes waiting in all subscriber queues
  std::uint64_t backlog_messages = 0; ///< messages waiting in all /queue backlogs
  std::uint64_t backlog_bytes = 0;
  std::uint64_t publishers_paused = 0;     ///< publishers not read because a backlog is full
  std::uint64_t mqtt_sessions_current = 0; ///< MQTT sessions, connected or kept for a client
  std::uint64_t retained_messages = 0;     ///< MQTT retained messages kept
  std::uint64_t retained_bytes = 0;        ///< their payload bytes
  drop_counts drops;
  disconnect_counts disconnects;
};

void to_json(nlohmann::json& j, const stats_snapshot& s);

} // namespace newsdesk::broker
