#pragma once
// Test helpers for MQTT: a blocking raw-socket client that sends bytes the test builds (well
// formed or not) and reads packets back, packet builders, and where the real client programs
// (mosquitto_sub, mosquitto_pub, python3 with paho) are.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "broker/mqtt_codec.hpp"
#include "support.hpp"

namespace newsdesk::broker::test {

using namespace std::chrono_literals;

/// The full path of `name` on PATH, or "" when it is not installed.
inline std::string program_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

namespace mqtt_bytes {

inline void u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}
inline void str(std::string& out, std::string_view s) {
  u16(out, static_cast<std::uint16_t>(s.size()));
  out.append(s);
}
/// A packet: first byte, remaining length, body.
inline std::string packet(std::uint8_t first, std::string_view body) {
  std::string out(1, static_cast<char>(first));
  char len[4];
  const char* end = mqtt::write_varint(len, static_cast<std::uint32_t>(body.size()));
  out.append(len, static_cast<std::size_t>(end - len));
  out.append(body);
  return out;
}

struct connect_options {
  std::uint8_t version = mqtt::v311;
  std::string client_id;
  bool clean = true;
  std::uint16_t keep_alive = 60;
  std::optional<std::string> user;
  std::optional<std::string> password;
  std::optional<std::string> will_topic;
  std::string will_payload;
  std::uint8_t will_qos = 0;
  bool will_retain = false;
  std::string will_properties;       // MQTT 5: the will's property list, encoded
  std::uint32_t session_expiry = 0;  // MQTT 5
  std::uint16_t receive_maximum = 0; // MQTT 5; 0: not sent
};

/// MQTT 5 properties, encoded (each appends one to `out`).
inline void prop_u32(std::string& out, std::uint8_t id, std::uint32_t v) {
  out.push_back(static_cast<char>(id));
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}
inline void prop_str(std::string& out, std::uint8_t id, std::string_view v) {
  out.push_back(static_cast<char>(id));
  str(out, v);
}
inline void prop_pair(std::string& out, std::string_view k, std::string_view v) {
  out.push_back(0x26);
  str(out, k);
  str(out, v);
}
inline void prop_varint(std::string& out, std::uint8_t id, std::uint32_t v) {
  out.push_back(static_cast<char>(id));
  char buf[4];
  const char* end = mqtt::write_varint(buf, v);
  out.append(buf, static_cast<std::size_t>(end - buf));
}
/// A property list: its length, then `props`.
inline std::string prop_list(std::string_view props) {
  std::string out;
  char buf[4];
  const char* end = mqtt::write_varint(buf, static_cast<std::uint32_t>(props.size()));
  out.append(buf, static_cast<std::size_t>(end - buf));
  out.append(props);
  return out;
}

inline std::string connect(const connect_options& o) {
  std::string b;
  str(b, "MQTT");
  b.push_back(static_cast<char>(o.version));
  std::uint8_t flags = o.clean ? 0x02 : 0x00;
  if (o.will_topic)
    flags |= static_cast<std::uint8_t>(0x04 | (o.will_qos << 3) | (o.will_retain ? 0x20 : 0));
  if (o.password)
    flags |= 0x40;
  if (o.user)
    flags |= 0x80;
  b.push_back(static_cast<char>(flags));
  u16(b, o.keep_alive);
  if (o.version == mqtt::v5) {
    std::string props;
    if (o.session_expiry > 0)
      prop_u32(props, 0x11, o.session_expiry);
    if (o.receive_maximum > 0) {
      props.push_back(0x21);
      u16(props, o.receive_maximum);
    }
    b += prop_list(props);
  }
  str(b, o.client_id);
  if (o.will_topic) {
    if (o.version == mqtt::v5)
      b += prop_list(o.will_properties);
    str(b, *o.will_topic);
    str(b, o.will_payload);
  }
  if (o.user)
    str(b, *o.user);
  if (o.password)
    str(b, *o.password);
  return packet(0x10, b);
}

inline std::string subscribe(std::uint16_t id, std::string_view filter, std::uint8_t qos,
                             std::uint8_t version = mqtt::v311) {
  std::string b;
  u16(b, id);
  if (version == mqtt::v5)
    b.push_back(0);
  str(b, filter);
  b.push_back(static_cast<char>(qos));
  return packet(0x82, b);
}

/// MQTT 5 SUBSCRIBE with the options byte as given (QoS, No Local 0x04, Retain As Published
/// 0x08, Retain Handling << 4) and a Subscription Identifier (0: none).
inline std::string subscribe5(std::uint16_t id, std::string_view filter, std::uint8_t options,
                              std::uint32_t subscription_id = 0) {
  std::string b;
  u16(b, id);
  std::string props;
  if (subscription_id)
    prop_varint(props, 0x0b, subscription_id);
  b += prop_list(props);
  str(b, filter);
  b.push_back(static_cast<char>(options));
  return packet(0x82, b);
}

inline std::string unsubscribe(std::uint16_t id, std::string_view filter,
                               std::uint8_t version = mqtt::v311) {
  std::string b;
  u16(b, id);
  if (version == mqtt::v5)
    b.push_back(0);
  str(b, filter);
  return packet(0xa2, b);
}

inline std::string publish(std::string_view topic, std::string_view payload, std::uint8_t qos = 0,
                           std::uint16_t id = 0, bool retain = false,
                           std::uint8_t version = mqtt::v311) {
  std::string b;
  str(b, topic);
  if (qos > 0)
    u16(b, id);
  if (version == mqtt::v5)
    b.push_back(0);
  b.append(payload);
  return packet(static_cast<std::uint8_t>(0x30 | (qos << 1) | (retain ? 1 : 0)), b);
}

/// MQTT 5 PUBLISH with the property list `props` (encoded, without its length).
inline std::string publish5(std::string_view topic, std::string_view payload, std::uint8_t qos,
                            std::uint16_t id, std::string_view props, bool retain = false) {
  std::string b;
  str(b, topic);
  if (qos > 0)
    u16(b, id);
  b += prop_list(props);
  b.append(payload);
  return packet(static_cast<std::uint8_t>(0x30 | (qos << 1) | (retain ? 1 : 0)), b);
}

inline std::string puback(std::uint16_t id) {
  std::string b;
  u16(b, id);
  return packet(0x40, b);
}
inline std::string pubrec(std::uint16_t id) {
  std::string b;
  u16(b, id);
  return packet(0x50, b);
}
inline std::string pubrel(std::uint16_t id) {
  std::string b;
  u16(b, id);
  return packet(0x62, b);
}
inline std::string pubcomp(std::uint16_t id) {
  std::string b;
  u16(b, id);
  return packet(0x70, b);
}
/// A QoS 2 PUBLISH sent again: DUP set.
inline std::string publish_dup(std::string_view topic, std::string_view payload, std::uint16_t id) {
  std::string p = publish(topic, payload, 2, id);
  p[0] = static_cast<char>(p[0] | 0x08);
  return p;
}

inline std::string pingreq() {
  return std::string("\xc0\x00", 2);
}

inline std::string disconnect() {
  return std::string("\xe0\x00", 2);
}

} // namespace mqtt_bytes

