#pragma once
// Settings of the embedded pub/sub broker.
//
// Every limit says what it protects against and why its default is what it is; the defaults
// are the member initializers below and nowhere else. Each setting is declared once, as a row of
// config_table() (broker/config.cpp), which the standalone broker's config file, the server's
// embedded "broker": {...}, NEWSDESK_BROKER_* and --help all read. from_json rejects unknown
// keys, wrong types and values out of range with a std::invalid_argument naming the key (and
// the range); keys that are absent keep their defaults.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace newsdesk::settings {
template <class Config> class table; // server/core/settings.hpp
} // namespace newsdesk::settings

namespace newsdesk::broker {

/// What happens to a message when a /topic subscriber's outbound queue is full.
enum class slow_consumer_policy {
  /// The message is dropped for that subscriber only (counted as drops.queue_full); the
  /// subscriber stays connected until it exceeds hard_limit_bytes or write_deadline.
  drop_newest,
  /// The subscriber is disconnected as soon as a message does not fit in its queue.
  disconnect,
};

/// A user of the MQTT listener and the topics it may use, as MQTT topic filters ("newsdesk/#").
struct mqtt_user {
  std::string name;
  /// Compared by SHA-256 digest in constant time, like the frame protocol's token.
  std::string password;
  std::vector<std::string> read{"newsdesk/#"};
  std::vector<std::string> write;
};

/// Who may connect to the MQTT listener without a user name.
enum class mqtt_anonymous {
  loopback, ///< clients connecting from 127.0.0.0/8 or ::1 only
  always,
  never,
};

/// The MQTT 3.1.1 / 5.0 listener (docs/broker.md, "MQTT"). It shares the channel index, queues
/// and slow-consumer policy of config below: MQTT topic `a/b` is channel `/topic/a/b`.
struct mqtt_config {
  /// Listens beside the frame protocol, on config::address.
  bool enabled = true;
  /// The IANA port for MQTT. apply_listen_spec with port 0 (tests) sets this to 0 too, so two
  /// brokers started for tests never race for 1883.
  std::uint16_t port = 1883;
  /// Whether a file, a variable or a flag asked for another port than the default (the settings
  /// row sets it with port; --listen ADDR:0 too). The default port is the one Mosquitto takes
  /// too: when it is busy and no other was asked for, the broker logs a warning and runs without
  /// its MQTT listener instead of refusing to start (MQTT over WebSockets on the HTTP port still
  /// works); another port asked for must be had.
  bool port_given = false;
  /// Largest packet accepted (and announced to MQTT 5 clients as Maximum Packet Size); a
  /// larger announced length closes the connection before the body is read. 1 MiB matches
  /// max_frame_bytes: a message either protocol accepts can be delivered to the other.
  std::size_t max_packet_bytes = 1024 * 1024;
  /// QoS 1 and 2 messages sent to one client and not yet acknowledged (the in-flight window; an
  /// MQTT 5 client's Receive Maximum lowers it). 32 keeps a round trip's worth in flight on a
  /// fast link while bounding what a reconnect resends.
  std::size_t max_inflight = 32;
  /// QoS 1 and 2 messages waiting for one session behind its window, connected or not: what a
  /// persistent session collects while its client is away, and what absorbs a publisher faster
  /// than the subscriber acknowledges. Past it, or past queue_max_bytes of payload, new ones are
  /// dropped for that session (drops.queue_full). 1000 headlines is days of news; Mosquitto's
  /// max_queued_messages defaults to 1000 too.
  std::size_t max_queued_messages = 1000;
  /// QoS 2 messages one client may have sent and not yet released (PUBREL) at once: the packet
  /// ids the session keeps so a resent PUBLISH is not delivered twice. Announced to MQTT 5
  /// clients as Receive Maximum; one more closes the connection (MQTT 5: DISCONNECT 0x93)
  /// before that message is acknowledged, so the client still owns it and sends it again after
  /// reconnecting. 2 bytes each; 1000 covers a burst of a client that sends without waiting.
  std::size_t receive_maximum = 1000;
  /// A session that persists (clean session 0 in 3.1.1, Session Expiry Interval in 5) is
  /// kept at most this long after its client left; 3.1.1 sessions, which ask for "forever",
  /// get this. Bounds what clients that never come back cost.
  std::chrono::milliseconds max_session_expiry{3600 * 1000};
  /// Sessions at once, connected or kept. A CONNECT needing one more is refused (quota
  /// exceeded / server unavailable). Twice max_connections' default leaves room for as many
  /// kept sessions as live ones.
  std::size_t max_sessions = 32768;
  /// Subscriptions of one session; past it SUBACK refuses the filter. Wildcard filters live in
  /// a tree every publish walks, so this bounds that tree per client.
  std::size_t max_subscriptions = 100;
  /// Retained messages kept, in count and payload bytes; past either, a new retained topic is
  /// not kept (the message is still delivered). 10000 is thousands of sites' latest headline.
  std::size_t max_retained_messages = 10000;
  std::size_t max_retained_bytes = 16 * 1024 * 1024;
  mqtt_anonymous anonymous = mqtt_anonymous::loopback;
  /// Topic filters anonymous clients may subscribe to and publish to, comma-separated.
  /// Publishing under reserved_prefixes (newsdesk/) and $SYS/ is refused to everyone. '#'
  /// matches no topic starting with '$' (MQTT 4.7.2), so $SYS/# is named on its own.
  std::string anonymous_read = "#,$SYS/#";
  std::string anonymous_write = "#";
  /// Named users; a client presenting a user name must match one.
  std::vector<mqtt_user> users;

