// QoS 2 both ways (exactly once), against an in-process broker over real sockets with packets
// built here, so every step of the handshake, and every way of not finishing it, can be taken.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

mqtt_bytes::connect_options v3(std::string id, bool clean = true) {
  return {.client_id = std::move(id), .clean = clean};
}
mqtt_bytes::connect_options v5(std::string id) {
  return {.version = mqtt::v5, .client_id = std::move(id)};
}

std::uint16_t id_of(const mqtt_packet& p) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(p.body[0]) << 8) |
                                    static_cast<unsigned char>(p.body[1]));
}

// The next packet, which must be of `type`: its packet id.
std::optional<std::uint16_t> expect(mqtt_raw& c, mqtt::packet_type type) {
  const auto p = c.read();
  if (!p || p->type() != type || p->body.size() < 2)
    return std::nullopt;
  return id_of(*p);
}

// Reads until `n` QoS 2 messages arrived, completing each (PUBREC, then PUBCOMP on PUBREL) the
// way a client does; their payloads in order, or fewer when the broker stops sending.
std::vector<std::string> receive_qos2(mqtt_raw& c, std::size_t n,
                                      std::uint8_t version = mqtt::v311) {
  std::vector<std::string> got;
  std::size_t released = 0;
  while (got.size() < n || released < got.size()) {
    const auto p = c.read();
    if (!p)
      break;
    if (p->type() == mqtt::packet_type::publish) {
      const auto m = parse_received(*p, version);
      if (m.qos != 2)
        break;
      got.push_back(m.payload);
      c.send(b::pubrec(m.id));
    } else if (p->type() == mqtt::packet_type::pubrel) {
      c.send(b::pubcomp(id_of(*p)));
      ++released;
    } else {
      break;
    }
  }
  return got;
}

} // namespace

TEST_CASE("QoS 2 from a 3.1.1 client: PUBREC, PUBREL, PUBCOMP; the connection stays and a "
          "resent PUBLISH is delivered once") {
  running_broker br;
  mqtt_raw sub(br.mqtt_port());
  REQUIRE(sub.handshake(v3("sub")) == 0);
  REQUIRE(sub.subscribe(1, "q2/t", 2) == 2);
  mqtt_raw pub(br.mqtt_port());
  REQUIRE(pub.handshake(v3("pub")) == 0);
  REQUIRE(br.wait_subscribers(1));

  pub.send(b::publish("q2/t", "once", 2, 7));
  CHECK(expect(pub, mqtt::packet_type::pubrec) == 7);
  pub.send(b::publish_dup("q2/t", "once", 7)); // its PUBREC was lost, say: sent again
  CHECK(expect(pub, mqtt::packet_type::pubrec) == 7);
  pub.send(b::pubrel(7));
  CHECK(expect(pub, mqtt::packet_type::pubcomp) == 7);
  pub.send(b::pubrel(7)); // a PUBREL sent again: PUBCOMP again, nothing else
  CHECK(expect(pub, mqtt::packet_type::pubcomp) == 7);

  CHECK(receive_qos2(sub, 1) == std::vector<std::string>{"once"});
  pub.send(b::publish("q2/t", "marker")); // QoS 0: the next thing the subscriber sees
  const auto marker = sub.next_publish();
  REQUIRE(marker);
  CHECK(marker->payload == "marker");

  // A burst, sent without waiting, as Node-RED's MQTT.js does: every one arrives, in order.
  std::vector<std::string> sent;
  for (int i = 0; i < 100; ++i) {
    sent.push_back("m" + std::to_string(i));
    pub.send(b::publish("q2/t", sent.back(), 2, static_cast<std::uint16_t>(100 + i)));
  }
  for (int i = 0; i < 100; ++i) {
    REQUIRE(expect(pub, mqtt::packet_type::pubrec) == 100 + i);
    pub.send(b::pubrel(static_cast<std::uint16_t>(100 + i)));
  }
  for (int i = 0; i < 100; ++i)
    CHECK(expect(pub, mqtt::packet_type::pubcomp) == 100 + i);
  CHECK(receive_qos2(sub, 100) == sent);
  CHECK(br.stats().disconnects.mqtt_protocol_error == 0);
  CHECK(br.stats().connections_current == 2);
}

