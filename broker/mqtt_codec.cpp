#include "broker/mqtt_codec.hpp"

#include "server/core/utf8.hpp"

#include <cstring>

namespace newsdesk::broker::mqtt {

namespace {

// Reads fields from a packet body; any read past the end turns `ok` false and yields zeros, so
// a parser checks `ok` once per field group instead of before every byte.
class reader {
 public:
  explicit reader(std::string_view s) noexcept
      : p_(reinterpret_cast<const unsigned char*>(s.data()))
      , end_(p_ + s.size())
      , begin_(p_) {}

  bool ok = true;

  [[nodiscard]] std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - p_); }
  [[nodiscard]] std::size_t offset() const noexcept {
    return static_cast<std::size_t>(p_ - begin_);
  }

  std::uint8_t u8() noexcept {
    if (left() < 1)
      return fail<std::uint8_t>();
    return *p_++;
  }
  std::uint16_t u16() noexcept {
    if (left() < 2)
      return fail<std::uint16_t>();
    const auto v = static_cast<std::uint16_t>((p_[0] << 8) | p_[1]);
    p_ += 2;
    return v;
  }
  std::uint32_t u32() noexcept {
    if (left() < 4)
      return fail<std::uint32_t>();
    const std::uint32_t v = (std::uint32_t{p_[0]} << 24) | (std::uint32_t{p_[1]} << 16) |
                            (std::uint32_t{p_[2]} << 8) | std::uint32_t{p_[3]};
    p_ += 4;
    return v;
  }
  // At most 4 bytes, as every MQTT variable-length integer.
  std::uint32_t varint() noexcept {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      if (left() < 1)
        return fail<std::uint32_t>();
      const std::uint8_t b = *p_++;
      v |= std::uint32_t{b & 0x7fu} << (7 * i);
      if ((b & 0x80) == 0)
        return v;
    }
    return fail<std::uint32_t>();
  }
  std::string_view bytes(std::size_t n) noexcept {
    if (left() < n)
      return fail<std::string_view>();
    const std::string_view v(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return v;
  }
  /// A length-prefixed field (string or binary data).
  std::string_view field() noexcept { return bytes(u16()); }
  std::string_view rest() noexcept { return bytes(left()); }

 private:
  template <class T> T fail() noexcept {
    ok = false;
    p_ = end_;
    return T{};
  }

  const unsigned char* p_;
  const unsigned char* end_;
  const unsigned char* begin_;
};

// The MQTT 5 properties the broker acts on; every other one is checked and skipped.
struct properties {
  std::string_view list; // the whole list, without its length
  bool session_expiry_set = false;
  std::uint32_t session_expiry = 0;
  bool receive_maximum_set = false;
  std::uint16_t receive_maximum = 0;
  std::uint32_t maximum_packet_size = 0;
  bool topic_alias = false;
  bool authentication_method = false;
  bool message_expiry_set = false;
  std::uint32_t message_expiry = 0;
  std::uint32_t will_delay = 0;
  std::uint32_t subscription_id = 0;
};