/// One packet as read: its first byte and body.
struct mqtt_packet {
  std::uint8_t first = 0;
  std::string body;
  [[nodiscard]] mqtt::packet_type type() const {
    return static_cast<mqtt::packet_type>(first >> 4);
  }
};

/// The parts of a PUBLISH the broker sent (3.1.1 layout, or 5 with an empty property list).
struct received_publish {
  std::string topic;
  std::string payload;
  std::uint8_t qos = 0;
  bool retain = false;
  bool dup = false;
  std::uint16_t id = 0;
  std::string properties; // MQTT 5: the property list, encoded
  bool has_expiry = false;
  std::uint32_t expiry = 0;
};

inline received_publish parse_received(const mqtt_packet& p, std::uint8_t version) {
  received_publish r;
  r.qos = (p.first >> 1) & 3;
  r.retain = (p.first & 1) != 0;
  r.dup = (p.first & 8) != 0;
  mqtt::publish_packet pp;
  if (mqtt::parse_publish(p.body, p.first & 0x0f, version, pp) != mqtt::error::none)
    throw std::runtime_error("broker sent a malformed PUBLISH");
  r.topic = std::string(pp.topic);
  r.payload = std::string(pp.payload);
  r.id = pp.packet_id;
  r.properties = std::string(pp.props.list);
  r.has_expiry = pp.props.has_expiry;
  r.expiry = pp.props.expiry;
  return r;
}