  /// MQTT connections at once from one client address (IPv4, or IPv6 in full). One more is
  /// closed as soon as it is accepted, before a byte is read and before it can take a slot
  /// from anyone (connections_rejected_per_address); a warn line per address at most once per
  /// refusal interval names the address and the slots left for every other one. Without it one
  /// address could hold all max_connections (the HTTP server caps 256 per address the same
  /// way). 256 is far above what one host of real subscribers needs. 0: no cap.
  std::size_t max_connections_per_address = 256;
  /// A connected client at keep-alive 0 (it asked for no keep-alive) that sends nothing for
  /// this long is closed (disconnects.mqtt_idle): otherwise it is kept for ever, and silent
  /// connections would pile up. Clients with a keep-alive are closed after 1.5 times it
  /// instead; before CONNECT, first_frame_timeout applies. 600 s: a quiet subscriber that wants
  /// to stay sends a PINGREQ more often (every client library does with a keep-alive). 0: never.
  std::chrono::milliseconds idle_timeout{600 * 1000};
  /// Bytes of wills (topic and payload) the connections of one address may hold together. A
  /// CONNECT whose will would pass it is refused (CONNACK quota exceeded in MQTT 5, server
  /// unavailable in 3.1.1; disconnects.mqtt_will_budget). With max_connections_per_address it
  /// bounds what one address parks in wills (1 MiB, not 256 times max_frame_bytes); real wills
  /// are a few bytes ("offline"). 0: no will is accepted.
  std::size_t max_will_bytes_per_address = 1024 * 1024;
  /// Every this long the broker publishes its $SYS/broker/... topics (retained: a subscriber
  /// gets the current values at once), each only when its value changed. Mosquitto's default.
  /// 0: no $SYS topics.
  std::chrono::milliseconds sys_interval{10000};
};

struct config {
  /// The embedding server starts the broker only when this is true.
  bool enabled = true;
  /// Loopback by default: the protocol has no authentication.
  std::string address = "127.0.0.1";
  /// 0 picks a free port (tests); local_endpoint() tells which.
  std::uint16_t port = 25000;

