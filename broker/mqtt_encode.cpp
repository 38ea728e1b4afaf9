// The encoding half of the MQTT codec (mqtt_codec.hpp): the packets the broker writes.
#include "broker/mqtt_codec.hpp"

#include <cstring>

namespace newsdesk::broker::mqtt {

namespace {

void put_u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_varint(std::string& out, std::uint32_t n) {
  char buf[4];
  const char* end = write_varint(buf, n);
  out.append(buf, static_cast<std::size_t>(end - buf));
}

} // namespace

std::size_t varint_bytes(std::uint32_t n) noexcept {
  // Past 268435455 MQTT has no encoding; counting the fifth byte write_varint then writes keeps
  // buffers sized by this function safe (only a max_frame_bytes above 256 MiB gets there).
  return n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : n < 268435456 ? 4 : 5;
}

char* write_varint(char* out, std::uint32_t n) noexcept {
  do {
    auto b = static_cast<unsigned char>(n & 0x7f);
    n >>= 7;
    if (n > 0)
      b |= 0x80;
    *out++ = static_cast<char>(b);
  } while (n > 0);
  return out;
}

void append_connack(std::string& out, std::uint8_t version, bool session_present, std::uint8_t code,
                    const connack_properties& props) {
  out.push_back(0x20);
  if (version != v5) {
    out.push_back(0x02);
    out.push_back(session_present ? 0x01 : 0x00);
    out.push_back(static_cast<char>(code));
    return;
  }
  // What is left out has the default a client needs: QoS 2, retained messages, wildcard and
  // shared subscriptions and subscription identifiers available; no topic aliases (maximum 0).
  std::string p;
  if (props.maximum_packet_size > 0) {
    p.push_back(0x27);
    put_u32(p, props.maximum_packet_size);
  }
  if (props.receive_maximum > 0) {
    p.push_back(0x21);
    put_u16(p, props.receive_maximum);
  }
  if (props.send_session_expiry) {
    p.push_back(0x11);
    put_u32(p, props.session_expiry);
  }
  if (!props.assigned_client_id.empty()) {
    p.push_back(0x12);
    put_u16(p, static_cast<std::uint16_t>(props.assigned_client_id.size()));
    p.append(props.assigned_client_id);
  }
  const auto body =
      static_cast<std::uint32_t>(2 + varint_bytes(static_cast<std::uint32_t>(p.size())) + p.size());
  put_varint(out, body);
  out.push_back(session_present ? 0x01 : 0x00);
  out.push_back(static_cast<char>(code));
  put_varint(out, static_cast<std::uint32_t>(p.size()));
  out.append(p);
}

void append_ack(std::string& out, packet_type type, std::uint8_t version, std::uint16_t packet_id,
                std::uint8_t code) {
  const auto t = static_cast<std::uint8_t>(type);
  out.push_back(static_cast<char>((t << 4) | (type == packet_type::pubrel ? 0x02 : 0x00)));
  const bool with_code = version == v5 && code != reason::success;
  out.push_back(with_code ? 0x03 : 0x02);
  put_u16(out, packet_id);
  if (with_code)
    out.push_back(static_cast<char>(code));
}

void append_suback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                   std::span<const std::uint8_t> codes) {
  out.push_back(static_cast<char>(0x90));
  const std::size_t props = version == v5 ? 1 : 0;
  put_varint(out, static_cast<std::uint32_t>(2 + props + codes.size()));
  put_u16(out, packet_id);
  if (props)
    out.push_back(0x00);
  for (const std::uint8_t c : codes)
    out.push_back(static_cast<char>(c));
}

void append_unsuback(std::string& out, std::uint8_t version, std::uint16_t packet_id,
                     std::span<const std::uint8_t> codes) {
  out.push_back(static_cast<char>(0xb0));
  if (version != v5) {
    out.push_back(0x02);
    put_u16(out, packet_id);
    return;
  }
  put_varint(out, static_cast<std::uint32_t>(3 + codes.size()));
  put_u16(out, packet_id);
  out.push_back(0x00);
  for (const std::uint8_t c : codes)
    out.push_back(static_cast<char>(c));
}

void append_pingresp(std::string& out) {
  out.push_back(static_cast<char>(0xd0));
  out.push_back(0x00);
}

void append_disconnect(std::string& out, std::uint8_t code) {
  out.push_back(static_cast<char>(0xe0));
  out.push_back(0x01);
  out.push_back(static_cast<char>(code));
}

std::size_t publish_bytes(std::uint8_t version, std::size_t topic, std::size_t payload,
                          std::uint8_t qos, std::size_t properties) noexcept {
  const std::size_t props =
      version == v5 ? varint_bytes(static_cast<std::uint32_t>(properties)) + properties : 0;
  const std::size_t body = 2 + topic + (qos > 0 ? 2 : 0) + props + payload;
  return 1 + varint_bytes(static_cast<std::uint32_t>(body)) + body;
}

char* write_publish_header(char* out, std::uint8_t version, std::string_view topic,
                           std::size_t payload, std::uint8_t qos, bool retain, bool dup,
                           std::uint16_t packet_id, std::string_view properties) noexcept {
  if (version != v5)
    properties = {};
  const std::size_t props =
      version == v5
          ? varint_bytes(static_cast<std::uint32_t>(properties.size())) + properties.size()
          : 0;
  const std::size_t body = 2 + topic.size() + (qos > 0 ? 2 : 0) + props + payload;
  *out++ = static_cast<char>(0x30 | (dup ? 0x08 : 0) | (qos << 1) | (retain ? 0x01 : 0));
  out = write_varint(out, static_cast<std::uint32_t>(body));
  *out++ = static_cast<char>(topic.size() >> 8);
  *out++ = static_cast<char>(topic.size() & 0xff);
  std::memcpy(out, topic.data(), topic.size());
  out += topic.size();
  if (qos > 0) {
    *out++ = static_cast<char>(packet_id >> 8);
    *out++ = static_cast<char>(packet_id & 0xff);
  }
  if (version == v5) {
    out = write_varint(out, static_cast<std::uint32_t>(properties.size()));
    if (!properties.empty())
      std::memcpy(out, properties.data(), properties.size());
    out += properties.size();
  }
  return out;
}

void append_expiry_property(std::string& out, std::uint32_t seconds) {
  out.push_back(0x02);
  put_u32(out, seconds);
}

void append_subscription_id_property(std::string& out, std::uint32_t id) {
  out.push_back(0x0b);
  put_varint(out, id);
}

} // namespace newsdesk::broker::mqtt
