// The MQTT codec on its own: lengths, strings, topics and each packet's checks.

#include <doctest/doctest.h>

#include <string>

#include "broker/mqtt_codec.hpp"
#include "mqtt_support.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::mqtt;
namespace b = newsdesk::broker::test::mqtt_bytes;

TEST_CASE("a fifth remaining-length byte is an error as soon as it is seen") {
  const std::string five("\x30\xff\xff\xff\xff\x01", 6);
  CHECK(try_decode_header(five, 1 << 28).err == error::malformed_length);
  // Four continuation bytes and nothing more: still an error, no need to wait for a fifth.
  CHECK(try_decode_header(five.substr(0, 5), 1 << 28).err == error::malformed_length);
  // Three so far: need more.
  CHECK(try_decode_header(five.substr(0, 4), 1 << 28).status == header_status::need_more);
}

TEST_CASE("the packet size limit is checked from the length bytes, before the body arrives") {
  // 268435455 announced, 2 bytes sent.
  const std::string huge("\x30\xff\xff\xff\x7f", 5);
  const auto h = try_decode_header(huge, 1024 * 1024);
  CHECK(h.status == header_status::error);
  CHECK(h.err == error::too_large);
  const std::string small = b::publish("a", "hi");
  const auto ok = try_decode_header(small, 1024);
  CHECK(ok.status == header_status::packet);
  CHECK(ok.size() == small.size());
  CHECK(try_decode_header(small.substr(0, small.size() - 1), 1024).status ==
        header_status::need_more);
}

TEST_CASE("UTF-8: well-formed text passes; NUL, overlong forms, surrogates and stray bytes fail") {
  CHECK(valid_mqtt_utf8("newsdesk/headlines/bbc"));
  CHECK(valid_mqtt_utf8("caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x93\xb0"));
  CHECK_FALSE(valid_mqtt_utf8(std::string("a\0b", 3)));
  CHECK_FALSE(valid_mqtt_utf8("\xc0\xaf"));         // overlong '/'
  CHECK_FALSE(valid_mqtt_utf8("\xed\xa0\x80"));     // U+D800
  CHECK_FALSE(valid_mqtt_utf8("\xf4\x90\x80\x80")); // past U+10FFFF
  CHECK_FALSE(valid_mqtt_utf8("\xe2\x82"));         // truncated
  CHECK_FALSE(valid_mqtt_utf8("\x80"));
}

TEST_CASE("topic filters: '+' alone in a level, '#' alone and last") {
  CHECK(valid_topic_filter("a/+/c"));
  CHECK(valid_topic_filter("#"));
  CHECK(valid_topic_filter("a/#"));
  CHECK(valid_topic_filter("+"));
  CHECK(valid_topic_filter("a//b"));
  CHECK_FALSE(valid_topic_filter("a/#/b"));
  CHECK_FALSE(valid_topic_filter("a+/b"));
  CHECK_FALSE(valid_topic_filter("a/b#"));
  CHECK_FALSE(valid_topic_filter(""));
  CHECK(valid_topic_name("a/b"));
  CHECK_FALSE(valid_topic_name("a/+"));
  CHECK_FALSE(valid_topic_name("a/#"));
  CHECK_FALSE(valid_topic_name(""));
}

TEST_CASE("topic matching: '+' one level, '#' the rest and the parent, '$' topics apart") {
  CHECK(topic_matches("a/+/c", "a/b/c"));
  CHECK_FALSE(topic_matches("a/+/c", "a/b/d"));
  CHECK_FALSE(topic_matches("a/+", "a/b/c"));
  CHECK(topic_matches("a/+", "a/"));
  CHECK(topic_matches("a/#", "a"));
  CHECK(topic_matches("a/#", "a/b/c"));
  CHECK(topic_matches("#", "a/b"));
  CHECK_FALSE(topic_matches("#", "$SYS/x"));
  CHECK_FALSE(topic_matches("+/x", "$SYS/x"));
  CHECK(topic_matches("$SYS/#", "$SYS/x"));
  CHECK(topic_matches("a/b", "a/b"));
  CHECK_FALSE(topic_matches("a/b", "a/b/c"));
  CHECK_FALSE(topic_matches("a/b/c", "a/b"));
}

TEST_CASE("a permission filter covers the filters it would match all of") {
  CHECK(filter_covers("newsdesk/#", "newsdesk/headlines/+"));
  CHECK(filter_covers("newsdesk/#", "newsdesk/#"));
  CHECK(filter_covers("newsdesk/#", "newsdesk"));
  CHECK_FALSE(filter_covers("newsdesk/#", "#"));
  CHECK_FALSE(filter_covers("newsdesk/#", "+/headlines"));
  CHECK(filter_covers("a/+/c", "a/b/c"));
  CHECK(filter_covers("a/+/c", "a/+/c"));
  CHECK_FALSE(filter_covers("a/b/c", "a/+/c"));
  CHECK_FALSE(filter_covers("a/+", "a/#"));
  CHECK(filter_covers("#", "a/#"));
  CHECK_FALSE(filter_covers("#", "$SYS/#"));
}