  /// Largest data frame accepted. A bigger length prefix closes the connection before any
  /// allocation: it is the guard against a client (or garbage) asking for 4 GiB. 1 MiB is far
  /// above a headline and far below what would hurt when many publishers send at once.
  std::size_t max_frame_bytes = 1024 * 1024;
  /// Longest channel name. Names are table keys that live as long as the channel; 256 bytes
  /// is generous for "/topic/..." paths and keeps garbage from becoming huge keys.
  std::size_t max_channel_name = 256;
  /// Connections above this are accepted and closed at once (counted). It bounds file
  /// descriptors and memory; 16384 leaves room under a typical 20000 RLIMIT_NOFILE.
  std::size_t max_connections = 16384;
  /// Connections that have not yet sent their first complete frame (unidentified) at once. A
  /// new connection arriving when this many are open, or when max_connections are, closes a
  /// randomly chosen unidentified one (disconnects.unidentified_limit) to make room; only when
  /// every slot holds an identified client is it refused. So silent connections can never take
  /// every slot: a real client, which sends its subscribe frame within a round trip, gets in
  /// and stays. Half of max_connections leaves the other half for identified clients whatever
  /// a flood of silent ones does; keep it below max_connections.
  std::size_t max_unidentified_connections = 8192;

  /// Soft bounds of each subscriber's outbound queue. A message that does not fit is dropped
  /// for that subscriber (or a /queue message goes to the next subscriber). 16 MiB absorbs a
  /// burst of 100,000 small messages on a fast reader; Redis's pub/sub client limit is 32 MiB.
  std::size_t queue_max_messages = 262144;
  std::size_t queue_max_bytes = 16 * 1024 * 1024;
  slow_consumer_policy slow_consumer = slow_consumer_policy::drop_newest;
  /// Hard limit: when the bytes a subscriber owes (queued plus dropped since its queue was
  /// last empty) exceed this, it is hopelessly behind and is disconnected. 0 disables it.
  std::size_t hard_limit_bytes = 64 * 1024 * 1024;
  /// A subscriber with pending output that makes no write progress for this long is
  /// disconnected: it protects queue memory from a peer that stopped reading. 0 disables it.
  std::chrono::milliseconds write_deadline{10000};

  /// Per-/queue-channel backlog for messages no subscriber can take. While it is full the
  /// broker stops reading from the publisher (TCP backpressure); in-process publishes that
  /// do not fit are dropped and counted.
  std::size_t backlog_max_messages = 100000;
  std::size_t backlog_max_bytes = 16 * 1024 * 1024;
  /// All /queue backlogs together, in bytes, each run of messages charged 64 bytes on top of
  /// its data for its bookkeeping. The per-channel bounds alone let a publisher that invents
  /// /queue names park 16 MiB under each; this caps the sum. A network publisher needing
  /// backlog room while the sum is at the cap is paused, as on a full channel backlog; an
  /// in-process publish is dropped (drops.backlog_full). 64 MiB is four full channel backlogs,
  /// the same order as one subscriber's hard_limit_bytes.
  std::size_t backlog_total_max_bytes = 64 * 1024 * 1024;
  /// Most channels at once. A channel lives while it has a subscriber, a backlog or a paused
  /// publisher, so a publisher inventing /queue names creates one per name. At the limit, a
  /// subscribe to a new channel closes that connection (disconnects.channel_limit) and a
  /// /queue publish that would create one is dropped (drops.channel_limit). Every connection
  /// subscribes to one channel, so 32768 is max_connections twice over; an entry costs well
  /// under 1 KiB (name up to max_channel_name, tables), so the table stays under ~30 MiB.
  std::size_t max_channels = 32768;
  /// /queue channels one connection may create over its life (publishing to a new name); past
  /// it the connection is closed (disconnects.channel_limit). One client inventing names cannot
  /// fill the table for everyone; it would need many connections (max_connections bounds them).
  std::size_t max_channels_per_connection = 1024;
  /// A /queue backlog with no subscriber for this long is dropped (drops.expired) and its
  /// channel freed: names nobody consumes do not hold the table and memory until a restart.
  /// 0: kept until consumed.
  std::chrono::milliseconds backlog_ttl{300000};