TEST_CASE("QoS 2 to a kept session: after a reconnect the unacknowledged PUBLISH comes again "
          "(DUP) and the received one gets its PUBREL again; each is delivered once") {
  running_broker br;
  auto keeper = std::make_unique<mqtt_raw>(br.mqtt_port());
  REQUIRE(keeper->handshake(v3("keeper", false)) == 0);
  REQUIRE(keeper->subscribe(1, "q2/k", 2) == 2);
  REQUIRE(br.wait_subscribers(1));
  br.srv().publish("/topic/q2/k", "a"); // in-process publishes reach QoS 2 subscribers at QoS 2
  br.srv().publish("/topic/q2/k", "b");
  const auto a = keeper->next_publish();
  const auto bm = keeper->next_publish();
  REQUIRE(a);
  REQUIRE(bm);
  CHECK(a->qos == 2);
  CHECK(a->payload == "a");
  CHECK(bm->payload == "b");
  keeper->send(b::pubrec(a->id));
  CHECK(expect(*keeper, mqtt::packet_type::pubrel) == a->id);
  keeper.reset(); // gone before PUBCOMP for "a" and before PUBREC for "b"

  mqtt_raw back(br.mqtt_port());
  REQUIRE(back.handshake(v3("keeper", false)) == 0);
  CHECK(back.session_present);
  bool released_again = false;
  std::optional<received_publish> resent;
  for (int i = 0; i < 2; ++i) {
    const auto p = back.read();
    REQUIRE(p);
    if (p->type() == mqtt::packet_type::pubrel) {
      CHECK(id_of(*p) == a->id);
      released_again = true;
    } else {
      REQUIRE(p->type() == mqtt::packet_type::publish);
      resent = parse_received(*p, mqtt::v311);
    }
  }
  CHECK(released_again);
  REQUIRE(resent);
  CHECK(resent->payload == "b");
  CHECK(resent->dup);
  CHECK(resent->id == bm->id);
  back.send(b::pubcomp(a->id));
  back.send(b::pubrec(bm->id));
  CHECK(expect(back, mqtt::packet_type::pubrel) == bm->id);
  back.send(b::pubcomp(bm->id));

  br.srv().publish("/topic/q2/k", "c");
  const auto c = back.next_publish();
  REQUIRE(c);
  CHECK(c->payload == "c"); // neither "a" nor "b" again
  CHECK_FALSE(c->dup);
}

TEST_CASE("QoS 2 to a subscriber at QoS 1 goes at QoS 1; its PUBREC for an unknown id gets "
          "PUBREL 0x92") {
  running_broker br;
  mqtt_raw sub(br.mqtt_port());
  REQUIRE(sub.handshake(v5("sub")) == 0);
  REQUIRE(sub.subscribe(1, "q2/one", 1, mqtt::v5) == 1);
  mqtt_raw pub(br.mqtt_port());
  REQUIRE(pub.handshake(v3("pub")) == 0);
  REQUIRE(br.wait_subscribers(1));
  pub.send(b::publish("q2/one", "x", 2, 1));
  const auto m = sub.next_publish(mqtt::v5);
  REQUIRE(m);
  CHECK(m->qos == 1);
  sub.send(b::puback(m->id));
  sub.send(b::pubrec(999));
  const auto rel = sub.read();
  REQUIRE(rel);
  CHECK(rel->type() == mqtt::packet_type::pubrel);
  CHECK(id_of(*rel) == 999);
  REQUIRE(rel->body.size() >= 3);
  CHECK(static_cast<unsigned char>(rel->body[2]) == mqtt::reason::packet_identifier_not_found);
}

TEST_CASE("receive_maximum: announced to MQTT 5 clients; one QoS 2 message too many closes the "
          "connection before it is acknowledged (MQTT 5: DISCONNECT 0x93)") {
  auto cfg = test_config();
  cfg.mqtt.receive_maximum = 3;
  running_broker br(cfg);
  mqtt_raw sub(br.mqtt_port());
  REQUIRE(sub.handshake(v3("sub")) == 0);
  REQUIRE(sub.subscribe(1, "q2/max", 0) == 0);
  REQUIRE(br.wait_subscribers(1));

  mqtt_raw five(br.mqtt_port());
  five.send(b::connect(v5("five")));
  const auto connack = five.read();
  REQUIRE(connack);
  CHECK(connack->body.find(std::string("\x21\x00\x03", 3)) != std::string::npos);
  for (std::uint16_t id = 1; id <= 4; ++id)
    five.send(b::publish("q2/max", "m" + std::to_string(id), 2, id, false, mqtt::v5));
  for (std::uint16_t id = 1; id <= 3; ++id)
    CHECK(expect(five, mqtt::packet_type::pubrec) == id);
  const auto d = five.read();
  REQUIRE(d);
  CHECK(d->type() == mqtt::packet_type::disconnect);
  CHECK(d->body == std::string(1, static_cast<char>(mqtt::reason::receive_maximum_exceeded)));
  CHECK(five.wait_closed());

  mqtt_raw three(br.mqtt_port());
  REQUIRE(three.handshake(v3("three")) == 0);
  for (std::uint16_t id = 1; id <= 4; ++id)
    three.send(b::publish("q2/max", "t" + std::to_string(id), 2, id));
  for (std::uint16_t id = 1; id <= 3; ++id)
    CHECK(expect(three, mqtt::packet_type::pubrec) == id);
  CHECK(three.wait_closed());

  // Three of each were delivered; the fourth of each was never acknowledged, so its client still
  // owns it.
  std::vector<std::string> got;
  for (int i = 0; i < 6; ++i)
    if (auto m = sub.next_publish())
      got.push_back(m->payload);
  CHECK(got == std::vector<std::string>{"m1", "m2", "m3", "t1", "t2", "t3"});
  CHECK(br.stats().disconnects.mqtt_protocol_error == 2);
}