TEST_CASE("CONNECT of 3.1.1 and 5.0 parse; a reserved flag or another protocol does not") {
  connect_packet c;
  const std::string p3 = b::connect({.client_id = "x", .user = "u", .password = "p"});
  CHECK(parse_connect(std::string_view(p3).substr(2), 0, c) == error::none);
  CHECK(c.version == v311);
  CHECK(c.client_id == "x");
  CHECK(c.username == "u");
  CHECK(c.password == "p");
  CHECK(c.clean_start);

  connect_packet c5;
  const std::string p5 = b::connect({.version = v5,
                                     .client_id = "y",
                                     .clean = false,
                                     .will_topic = "w/t",
                                     .will_payload = "gone",
                                     .session_expiry = 300});
  CHECK(parse_connect(std::string_view(p5).substr(2), 0, c5) == error::none);
  CHECK(c5.version == v5);
  CHECK(c5.session_expiry == 300);
  CHECK(c5.will.topic == "w/t");
  CHECK(c5.will.payload == "gone");
  CHECK_FALSE(c5.clean_start);

  std::string reserved = b::connect({.client_id = "x"}).substr(2);
  reserved[7] |= 0x01; // the connect flags' reserved bit
  CHECK(parse_connect(reserved, 0, c) == error::malformed);

  std::string v3 = b::connect({.client_id = "x"}).substr(2);
  v3[6] = 3;
  CHECK(parse_connect(v3, 0, c) == error::unsupported_version);
  CHECK(parse_connect("\x00\x04MQ", 0, c) == error::malformed);
}

TEST_CASE("PUBLISH: wildcards, bad UTF-8, QoS 3 and topic aliases are refused") {
  publish_packet p;
  // The packet parsed stays alive while `p` views into it.
  std::string packet;
  auto body = [&packet](std::string built) {
    packet = std::move(built);
    return std::string_view(packet).substr(2);
  };
  CHECK(parse_publish(body(b::publish("a/b", "data")), 0, v311, p) == error::none);
  CHECK(p.topic == "a/b");
  CHECK(p.payload == "data");
  CHECK(parse_publish(body(b::publish("a/+", "x")), 0, v311, p) == error::wildcard_topic);
  CHECK(parse_publish(body(b::publish("a/#", "x")), 0, v311, p) == error::wildcard_topic);
  CHECK(parse_publish(body(b::publish("a/\xff", "x")), 0, v311, p) == error::bad_utf8);
  CHECK(parse_publish(body(b::publish("a", "x", 1, 7)), 0x06, v311, p) == error::malformed);
  CHECK(parse_publish(body(b::publish("a", "x", 1, 0)), 0x02, v311, p) == error::malformed);
  // MQTT 5: a user property is skipped; a topic alias is a protocol error (none offered).
  std::string props;
  b::str(props, "t");
  props += std::string("\x07\x26\x00\x01k\x00\x01v", 8);
  props += "payload";
  CHECK(parse_publish(props, 0, v5, p) == error::none);
  CHECK(p.payload == "payload");
  std::string alias;
  b::str(alias, "t");
  alias += std::string("\x03\x23\x00\x01", 4);
  CHECK(parse_publish(alias, 0, v5, p) == error::protocol_error);
  // A property list longer than what is left, and an unknown property identifier.
  std::string overrun;
  b::str(overrun, "t");
  overrun += "\x7f";
  CHECK(parse_publish(overrun, 0, v5, p) == error::malformed);
  std::string unknown;
  b::str(unknown, "t");
  unknown += std::string("\x02\x7e\x00", 3);
  CHECK(parse_publish(unknown, 0, v5, p) == error::malformed);
}

TEST_CASE("SUBSCRIBE: flags must be 0010, options checked, entries bounded") {
  std::vector<subscribe_entry> out;
  std::uint16_t id = 0;
  const std::string s = b::subscribe(9, "a/+", 1);
  CHECK(parse_subscribe(std::string_view(s).substr(2), 0x02, v311, 10, id, out) == error::none);
  CHECK(id == 9);
  REQUIRE(out.size() == 1);
  CHECK(out[0].filter == "a/+");
  CHECK(out[0].qos == 1);
  CHECK(parse_subscribe(std::string_view(s).substr(2), 0x00, v311, 10, id, out) ==
        error::malformed);
  CHECK(parse_subscribe(std::string_view(s).substr(2), 0x02, v311, 0, id, out) == error::malformed);
  std::string bad_qos = s.substr(2);
  bad_qos.back() = 3;
  CHECK(parse_subscribe(bad_qos, 0x02, v311, 10, id, out) == error::malformed);
}

TEST_CASE("an encoded PUBLISH decodes to what was encoded, in both versions") {
  for (const std::uint8_t version : {v311, v5})
    for (const std::uint8_t qos : {0, 1}) {
      const std::string topic = "newsdesk/headlines/bbc";
      const std::string payload(300, 'p');
      std::string out(publish_bytes(version, topic.size(), payload.size(), qos), '\0');
      char* p =
          write_publish_header(out.data(), version, topic, payload.size(), qos, true, false, 42);
      std::memcpy(p, payload.data(), payload.size());
      CHECK(static_cast<std::size_t>(p - out.data()) + payload.size() == out.size());
      const auto h = try_decode_header(out, 1 << 20);
      REQUIRE(h.status == header_status::packet);
      CHECK(h.size() == out.size());
      publish_packet pp;
      REQUIRE(parse_publish(std::string_view(out).substr(h.header_bytes), h.flags(), version, pp) ==
              error::none);
      CHECK(pp.topic == topic);
      CHECK(pp.payload == payload);
      CHECK(pp.retain);
      CHECK(pp.qos == qos);
      CHECK(pp.packet_id == (qos ? 42 : 0));
    }
}