// Reads a property list (its length, then the properties) and checks each one's type, bounds
// and that it comes once (user properties may repeat, and a server's PUBLISH may carry several
// subscription identifiers). Unknown identifiers are malformed: a
// property's length depends on its identifier, so one we do not know cannot be skipped.
error read_properties(reader& r, properties& out) {
  const std::uint32_t length = r.varint();
  if (!r.ok || length > r.left())
    return error::malformed;
  out.list = r.bytes(length);
  reader pr(out.list);
  std::uint64_t seen = 0; // identifiers are below 64
  while (pr.ok && pr.left() > 0) {
    const std::uint32_t id = pr.varint();
    if (id < 64 && id != 0x26 && id != 0x0b) {
      if (seen & (std::uint64_t{1} << id))
        return error::protocol_error;
      seen |= std::uint64_t{1} << id;
    }
    switch (id) {
    case 0x01: // payload format indicator: 0 (bytes) or 1 (UTF-8)
      if (pr.u8() > 1)
        return error::protocol_error;
      break;
    case 0x17: // request problem information
    case 0x19: // request response information
    case 0x24: // maximum QoS
    case 0x25: // retain available
    case 0x28: // wildcard subscription available
    case 0x29: // subscription identifiers available
    case 0x2a: // shared subscription available
      pr.u8();
      break;
    case 0x13: // server keep alive
    case 0x22: // topic alias maximum
      pr.u16();
      break;
    case 0x21: // receive maximum
      out.receive_maximum = pr.u16();
      out.receive_maximum_set = true;
      if (pr.ok && out.receive_maximum == 0)
        return error::protocol_error;
      break;
    case 0x23: // topic alias
      pr.u16();
      out.topic_alias = true;
      break;
    case 0x02: // message expiry interval
      out.message_expiry = pr.u32();
      out.message_expiry_set = true;
      break;
    case 0x18: // will delay interval
      out.will_delay = pr.u32();
      break;
    case 0x11: // session expiry interval
      out.session_expiry = pr.u32();
      out.session_expiry_set = true;
      break;
    case 0x27: // maximum packet size
      out.maximum_packet_size = pr.u32();
      if (pr.ok && out.maximum_packet_size == 0)
        return error::protocol_error;
      break;
    case 0x0b: // subscription identifier: 1 to 268435455
      out.subscription_id = pr.varint();
      if (pr.ok && out.subscription_id == 0)
        return error::protocol_error;
      break;
    case 0x08: { // response topic: a topic name
      const std::string_view topic = pr.field();
      if (!valid_mqtt_utf8(topic))
        return pr.ok ? error::bad_utf8 : error::malformed;
      if (!valid_topic_name(topic))
        return error::protocol_error;
      break;
    }
    case 0x15: // authentication method
      out.authentication_method = true;
      [[fallthrough]];
    case 0x03: // content type
    case 0x12: // assigned client identifier
    case 0x1a: // response information
    case 0x1c: // server reference
    case 0x1f: // reason string
      if (!valid_mqtt_utf8(pr.field()))
        return pr.ok ? error::bad_utf8 : error::malformed;
      break;
    case 0x09: // correlation data
    case 0x16: // authentication data
      pr.field();
      break;
    case 0x26: // user property: a string pair
      if (!valid_mqtt_utf8(pr.field()) || !valid_mqtt_utf8(pr.field()))
        return pr.ok ? error::bad_utf8 : error::malformed;
      break;
    default:
      return error::malformed;
    }
  }
  return pr.ok ? error::none : error::malformed;
}

error skip_properties(reader& r) {
  properties ignored;
  return read_properties(r, ignored);
}

// A UTF-8 string field, checked.
error read_string(reader& r, std::string_view& out) {
  out = r.field();
  if (!r.ok)
    return error::malformed;
  return valid_mqtt_utf8(out) ? error::none : error::bad_utf8;
}

} // namespace

header_result try_decode_header(std::string_view in, std::size_t max_packet) noexcept {
  header_result r;
  if (in.size() < 2)
    return r;
  const auto* u = reinterpret_cast<const unsigned char*>(in.data());
  r.first = u[0];
  std::size_t remaining = 0;
  std::size_t i = 1;
  for (;; ++i) {
    if (i > 4) { // a fifth length byte: the specification allows four
      r.status = header_status::error;
      r.err = error::malformed_length;
      return r;
    }
    if (i >= in.size())
      return r; // need the next length byte
    const unsigned char b = u[i];
    remaining |= static_cast<std::size_t>(b & 0x7f) << (7 * (i - 1));
    if ((b & 0x80) == 0)
      break;
  }
  r.header_bytes = i + 1;
  r.remaining = remaining;
  // Checked before the body is waited for: an oversized announcement costs nothing.
  if (r.size() > max_packet) {
    r.status = header_status::error;
    r.err = error::too_large;
    return r;
  }
  if (in.size() >= r.size())
    r.status = header_status::packet;
  return r;
}

