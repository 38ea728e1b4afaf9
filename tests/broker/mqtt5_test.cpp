// MQTT 5 as the specification says, against an in-process broker over real sockets: the
// properties a server forwards, Message Expiry, shared subscriptions, subscription options and
// identifiers, Will Delay, session expiry set at DISCONNECT, and the $SYS topics.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

mqtt_bytes::connect_options v3(std::string id) {
  return {.client_id = std::move(id)};
}
mqtt_bytes::connect_options v5(std::string id, std::uint32_t expiry = 0, bool clean = true) {
  return {
      .version = mqtt::v5, .client_id = std::move(id), .clean = clean, .session_expiry = expiry};
}

// The properties a request/response publisher sends, in the order it sends them.
std::string request_properties() {
  std::string p;
  p.push_back(0x01); // payload format indicator: UTF-8
  p.push_back(0x01);
  b::prop_str(p, 0x03, "application/json");
  b::prop_str(p, 0x08, "replies/me");
  b::prop_str(p, 0x09, std::string("\x00\x01\x02", 3)); // correlation data
  b::prop_pair(p, "a", "2");
  b::prop_pair(p, "c", "3");
  return p;
}

// Reads the next PUBLISH, acknowledging QoS 1 and completing QoS 2 as a client does.
std::optional<received_publish> take(mqtt_raw& c, std::uint8_t version = mqtt::v5) {
  const auto m = c.next_publish(version);
  if (m && m->qos == 1)
    c.send(b::puback(m->id));
  if (m && m->qos == 2) {
    c.send(b::pubrec(m->id));
    if (const auto rel = c.read(); rel && rel->type() == mqtt::packet_type::pubrel)
      c.send(b::pubcomp(m->id));
  }
  return m;
}

// The subscription identifiers in a property list.
std::vector<std::uint32_t> subscription_ids(std::string_view props) {
  std::vector<std::uint32_t> ids;
  // Every property here is one this test knows: 0x0b and a one-byte varint.
  for (std::size_t i = 0; i + 1 < props.size(); ++i)
    if (props[i] == 0x0b)
      ids.push_back(static_cast<unsigned char>(props[++i]));
  return ids;
}

} // namespace

TEST_CASE("properties reach MQTT 5 subscribers as published (format, content type, response "
          "topic, correlation data, user properties), at every QoS and when retained") {
  running_broker br;
  mqtt_raw sub(br.mqtt_port());
  REQUIRE(sub.handshake(v5("sub")) == 0);
  REQUIRE(sub.subscribe(1, "props/t", 2, mqtt::v5) == 2);
  mqtt_raw old(br.mqtt_port());
  REQUIRE(old.handshake(v3("old")) == 0);
  REQUIRE(old.subscribe(1, "props/t", 0) == 0);
  mqtt_raw pub(br.mqtt_port());
  REQUIRE(pub.handshake(v5("pub")) == 0);
  REQUIRE(br.wait_subscribers(2));

  const std::string props = request_properties();
  for (std::uint8_t qos = 0; qos <= 2; ++qos)
    pub.send(b::publish5("props/t", "q" + std::to_string(qos), qos, 10 + qos, props));
  for (std::uint8_t qos = 0; qos <= 2; ++qos) {
    const auto m = take(sub);
    REQUIRE(m);
    CHECK(m->payload == "q" + std::to_string(qos));
    CHECK(m->qos == qos);
    CHECK(m->properties == props);
    const auto o = old.next_publish(); // MQTT 3.1.1 has no properties: the message alone
    REQUIRE(o);
    CHECK(o->payload == m->payload);
  }

  pub.send(b::publish5("props/kept", "retained", 1, 20, props, true));
  REQUIRE(pub.read()); // PUBACK: it is kept
  mqtt_raw late(br.mqtt_port());
  REQUIRE(late.handshake(v5("late")) == 0);
  REQUIRE(late.subscribe(1, "props/kept", 1, mqtt::v5) == 1);
  const auto kept = take(late);
  REQUIRE(kept);
  CHECK(kept->retain);
  CHECK(kept->properties == props);
}