/// A TCP connection to 127.0.0.1:port from the loopback address `from` (127.0.0.2 and up are
/// other client addresses on the same machine, as the broker sees them).
inline int connect_from(const char* from, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<const sockaddr*>(&remote), sizeof remote) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("connect from " + std::string(from) + ": " + why);
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/// A blocking MQTT client on a plain socket, with timeouts; it sends what the test gives it.
class mqtt_raw {
 public:
  explicit mqtt_raw(std::uint16_t port)
      : fd_(connect_nodelay(port)) {}
  /// From loopback address `from` (connect_from).
  mqtt_raw(const char* from, std::uint16_t port)
      : fd_(connect_from(from, port)) {}
  mqtt_raw(const mqtt_raw&) = delete;
  mqtt_raw& operator=(const mqtt_raw&) = delete;
  ~mqtt_raw() { close(); }

  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  /// False when the broker has closed the connection already.
  bool send(std::string_view bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }

  /// The next packet, or nullopt on timeout, EOF or error.
  std::optional<mqtt_packet> read(std::chrono::milliseconds timeout = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto h = mqtt::try_decode_header(buf_, 1 << 28);
      if (h.status == mqtt::header_status::packet) {
        mqtt_packet p{h.first, buf_.substr(h.header_bytes, h.remaining)};
        buf_.erase(0, h.size());
        return p;
      }
      if (h.status == mqtt::header_status::error || !fill(end))
        return std::nullopt;
    }
  }

  /// Connects and returns the CONNACK's reason code (its second body byte), or -1.
  int handshake(const mqtt_bytes::connect_options& o) {
    send(mqtt_bytes::connect(o));
    const auto p = read();
    if (!p || p->type() != mqtt::packet_type::connack || p->body.size() < 2)
      return -1;
    session_present = (p->body[0] & 1) != 0;
    return static_cast<unsigned char>(p->body[1]);
  }

  /// Subscribes and returns SUBACK's first code, or -1.
  int subscribe(std::uint16_t id, std::string_view filter, std::uint8_t qos,
                std::uint8_t version = mqtt::v311) {
    send(mqtt_bytes::subscribe(id, filter, qos, version));
    const auto p = read();
    if (!p || p->type() != mqtt::packet_type::suback)
      return -1;
    const std::size_t at = version == mqtt::v5 ? 3 : 2;
    return p->body.size() > at ? static_cast<unsigned char>(p->body[at]) : -1;
  }

  /// The next PUBLISH (skipping nothing: another packet type is an error), or nullopt.
  std::optional<received_publish> next_publish(std::uint8_t version = mqtt::v311,
                                               std::chrono::milliseconds timeout = 5000ms) {
    const auto p = read(timeout);
    if (!p || p->type() != mqtt::packet_type::publish)
      return std::nullopt;
    return parse_received(*p, version);
  }

  /// True once the broker closed the connection (EOF or reset), discarding data meanwhile.
  bool wait_closed(std::chrono::milliseconds timeout = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (fill(end))
      buf_.clear();
    return eof_;
  }

  bool session_present = false;

 private:
  bool fill(std::chrono::steady_clock::time_point end) {
    if (fd_ < 0 || eof_)
      return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return false;
    char tmp[65536];
    const auto n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string buf_;
};

} // namespace newsdesk::broker::test
