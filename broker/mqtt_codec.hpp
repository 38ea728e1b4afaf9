#pragma once
// MQTT 3.1.1 and 5.0 packets (OASIS specifications), as the broker's MQTT listener reads and
// writes them: a pure codec with no I/O, no Boost and no allocation in the decoders.
//
// Every length is checked before it is used: the remaining length is at most 4 bytes and the
// whole packet at most the caller's limit before anything is done with its body; each field
// read checks the bytes left; strings must be well-formed UTF-8 without U+0000. A decoder that
// finds anything wrong returns an error naming what, and the connection is closed (the caller
// counts why). Views returned point into the input and live as long as it does.
//
// Threads: pure functions, any thread.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::broker::mqtt {

enum class packet_type : std::uint8_t {
  connect = 1,
  connack = 2,
  publish = 3,
  puback = 4,
  pubrec = 5,
  pubrel = 6,
  pubcomp = 7,
  subscribe = 8,
  suback = 9,
  unsubscribe = 10,
  unsuback = 11,
  pingreq = 12,
  pingresp = 13,
  disconnect = 14,
  auth = 15,
};

/// Protocol levels in CONNECT.
inline constexpr std::uint8_t v311 = 4;
inline constexpr std::uint8_t v5 = 5;

/// What is wrong with a packet. Each maps to one counted close reason.
enum class error : std::uint8_t {
  none,
  malformed_length,   ///< remaining length over 4 bytes
  too_large,          ///< the packet is larger than the limit
  malformed,          ///< a field runs past the packet, a reserved bit is set, a bad value
  bad_utf8,           ///< a string is not well-formed UTF-8, or holds U+0000
  wildcard_topic,     ///< '+' or '#' in a PUBLISH topic, or an empty topic
  protocol_error,     ///< well-formed, but not allowed here (QoS 3, an unknown packet type)
  unsupported_version ///< a CONNECT of a protocol level other than 4 and 5
};

enum class header_status { need_more, packet, error };

struct header_result {
  header_status status = header_status::need_more;
  error err = error::none;
  std::uint8_t first = 0;       ///< type (high nibble) and flags (low nibble)
  std::size_t header_bytes = 0; ///< fixed header: 1 + 1..4
  std::size_t remaining = 0;    ///< body bytes
  [[nodiscard]] std::size_t size() const noexcept { return header_bytes + remaining; }
  [[nodiscard]] packet_type type() const noexcept { return static_cast<packet_type>(first >> 4); }
  [[nodiscard]] std::uint8_t flags() const noexcept { return first & 0x0f; }
};

/// Decodes the fixed header at the start of `in`. need_more until the whole packet is in;
/// error for a fifth length byte or a packet above `max_packet` bytes, decided as soon as the
/// length bytes are in (before any of the body is needed). O(1).
[[nodiscard]] header_result try_decode_header(std::string_view in, std::size_t max_packet) noexcept;

/// An MQTT UTF-8 string (MQTT 3.1.1 1.5.3, 5.0 1.5.4): well-formed UTF-8 without U+0000.
[[nodiscard]] bool valid_mqtt_utf8(std::string_view s) noexcept;
/// A PUBLISH topic: 1..65535 bytes of valid UTF-8 without '+' or '#'.
[[nodiscard]] bool valid_topic_name(std::string_view s) noexcept;
/// A SUBSCRIBE filter: valid UTF-8, '+' alone in its level, '#' alone in the last level.
[[nodiscard]] bool valid_topic_filter(std::string_view s) noexcept;
/// Whether `filter` matches `topic` (both valid). Wildcards at the first level do not match
/// topics starting with '$' (MQTT 4.7.2).
[[nodiscard]] bool topic_matches(std::string_view filter, std::string_view topic) noexcept;
/// Whether every topic `inner` matches is matched by `outer` (both valid filters): what a
/// permission `outer` allows to subscribe.
[[nodiscard]] bool filter_covers(std::string_view outer, std::string_view inner) noexcept;

/// What an MQTT 5 PUBLISH (or will) carries for its receivers besides topic and payload.
struct message_properties {
  /// The property list as sent (without its length), every property checked: what a server
  /// passes on, through append_forwarded (which leaves out what it must not forward).
  std::string_view list;
  bool has_expiry = false;
  std::uint32_t expiry = 0; ///< Message Expiry Interval, seconds
};

struct will_message {
  std::string_view topic;
  std::string_view payload;
  std::uint8_t qos = 0;
  bool retain = false;
  message_properties props; ///< MQTT 5
  std::uint32_t delay = 0;  ///< Will Delay Interval, seconds (MQTT 5)
};

