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

[[nodiscard]] bool valid_utf8(std::string_view s) noexcept;
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

struct will_message {
  std::string_view topic;
  std::string_view payload;
  std::uint8_t qos = 0;
  bool retain = false;
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
};

/// QoS 2 is returned as such (the caller refuses it); topic aliases are a protocol error (the
/// broker offers none).
[[nodiscard]] error parse_publish(std::string_view body, std::uint8_t flags, std::uint8_t version,
                                  publish_packet& out) noexcept;

struct subscribe_entry {
  std::string_view filter;
  std::uint8_t qos = 0;
  bool no_local = false;
  bool retain_as_published = false;
  std::uint8_t retain_handling = 0; ///< 0: send retained, 1: only if new, 2: never
};

/// At most `max_entries` filters (more: malformed). `out` is cleared first.
[[nodiscard]] error parse_subscribe(std::string_view body, std::uint8_t flags, std::uint8_t version,
                                    std::size_t max_entries, std::uint16_t& packet_id,
                                    std::vector<subscribe_entry>& out) noexcept;
[[nodiscard]] error parse_unsubscribe(std::string_view body, std::uint8_t flags,
                                      std::uint8_t version, std::size_t max_entries,
                                      std::uint16_t& packet_id,
                                      std::vector<std::string_view>& out) noexcept;
/// PUBACK (and, by shape, any acknowledgement carrying a packet id and optional reason).
[[nodiscard]] error parse_puback(std::string_view body, std::uint8_t flags, std::uint8_t version,
                                 std::uint16_t& packet_id) noexcept;
/// DISCONNECT; `reason` 0 when absent (MQTT 3.1.1 has none).
[[nodiscard]] error parse_disconnect(std::string_view body, std::uint8_t flags,
                                     std::uint8_t version, std::uint8_t& reason) noexcept;

// Reason codes (MQTT 5; CONNACK return codes of 3.1.1 are separate).
namespace reason {
inline constexpr std::uint8_t success = 0x00;
inline constexpr std::uint8_t granted_qos1 = 0x01;
inline constexpr std::uint8_t disconnect_with_will = 0x04;
inline constexpr std::uint8_t no_subscription_existed = 0x11;
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
inline constexpr std::uint8_t packet_too_large = 0x95;
inline constexpr std::uint8_t quota_exceeded = 0x97;
inline constexpr std::uint8_t qos_not_supported = 0x9b;
inline constexpr std::uint8_t shared_subscriptions_not_supported = 0x9e;
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

/// What the broker tells an MQTT 5 client in CONNACK.
struct connack_properties {
  std::uint32_t maximum_packet_size = 0;
  std::uint32_t session_expiry = 0;
  bool send_session_expiry = false; ///< the broker lowered the client's
  std::string_view assigned_client_id;
};

/// Bytes of the variable-length integer `n` (5 past 268435455, which MQTT cannot encode:
/// write_varint writes that many, so buffers stay safe though the packet is invalid).
[[nodiscard]] std::size_t varint_bytes(std::uint32_t n) noexcept;
/// Writes it at out; returns the position after it.
char* write_varint(char* out, std::uint32_t n) noexcept;

void append_connack(std::string& out, std::uint8_t version, bool session_present, std::uint8_t code,
                    const connack_properties& props);
void append_puback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                   std::uint8_t code);
void append_suback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                   std::span<const std::uint8_t> codes);
void append_unsuback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                     std::span<const std::uint8_t> codes);
void append_pingresp(std::string& out);
/// MQTT 5 only (3.1.1 servers close without one).
void append_disconnect(std::string& out, std::uint8_t code);

/// Size of a PUBLISH to a client of `version` (QoS 1 carries a packet id; MQTT 5 an empty
/// property list). Callers check it against the limits they enforce.
[[nodiscard]] std::size_t publish_bytes(std::uint8_t version, std::size_t topic,
                                        std::size_t payload, std::uint8_t qos) noexcept;
/// Writes a PUBLISH's fixed and variable header (everything before the payload) at `out`,
/// which has room for publish_bytes(...) - payload bytes; returns the position of the payload.
char* write_publish_header(char* out, std::uint8_t version, std::string_view topic,
                           std::size_t payload, std::uint8_t qos, bool retain, bool dup,
                           std::uint16_t packet_id) noexcept;

} // namespace newsdesk::broker::mqtt