TEST_CASE("Message Expiry: what expired while a kept session was away is dropped; the rest "
          "arrives with the interval lowered") {
  running_broker br;
  {
    mqtt_raw keeper(br.mqtt_port());
    REQUIRE(keeper.handshake(v5("keeper", 300)) == 0);
    REQUIRE(keeper.subscribe(1, "exp/t", 1, mqtt::v5) == 1);
    keeper.send(b::disconnect());
    REQUIRE(keeper.wait_closed());
  }
  mqtt_raw pub(br.mqtt_port());
  REQUIRE(pub.handshake(v5("pub")) == 0);
  std::string short_lived, long_lived;
  b::prop_u32(short_lived, 0x02, 1);
  b::prop_u32(long_lived, 0x02, 100);
  pub.send(b::publish5("exp/t", "short", 1, 1, short_lived));
  pub.send(b::publish5("exp/t", "long", 1, 2, long_lived));
  REQUIRE(pub.read());
  REQUIRE(pub.read());
  const auto published = std::chrono::steady_clock::now();
  // The short one's second passes while nobody takes it.
  std::this_thread::sleep_until(published + 1500ms);

  mqtt_raw back(br.mqtt_port());
  REQUIRE(back.handshake(v5("keeper", 300, false)) == 0);
  CHECK(back.session_present);
  const auto m = take(back);
  REQUIRE(m);
  CHECK(m->payload == "long");
  CHECK(m->has_expiry);
  CHECK(m->expiry < 100);
  CHECK(m->expiry >= 97);
  CHECK(br.stats().drops.expired == 1);
}

TEST_CASE("shared subscriptions: each message goes to one member of the group, in turn; a plain "
          "subscriber gets every one; a member leaving leaves the others every message") {
  running_broker br;
  mqtt_raw a(br.mqtt_port()), c(br.mqtt_port()), plain(br.mqtt_port());
  auto member = std::make_unique<mqtt_raw>(br.mqtt_port());
  REQUIRE(a.handshake(v5("a")) == 0);
  REQUIRE(member->handshake(v5("b")) == 0);
  REQUIRE(plain.handshake(v3("plain")) == 0);
  REQUIRE(a.subscribe(1, "$share/workers/jobs/+", 0, mqtt::v5) == 0);
  REQUIRE(member->subscribe(1, "$share/workers/jobs/+", 0, mqtt::v5) == 0);
  REQUIRE(plain.subscribe(1, "jobs/+", 0) == 0);
  REQUIRE(c.handshake(v5("c")) == 0);
  REQUIRE(br.wait_subscribers(3));

  for (int i = 0; i < 10; ++i)
    c.send(b::publish("jobs/x", "j" + std::to_string(i), 0, 0, false, mqtt::v5));
  int to_a = 0, to_b = 0;
  for (int i = 0; i < 10; ++i) {
    const auto p = plain.next_publish();
    REQUIRE(p);
    CHECK(p->payload == "j" + std::to_string(i));
  }
  while (a.next_publish(mqtt::v5, 300ms))
    ++to_a;
  while (member->next_publish(mqtt::v5, 300ms))
    ++to_b;
  CHECK(to_a + to_b == 10);
  CHECK(to_a == 5);
  CHECK(to_b == 5);

  member.reset();
  REQUIRE(br.wait_subscribers(2));
  for (int i = 0; i < 4; ++i)
    c.send(b::publish("jobs/y", "k" + std::to_string(i), 0, 0, false, mqtt::v5));
  for (int i = 0; i < 4; ++i) {
    const auto m = a.next_publish(mqtt::v5);
    REQUIRE(m);
    CHECK(m->payload == "k" + std::to_string(i));
  }
}