struct connect_packet {
  std::uint8_t version = v311;
  bool clean_start = false;
  std::uint16_t keep_alive = 0; ///< seconds, 0: none
  std::string_view client_id;
  bool has_will = false;
  will_message will;
  bool has_username = false;
  std::string_view username;
  bool has_password = false;
  std::string_view password;
  // MQTT 5 properties the broker honours; the rest are parsed and skipped.
  std::uint32_t session_expiry = 0;      ///< seconds
  std::uint16_t receive_maximum = 65535; ///< QoS 1 messages the client takes unacknowledged
  std::uint32_t maximum_packet_size = 0; ///< largest packet the client takes; 0: no limit
};

/// `body` is the CONNECT's variable header and payload. For unsupported_version `out.version`
/// holds the level the client asked for (the CONNACK must still be answered in kind).
[[nodiscard]] error parse_connect(std::string_view body, std::uint8_t flags,
                                  connect_packet& out) noexcept;

struct publish_packet {
  std::uint8_t qos = 0;
  bool retain = false;
  bool dup = false;
  std::string_view topic;
  std::uint16_t packet_id = 0;
  std::string_view payload;
  /// Offset of the payload in the packet's body.
  std::size_t payload_offset = 0;
  message_properties props; ///< MQTT 5
  /// Subscription Identifiers are in the properties: only servers send them (the broker refuses
  /// them from clients; a test reading what the broker sent parses them).
  bool has_subscription_id = false;
};

/// Topic aliases are a protocol error (the broker offers none: Topic Alias Maximum 0); a
/// Response Topic must be a topic name.
[[nodiscard]] error parse_publish(std::string_view body, std::uint8_t flags, std::uint8_t version,
                                  publish_packet& out) noexcept;

struct subscribe_entry {
  std::string_view filter;
  std::uint8_t qos = 0;
  bool no_local = false;
  bool retain_as_published = false;
  std::uint8_t retain_handling = 0; ///< 0: send retained, 1: only if new, 2: never
};

/// At most `max_entries` filters (more: malformed). `out` is cleared first. `subscription_id`,
/// when given, gets the packet's Subscription Identifier (MQTT 5; 0 when absent, which the
/// value 0 may not be).
[[nodiscard]] error parse_subscribe(std::string_view body, std::uint8_t flags, std::uint8_t version,
                                    std::size_t max_entries, std::uint16_t& packet_id,
                                    std::vector<subscribe_entry>& out,
                                    std::uint32_t* subscription_id = nullptr) noexcept;
[[nodiscard]] error parse_unsubscribe(std::string_view body, std::uint8_t flags,
                                      std::uint8_t version, std::size_t max_entries,
                                      std::uint16_t& packet_id,
                                      std::vector<std::string_view>& out) noexcept;
/// PUBACK, PUBREC, PUBREL or PUBCOMP: a packet id and, in MQTT 5, an optional reason (0 when
/// absent) and properties. `want_flags`: the fixed header's flags the type has (PUBREL 0x02, the
/// others 0).
[[nodiscard]] error parse_ack(std::string_view body, std::uint8_t flags, std::uint8_t want_flags,
                              std::uint8_t version, std::uint16_t& packet_id,
                              std::uint8_t& reason) noexcept;

struct disconnect_packet {
  std::uint8_t reason = 0; ///< 0 when absent (MQTT 3.1.1 has none)
  bool has_session_expiry = false;
  std::uint32_t session_expiry = 0; ///< MQTT 5: the client changes its session's expiry
};
[[nodiscard]] error parse_disconnect(std::string_view body, std::uint8_t flags,
                                     std::uint8_t version, disconnect_packet& out) noexcept;

/// Appends to `out` the properties of `list` (a checked property list) that a server forwards
/// unaltered to subscribers: Payload Format Indicator, Content Type, Response Topic, Correlation
/// Data and User Properties, in their order. Message Expiry (sent lowered by the time waited),
/// Will Delay, Topic Alias and Subscription Identifier are left out.
void append_forwarded(std::string& out, std::string_view list);