  /// Channel name prefixes network clients may not publish to (comma-separated): only the
  /// process the broker runs in publishes there (server::publish). newsdesk's headlines go out
  /// on /topic/headlines, which /events shows to every reader, so a network client publishing
  /// there could put words on everyone's page; the same holds for MQTT's newsdesk/ topics
  /// (/topic/newsdesk/...). A frame-protocol publish there closes the connection
  /// (disconnects.reserved_channel); MQTT's answer is in docs/broker.md. Empty: none reserved.
  std::string reserved_prefixes = "/topic/headlines,/topic/newsdesk/";
  /// A shared secret. When set, a client's first frame must be exactly this token (compared in
  /// constant time) before its subscribe frame; any other first frame closes the connection
  /// (disconnects.auth_failed). Empty: no authentication (listen on loopback, as by default).
  std::string token;

  /// A connection whose first complete frame (its subscribe frame, or the token) has not
  /// arrived this long after it was accepted is closed (disconnects.first_frame_timeout): it
  /// protects the connection table from peers that connect and never say who they are (they
  /// would otherwise stay forever). Every client in this repository sends its first frame
  /// right after connecting, so 5 s is many round trips even across continents, yet a flood of
  /// silent connections frees its slots within seconds. 0 disables it.
  std::chrono::milliseconds first_frame_timeout{5000};
  /// A subscribed connection that has neither sent nor received anything for this long is
  /// sent a ping: a zero-length frame, which clients skip (docs/broker.md). It keeps idle
  /// connections alive through NAT and firewall idle timeouts, and makes a dead peer show: the
  /// ping goes unacknowledged and the connection is closed after write_deadline (TCP_USER_TIMEOUT
  /// is set to it). 30 s is below common NAT idle timeouts (60 s and up) and costs 4 bytes per
  /// idle connection per interval. A connection is pinged between one and two intervals after
  /// it went quiet (the broker checks all connections once per interval). 0 disables it.
  std::chrono::milliseconds ping_interval{30000};
  /// A connection that has sent part of a frame and nothing more for this long is closed: it
  /// protects against peers that vanish without a FIN. 0 disables it.
  std::chrono::milliseconds partial_frame_timeout{30000};
  /// Graceful shutdown delivers queued messages to live subscribers for at most this long.
  std::chrono::milliseconds shutdown_deadline{5000};
  /// Bytes read from a socket per read call; many frames are decoded per read. The broker
  /// keeps one such buffer for all connections, so idle connections hold no read buffer.
  std::size_t read_chunk_bytes = 128 * 1024;
  /// SO_SNDBUF of each connection; 0 keeps the kernel's autotuning (up to tcp_wmem, 4 MiB on
  /// Linux). A small value makes the queue limits above, not kernel memory, bound what a stuck
  /// subscriber costs.
  std::size_t send_buffer_bytes = 0;

  mqtt_config mqtt;
};

/// Every broker setting, one row each: key, unit, range, help. Built once; any thread may read it.
const settings::table<config>& config_table();

void to_json(nlohmann::json& j, const config& c);
/// Throws std::invalid_argument naming the key on unknown keys, values of the wrong type and
/// values out of range.
void from_json(const nlohmann::json& j, config& c);

/// Reads a JSON file holding a broker config object, or a newsdesk config file (whose "broker"
/// object is the broker's: the standalone broker reads the file newsdesk reads); the message
/// names the file on failure.
config load_config_file(const std::string& path);

/// The environment's name for setting `path`: NEWSDESK_BROKER_ and the path in capitals, dots as
/// underscores (mqtt.port: NEWSDESK_BROKER_MQTT_PORT), as newsdesk itself names them.
std::string environment_name(std::string_view path);
/// Applies every NEWSDESK_BROKER_* variable of `env` (name -> value) to `c`, as the embedded
/// broker's settings are read; empty values count as unset. Throws std::invalid_argument naming
/// the variable on a bad value. Returns a warning for each NEWSDESK_BROKER_* name that is no
/// setting, with the nearest real one.
std::vector<std::string>
apply_environment(config& c, const std::map<std::string, std::string, std::less<>>& env);

/// Parses "ADDR:PORT" (or "[v6]:PORT") into c.address/c.port; throws std::invalid_argument.
/// Port 0 also sets c.mqtt.port to 0 (tests: every listener on a free port).
void apply_listen_spec(config& c, const std::string& spec);

} // namespace newsdesk::broker