TEST_CASE("Retain As Published keeps RETAIN on a live delivery; without it RETAIN is cleared") {
  running_broker br;
  mqtt_raw keeps(br.mqtt_port()), clears(br.mqtt_port()), pub(br.mqtt_port());
  REQUIRE(keeps.handshake(v5("keeps")) == 0);
  REQUIRE(clears.handshake(v5("clears")) == 0);
  REQUIRE(pub.handshake(v5("pub")) == 0);
  keeps.send(b::subscribe5(1, "rap/t", 0x08));
  REQUIRE(keeps.read());
  clears.send(b::subscribe5(1, "rap/t", 0x00));
  REQUIRE(clears.read());
  REQUIRE(br.wait_subscribers(2));
  pub.send(b::publish("rap/t", "plain", 0, 0, false, mqtt::v5));
  pub.send(b::publish("rap/t", "retained", 0, 0, true, mqtt::v5));
  for (mqtt_raw* c : {&keeps, &clears}) {
    const auto first = c->next_publish(mqtt::v5);
    const auto second = c->next_publish(mqtt::v5);
    REQUIRE(first);
    REQUIRE(second);
    CHECK_FALSE(first->retain);
    CHECK(second->payload == "retained");
    CHECK(second->retain == (c == &keeps));
  }
}

TEST_CASE("subscription identifiers: every matching subscription's identifier comes with the "
          "message, retained ones included") {
  running_broker br;
  mqtt_raw sub(br.mqtt_port()), pub(br.mqtt_port());
  REQUIRE(sub.handshake(v5("sub")) == 0);
  REQUIRE(pub.handshake(v5("pub")) == 0);
  sub.send(b::subscribe5(1, "ids/+", 1, 5));
  REQUIRE(sub.read());
  sub.send(b::subscribe5(2, "ids/#", 0, 9));
  REQUIRE(sub.read());
  REQUIRE(br.wait_subscribers(2));
  pub.send(b::publish("ids/a", "both", 1, 1, true, mqtt::v5));
  const auto m = take(sub);
  REQUIRE(m);
  CHECK(m->qos == 1);
  auto ids = subscription_ids(m->properties);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::uint32_t>{5, 9});

  sub.send(b::subscribe5(3, "ids/a", 0, 7)); // a new subscription: the retained message, id 7
  REQUIRE(sub.read());
  const auto r = take(sub);
  REQUIRE(r);
  CHECK(r->retain);
  CHECK(subscription_ids(r->properties) == std::vector<std::uint32_t>{7});
}

TEST_CASE("Will Delay: the will waits its delay; a reconnect to the session within it cancels "
          "it; a session that ends first sends it then") {
  running_broker br;
  mqtt_raw watcher(br.mqtt_port());
  REQUIRE(watcher.handshake(v3("watcher")) == 0);
  REQUIRE(watcher.subscribe(1, "wills/#", 0) == 0);
  REQUIRE(br.wait_subscribers(1));
  auto with_will = [](std::string id, std::uint32_t expiry, std::uint32_t delay) {
    auto o = v5(std::move(id), expiry);
    o.will_topic = "wills/" + o.client_id;
    o.will_payload = o.client_id + " left";
    b::prop_u32(o.will_properties, 0x18, delay);
    return o;
  };

  auto vanish = [&](const mqtt_bytes::connect_options& o) {
    mqtt_raw c(br.mqtt_port());
    REQUIRE(c.handshake(o) == 0);
    return std::chrono::steady_clock::now(); // closed without DISCONNECT
  };
  // Delay 1 s in a session kept 60 s.
  auto gone = vanish(with_will("delayed", 60, 1));
  auto w = watcher.next_publish(mqtt::v311, 5000ms);
  REQUIRE(w);
  CHECK(w->payload == "delayed left");
  CHECK(std::chrono::steady_clock::now() - gone >= 900ms);

  // Delay 30 s, back within it: no will.
  (void)vanish(with_will("back", 60, 30));
  REQUIRE(eventually([&] { return br.stats().connections_current == 1; }));
  {
    mqtt_raw again(br.mqtt_port());
    auto o = with_will("back", 60, 30);
    o.clean = false;
    REQUIRE(again.handshake(o) == 0);
    CHECK(again.session_present);
    again.send(b::disconnect()); // and leaves properly: this will is dropped too
    REQUIRE(again.wait_closed());
  }

  // Delay 30 s, session kept 1 s: the will goes when the session ends.
  gone = vanish(with_will("short", 1, 30));
  w = watcher.next_publish(mqtt::v311, 5000ms);
  REQUIRE(w);
  CHECK(w->payload == "short left"); // not "back left": that one was cancelled
  CHECK(std::chrono::steady_clock::now() - gone >= 900ms);
  CHECK(std::chrono::steady_clock::now() - gone < 4000ms);
}