bool valid_mqtt_utf8(std::string_view s) noexcept {
  return s.find('\0') == std::string_view::npos && newsdesk::server::valid_utf8(s);
}

bool valid_topic_name(std::string_view s) noexcept {
  return !s.empty() && s.find_first_of("+#") == std::string_view::npos && valid_mqtt_utf8(s);
}

bool valid_topic_filter(std::string_view s) noexcept {
  if (s.empty() || !valid_mqtt_utf8(s))
    return false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = s.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? s.size() : slash;
    const std::string_view level = s.substr(start, end - start);
    if (level.find_first_of("+#") != std::string_view::npos) {
      if (level.size() != 1)
        return false;
      if (level == "#" && end != s.size())
        return false;
    }
    if (slash == std::string_view::npos)
      return true;
    start = slash + 1;
  }
}

namespace {

// Splits off the next level of `s` at `pos`: [pos, end) and whether it was the last.
std::string_view level_at(std::string_view s, std::size_t pos, std::size_t& next, bool& last) {
  const std::size_t slash = s.find('/', pos);
  last = slash == std::string_view::npos;
  const std::size_t end = last ? s.size() : slash;
  next = end + 1;
  return s.substr(pos, end - pos);
}

} // namespace

bool topic_matches(std::string_view filter, std::string_view topic) noexcept {
  if (!topic.empty() && topic.front() == '$' && !filter.empty() &&
      (filter.front() == '+' || filter.front() == '#'))
    return false;
  std::size_t f = 0;
  std::size_t t = 0;
  for (;;) {
    bool f_last = false;
    bool t_last = false;
    std::size_t f_next = 0;
    std::size_t t_next = 0;
    const std::string_view fl = level_at(filter, f, f_next, f_last);
    if (fl == "#")
      return true;
    const std::string_view tl = level_at(topic, t, t_next, t_last);
    if (fl != "+" && fl != tl)
      return false;
    if (f_last)
      return t_last;
    if (t_last) // "a/#" also matches "a": the parent level
      return filter.substr(f_next) == "#";
    f = f_next;
    t = t_next;
  }
}

bool filter_covers(std::string_view outer, std::string_view inner) noexcept {
  if (!inner.empty() && inner.front() == '$' && !outer.empty() &&
      (outer.front() == '+' || outer.front() == '#'))
    return false;
  std::size_t o = 0;
  std::size_t i = 0;
  for (;;) {
    bool o_last = false;
    bool i_last = false;
    std::size_t o_next = 0;
    std::size_t i_next = 0;
    const std::string_view ol = level_at(outer, o, o_next, o_last);
    if (ol == "#")
      return true;
    const std::string_view il = level_at(inner, i, i_next, i_last);
    if (il == "#")
      return false; // only '#' covers '#'
    if (ol != "+" && (il == "+" || ol != il))
      return false;
    if (o_last)
      return i_last;
    if (i_last)
      return outer.substr(o_next) == "#";
    o = o_next;
    i = i_next;
  }
}