// Reason codes (MQTT 5; CONNACK return codes of 3.1.1 are separate).
namespace reason {
inline constexpr std::uint8_t success = 0x00;
inline constexpr std::uint8_t granted_qos1 = 0x01;
inline constexpr std::uint8_t disconnect_with_will = 0x04;
inline constexpr std::uint8_t no_subscription_existed = 0x11;
inline constexpr std::uint8_t no_matching_subscribers = 0x10;
inline constexpr std::uint8_t unspecified = 0x80;
inline constexpr std::uint8_t malformed_packet = 0x81;
inline constexpr std::uint8_t protocol_error = 0x82;
inline constexpr std::uint8_t unsupported_protocol_version = 0x84;
inline constexpr std::uint8_t client_id_not_valid = 0x85;
inline constexpr std::uint8_t bad_user_name_or_password = 0x86;
inline constexpr std::uint8_t not_authorized = 0x87;
inline constexpr std::uint8_t server_unavailable = 0x88;
inline constexpr std::uint8_t server_shutting_down = 0x8b;
inline constexpr std::uint8_t keep_alive_timeout = 0x8d;
inline constexpr std::uint8_t session_taken_over = 0x8e;
inline constexpr std::uint8_t topic_filter_invalid = 0x8f;
inline constexpr std::uint8_t topic_name_invalid = 0x90;
inline constexpr std::uint8_t packet_identifier_not_found = 0x92;
inline constexpr std::uint8_t receive_maximum_exceeded = 0x93;
inline constexpr std::uint8_t packet_too_large = 0x95;
inline constexpr std::uint8_t quota_exceeded = 0x97;
inline constexpr std::uint8_t qos_not_supported = 0x9b;
} // namespace reason

// MQTT 3.1.1 CONNACK return codes.
namespace v3_connack {
inline constexpr std::uint8_t accepted = 0x00;
inline constexpr std::uint8_t unacceptable_protocol = 0x01;
inline constexpr std::uint8_t identifier_rejected = 0x02;
inline constexpr std::uint8_t server_unavailable = 0x03;
inline constexpr std::uint8_t bad_user_name_or_password = 0x04;
inline constexpr std::uint8_t not_authorized = 0x05;
} // namespace v3_connack

/// What the broker tells an MQTT 5 client in CONNACK (besides: no topic aliases, by leaving
/// Topic Alias Maximum out; QoS 2, retained messages, wildcard and shared subscriptions and
/// subscription identifiers are all available, the properties' defaults).
struct connack_properties {
  std::uint32_t maximum_packet_size = 0;
  std::uint32_t session_expiry = 0;
  bool send_session_expiry = false; ///< the broker lowered the client's
  std::string_view assigned_client_id;
  std::uint16_t receive_maximum = 0; ///< 0: not sent (65535)
};

/// Bytes of the variable-length integer `n` (5 past 268435455, which MQTT cannot encode:
/// write_varint writes that many, so buffers stay safe though the packet is invalid).
[[nodiscard]] std::size_t varint_bytes(std::uint32_t n) noexcept;
/// Writes it at out; returns the position after it.
char* write_varint(char* out, std::uint32_t n) noexcept;

void append_connack(std::string& out, std::uint8_t version, bool session_present, std::uint8_t code,
                    const connack_properties& props);
/// PUBACK, PUBREC, PUBREL (flags 0x02) or PUBCOMP; MQTT 5 carries `code` when it is not 0.
void append_ack(std::string& out, packet_type type, std::uint8_t version, std::uint16_t packet_id,
                std::uint8_t code);
inline void append_puback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                          std::uint8_t code) {
  append_ack(out, packet_type::puback, version, packet_id, code);
}
void append_suback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                   std::span<const std::uint8_t> codes);
void append_unsuback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                     std::span<const std::uint8_t> codes);
void append_pingresp(std::string& out);
/// MQTT 5 only (3.1.1 servers close without one).
void append_disconnect(std::string& out, std::uint8_t code);

/// Size of a PUBLISH to a client of `version` (QoS 1 and 2 carry a packet id; MQTT 5 a property
/// list of `properties` bytes, 0 for an empty one, which MQTT 3.1.1 never has). Callers check
/// it against the limits they enforce.
[[nodiscard]] std::size_t publish_bytes(std::uint8_t version, std::size_t topic,
                                        std::size_t payload, std::uint8_t qos,
                                        std::size_t properties = 0) noexcept;
/// Writes a PUBLISH's fixed and variable header (everything before the payload) at `out`,
/// which has room for publish_bytes(...) - payload bytes; returns the position of the payload.
/// `properties`: the encoded property list (MQTT 5 only; ignored for 3.1.1).
char* write_publish_header(char* out, std::uint8_t version, std::string_view topic,
                           std::size_t payload, std::uint8_t qos, bool retain, bool dup,
                           std::uint16_t packet_id, std::string_view properties = {}) noexcept;
/// Message Expiry Interval and Subscription Identifier, as a server adds them to a PUBLISH.
void append_expiry_property(std::string& out, std::uint32_t seconds);
void append_subscription_id_property(std::string& out, std::uint32_t id);

} // namespace newsdesk::broker::mqtt