TEST_CASE("DISCONNECT may change the session's expiry, but not make one asked for 0 last") {
  running_broker br;
  {
    mqtt_raw c(br.mqtt_port());
    REQUIRE(c.handshake(v5("s", 10)) == 0);
    std::string props;
    b::prop_u32(props, 0x11, 0);
    c.send(b::packet(0xe0, std::string(1, '\0') + b::prop_list(props)));
    REQUIRE(c.wait_closed());
  }
  mqtt_raw again(br.mqtt_port());
  REQUIRE(again.handshake(v5("s", 10, false)) == 0);
  CHECK_FALSE(again.session_present); // ended with the connection, as the DISCONNECT asked

  mqtt_raw zero(br.mqtt_port());
  REQUIRE(zero.handshake(v5("z")) == 0);
  std::string props;
  b::prop_u32(props, 0x11, 60);
  zero.send(b::packet(0xe0, std::string(1, '\0') + b::prop_list(props)));
  const auto d = zero.read();
  REQUIRE(d);
  CHECK(d->type() == mqtt::packet_type::disconnect);
  CHECK(d->body == std::string(1, static_cast<char>(mqtt::reason::protocol_error)));
}

TEST_CASE("$SYS/broker/...: retained, published every sys_interval when they change, readable "
          "as $SYS/#, not matched by #, and only the broker publishes there") {
  auto cfg = test_config();
  cfg.mqtt.sys_interval = 200ms;
  running_broker br(cfg);
  mqtt_raw everything(br.mqtt_port());
  REQUIRE(everything.handshake(v3("everything")) == 0);
  REQUIRE(everything.subscribe(1, "#", 0) == 0);
  mqtt_raw monitor(br.mqtt_port());
  REQUIRE(monitor.handshake(v5("monitor")) == 0);
  REQUIRE(monitor.subscribe(1, "$SYS/#", 0, mqtt::v5) == 0);
  // Read until clients/connected says `n`: retained values first, then changes.
  auto until_connected = [&](const std::string& n) {
    for (int i = 0; i < 200; ++i) {
      const auto m = monitor.next_publish(mqtt::v5, 2000ms);
      if (!m)
        return false;
      if (m->topic == "$SYS/broker/clients/connected" && m->payload == n)
        return true;
    }
    return false;
  };
  CHECK(until_connected("2"));
  mqtt_raw third(br.mqtt_port());
  REQUIRE(third.handshake(v5("third")) == 0);
  CHECK(until_connected("3"));

  third.send(b::publish("$SYS/broker/uptime", "forged", 1, 1, false, mqtt::v5));
  const auto ack = third.read();
  REQUIRE(ack);
  CHECK(ack->type() == mqtt::packet_type::puback);
  CHECK(ack->body.size() == 3);
  CHECK(static_cast<unsigned char>(ack->body[2]) == mqtt::reason::not_authorized);
  // '#' matches no $ topic; what it gets is this marker alone.
  third.send(b::publish("plain", "marker", 0, 0, false, mqtt::v5));
  const auto m = everything.next_publish();
  REQUIRE(m);
  CHECK(m->topic == "plain");
}