error parse_connect(std::string_view body, std::uint8_t flags, connect_packet& out) noexcept {
  if (flags != 0)
    return error::malformed;
  reader r(body);
  const std::string_view name = r.field();
  const std::uint8_t level = r.u8();
  const std::uint8_t cf = r.u8();
  out.keep_alive = r.u16();
  if (!r.ok)
    return error::malformed;
  out.version = level;
  if (name != "MQTT")
    return name == "MQIsdp" ? error::unsupported_version : error::malformed;
  if (level != v311 && level != v5)
    return error::unsupported_version;
  if (cf & 0x01) // reserved
    return error::malformed;
  out.clean_start = (cf & 0x02) != 0;
  out.has_will = (cf & 0x04) != 0;
  out.will.qos = static_cast<std::uint8_t>((cf >> 3) & 0x03);
  out.will.retain = (cf & 0x20) != 0;
  out.has_password = (cf & 0x40) != 0;
  out.has_username = (cf & 0x80) != 0;
  if (out.will.qos == 3 || (!out.has_will && (out.will.qos != 0 || out.will.retain)))
    return error::malformed;
  if (level == v311 && out.has_password && !out.has_username)
    return error::malformed;
  if (level == v5) {
    properties p;
    if (const error e = read_properties(r, p); e != error::none)
      return e;
    if (p.authentication_method) // enhanced authentication is not offered
      return error::protocol_error;
    out.session_expiry = p.session_expiry;
    if (p.receive_maximum_set)
      out.receive_maximum = p.receive_maximum;
    out.maximum_packet_size = p.maximum_packet_size;
  }
  if (const error e = read_string(r, out.client_id); e != error::none)
    return e;
  if (out.has_will) {
    if (level == v5) {
      properties p;
      if (const error e = read_properties(r, p); e != error::none)
        return e;
      if (p.topic_alias || p.subscription_id != 0)
        return error::protocol_error;
      out.will.props = {p.list, p.message_expiry_set, p.message_expiry};
      out.will.delay = p.will_delay;
    }
    if (const error e = read_string(r, out.will.topic); e != error::none)
      return e;
    if (!valid_topic_name(out.will.topic))
      return error::wildcard_topic;
    out.will.payload = r.field();
  }
  if (out.has_username)
    if (const error e = read_string(r, out.username); e != error::none)
      return e;
  if (out.has_password)
    out.password = r.field();
  if (!r.ok || r.left() != 0)
    return error::malformed;
  return error::none;
}

error parse_publish(std::string_view body, std::uint8_t flags, std::uint8_t version,
                    publish_packet& out) noexcept {
  out.retain = (flags & 0x01) != 0;
  out.qos = static_cast<std::uint8_t>((flags >> 1) & 0x03);
  out.dup = (flags & 0x08) != 0;
  if (out.qos == 3)
    return error::malformed;
  reader r(body);
  out.topic = r.field();
  if (!r.ok)
    return error::malformed;
  if (out.qos > 0) {
    out.packet_id = r.u16();
    if (!r.ok || out.packet_id == 0)
      return error::malformed;
  }
  if (version == v5) {
    properties p;
    if (const error e = read_properties(r, p); e != error::none)
      return e;
    if (p.topic_alias) // the broker offers no topic aliases (Topic Alias Maximum 0)
      return error::protocol_error;
    out.props = {p.list, p.message_expiry_set, p.message_expiry};
    out.has_subscription_id = p.subscription_id != 0;
  }
  if (!valid_mqtt_utf8(out.topic))
    return error::bad_utf8;
  if (!valid_topic_name(out.topic))
    return error::wildcard_topic;
  out.payload_offset = r.offset();
  out.payload = r.rest();
  return error::none;
}

error parse_subscribe(std::string_view body, std::uint8_t flags, std::uint8_t version,
                      std::size_t max_entries, std::uint16_t& packet_id,
                      std::vector<subscribe_entry>& out, std::uint32_t* subscription_id) noexcept {
  out.clear();
  if (subscription_id)
    *subscription_id = 0;
  if (flags != 0x02)
    return error::malformed;
  reader r(body);
  packet_id = r.u16();
  if (!r.ok || packet_id == 0)
    return error::malformed;
  if (version == v5) {
    properties p;
    if (const error e = read_properties(r, p); e != error::none)
      return e;
    if (subscription_id)
      *subscription_id = p.subscription_id;
  }
  while (r.left() > 0) {
    if (out.size() >= max_entries)
      return error::malformed;
    subscribe_entry s;
    if (const error e = read_string(r, s.filter); e != error::none)
      return e;
    const std::uint8_t o = r.u8();
    if (!r.ok)
      return error::malformed;
    s.qos = o & 0x03;
    if (version == v5) {
      s.no_local = (o & 0x04) != 0;
      s.retain_as_published = (o & 0x08) != 0;
      s.retain_handling = static_cast<std::uint8_t>((o >> 4) & 0x03);
      if ((o & 0xc0) != 0 || s.retain_handling == 3)
        return error::malformed;
    } else if ((o & 0xfc) != 0) {
      return error::malformed;
    }
    if (s.qos == 3)
      return error::malformed;
    out.push_back(s);
  }
  return out.empty() ? error::protocol_error : error::none;
}

