// libFuzzer target: the broker's MQTT codec (broker/mqtt_codec.hpp) on arbitrary bytes, read
// the way an MQTT connection reads them: fixed headers in a stream, each packet's body handed to
// the parser of its type, in both protocol versions.
//
// Input: byte 0 picks the packet size limit and the protocol version, byte 1 seeds the chunk
// sizes, the rest is the stream. Checked for every input:
//  - a header is an error as soon as a fifth length byte or an oversized length is in: a
//    decoder never holds more than the limit of one packet;
//  - need_more never asks for a packet larger than the limit;
//  - every view a parser returns lies inside the packet's body; strings it accepts are UTF-8;
//    a PUBLISH topic it accepts has no wildcard; filters it accepts are well-formed as a whole
//    or refused later by valid_topic_filter, never read out of bounds;
//  - an accepted PUBLISH re-encodes (write_publish_header + payload, with the properties the
//    broker forwards) to a packet that parses to the same topic, payload, QoS, packet id and
//    forwarded properties;
//  - chunking changes nothing: the packets and the verdict equal a one-shot decode.
#include "broker/mqtt_codec.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace newsdesk::broker::mqtt;

void require(bool ok) {
  if (!ok)
    std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

// Parses one packet body by its type and checks what the parser claims.
void parse_one(const header_result& h, std::string_view body, std::uint8_t version) {
  switch (h.type()) {
  case packet_type::connect: {
    connect_packet c;
    if (parse_connect(body, h.flags(), c) == error::none) {
      require(inside(c.client_id, body) && valid_mqtt_utf8(c.client_id));
      require(inside(c.username, body) && inside(c.password, body));
      require(!c.has_will || (inside(c.will.topic, body) && valid_topic_name(c.will.topic)));
      require(c.version == v311 || c.version == v5);
    }
    break;
  }
  case packet_type::publish: {
    publish_packet p;
    if (parse_publish(body, h.flags(), version, p) == error::none) {
      require(inside(p.topic, body) && inside(p.payload, body));
      require(valid_topic_name(p.topic));
      require(p.qos <= 2 && (p.qos == 0 || p.packet_id != 0));
      require(p.payload_offset + p.payload.size() == body.size());
      // Re-encode (as the broker does for its subscribers, with the properties it forwards and
      // the expiry it lowers) and parse again.
      const std::uint8_t qos = p.qos;
      std::string props;
      append_forwarded(props, p.props.list);
      if (p.props.has_expiry)
        append_expiry_property(props, p.props.expiry);
      std::string out(publish_bytes(version, p.topic.size(), p.payload.size(), qos, props.size()),
                      '\0');
      char* at = write_publish_header(out.data(), version, p.topic, p.payload.size(), qos, p.retain,
                                      false, p.packet_id, props);
      require(static_cast<std::size_t>(at - out.data()) + p.payload.size() == out.size());
      std::memcpy(at, p.payload.data(), p.payload.size());
      const auto again = try_decode_header(out, out.size());
      require(again.status == header_status::packet && again.size() == out.size());
      publish_packet q;
      require(parse_publish(std::string_view(out).substr(again.header_bytes), again.flags(),
                            version, q) == error::none);
      require(q.topic == p.topic && q.payload == p.payload && q.qos == qos &&
              q.retain == p.retain && (qos == 0 || q.packet_id == p.packet_id));
      if (version == v5) { // forwarded once, the properties are what forwarding keeps
        std::string again_props;
        append_forwarded(again_props, q.props.list);
        std::string first_props;
        append_forwarded(first_props, p.props.list);
        require(again_props == first_props && q.props.has_expiry == p.props.has_expiry &&
                q.props.expiry == p.props.expiry);
      }
    }
    break;
  }
  case packet_type::subscribe: {
    std::uint16_t id = 0;
    std::vector<subscribe_entry> entries;
    if (parse_subscribe(body, h.flags(), version, 16, id, entries) == error::none) {
      require(id != 0 && !entries.empty() && entries.size() <= 16);
      for (const auto& e : entries) {
        require(inside(e.filter, body) && valid_mqtt_utf8(e.filter) && e.qos <= 2);
        (void)valid_topic_filter(e.filter);
        (void)filter_covers("newsdesk/#", e.filter);
      }
    }
    break;
  }
  case packet_type::unsubscribe: {
    std::uint16_t id = 0;
    std::vector<std::string_view> filters;
    if (parse_unsubscribe(body, h.flags(), version, 16, id, filters) == error::none)
      for (const auto f : filters)
        require(inside(f, body) && valid_mqtt_utf8(f));
    break;
  }
  case packet_type::puback:
  case packet_type::pubrec:
  case packet_type::pubrel:
  case packet_type::pubcomp: {
    std::uint16_t id = 0;
    std::uint8_t code = 0;
    const std::uint8_t want = h.type() == packet_type::pubrel ? 0x02 : 0x00;
    if (parse_ack(body, h.flags(), want, version, id, code) == error::none)
      require(id != 0 && (version == v5 || code == 0));
    break;
  }
  case packet_type::disconnect: {
    disconnect_packet d;
    (void)parse_disconnect(body, h.flags(), version, d);
    break;
  }
  default:
    break;
  }
}

struct outcome {
  std::vector<std::string> packets;
  bool error = false;
};

// Decodes `buffer` from `pos` on; true when the stream must be closed.
bool decode_available(const std::string& buffer, std::size_t& pos, std::size_t max_packet,
                      std::uint8_t version, outcome& out) {
  for (;;) {
    const std::string_view rest(buffer.data() + pos, buffer.size() - pos);
    const auto h = try_decode_header(rest, max_packet);
    switch (h.status) {
    case header_status::packet:
      require(h.size() <= rest.size() && h.size() <= max_packet);
      require(h.header_bytes >= 2 && h.header_bytes <= 5);
      parse_one(h, rest.substr(h.header_bytes, h.remaining), version);
      out.packets.emplace_back(rest.substr(0, h.size()));
      pos += h.size();
      break;
    case header_status::need_more:
      require(h.header_bytes == 0 || h.size() > rest.size());
      require(h.header_bytes == 0 || h.size() <= max_packet);
      return false;
    case header_status::error:
      require(h.err == error::malformed_length || h.err == error::too_large);
      out.error = true;
      return true;
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  static constexpr std::size_t limits[] = {2, 16, 300, 1024 * 1024};
  const std::size_t max_packet = limits[data[0] % std::size(limits)];
  const std::uint8_t version = (data[0] & 0x80) ? v5 : v311;
  std::uint32_t seed = data[1] | 0x100u;
  const std::string_view stream(reinterpret_cast<const char*>(data + 2), size - 2);

  outcome whole;
  {
    const std::string buffer(stream);
    std::size_t pos = 0;
    decode_available(buffer, pos, max_packet, version, whole);
  }

  outcome chunked;
  std::string held;
  std::size_t offset = 0;
  while (offset < stream.size() && !chunked.error) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    std::size_t n = (seed % 8 == 0) ? 4096 : 1 + seed % 16;
    n = std::min(n, stream.size() - offset);
    held.append(stream.substr(offset, n));
    offset += n;
    std::size_t pos = 0;
    if (decode_available(held, pos, max_packet, version, chunked))
      break;
    held.erase(0, pos);
    require(held.size() < max_packet + 5);
  }

  require(whole.error == chunked.error);
  require(whole.packets == chunked.packets);
  return 0;
}