error parse_unsubscribe(std::string_view body, std::uint8_t flags, std::uint8_t version,
                        std::size_t max_entries, std::uint16_t& packet_id,
                        std::vector<std::string_view>& out) noexcept {
  out.clear();
  if (flags != 0x02)
    return error::malformed;
  reader r(body);
  packet_id = r.u16();
  if (!r.ok || packet_id == 0)
    return error::malformed;
  if (version == v5)
    if (const error e = skip_properties(r); e != error::none)
      return e;
  while (r.left() > 0) {
    if (out.size() >= max_entries)
      return error::malformed;
    std::string_view f;
    if (const error e = read_string(r, f); e != error::none)
      return e;
    out.push_back(f);
  }
  return out.empty() ? error::protocol_error : error::none;
}

error parse_ack(std::string_view body, std::uint8_t flags, std::uint8_t want_flags,
                std::uint8_t version, std::uint16_t& packet_id, std::uint8_t& reason) noexcept {
  reason = 0;
  if (flags != want_flags)
    return error::malformed;
  reader r(body);
  packet_id = r.u16();
  if (!r.ok || packet_id == 0)
    return error::malformed;
  if (version == v5 && r.left() > 0) {
    reason = r.u8();
    if (r.left() > 0)
      if (const error e = skip_properties(r); e != error::none)
        return e;
  }
  return r.ok && r.left() == 0 ? error::none : error::malformed;
}

error parse_disconnect(std::string_view body, std::uint8_t flags, std::uint8_t version,
                       disconnect_packet& out) noexcept {
  out = {};
  if (flags != 0)
    return error::malformed;
  if (version != v5)
    return body.empty() ? error::none : error::malformed;
  reader r(body);
  if (r.left() > 0) {
    out.reason = r.u8();
    if (r.left() > 0) {
      properties p;
      if (const error e = read_properties(r, p); e != error::none)
        return e;
      out.has_session_expiry = p.session_expiry_set;
      out.session_expiry = p.session_expiry;
    }
  }
  return r.ok && r.left() == 0 ? error::none : error::malformed;
}

void append_forwarded(std::string& out, std::string_view list) {
  reader pr(list);
  while (pr.ok && pr.left() > 0) {
    const std::size_t begin = pr.offset();
    const std::uint32_t id = pr.varint();
    bool forward = true;
    switch (id) {
    case 0x01: // payload format indicator
      pr.u8();
      break;
    case 0x03: // content type
    case 0x08: // response topic
    case 0x09: // correlation data
      pr.field();
      break;
    case 0x26: // user property
      pr.field();
      pr.field();
      break;
    case 0x02: // message expiry interval: sent lowered, by the caller
    case 0x18: // will delay interval
      pr.u32();
      forward = false;
      break;
    case 0x23: // topic alias
      pr.u16();
      forward = false;
      break;
    case 0x0b: // subscription identifier
      pr.varint();
      forward = false;
      break;
    default: // nothing else belongs in a PUBLISH or a will, and read_properties checked it
      return;
    }
    if (forward && pr.ok)
      out.append(list.substr(begin, pr.offset() - begin));
  }
}

} // namespace newsdesk::broker::mqtt
