// The MQTT listener of an in-process broker, driven over real sockets with packets built here
// (so malformed ones can be sent too) and checked against the broker's counters.

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <thread>

#include "mqtt_support.hpp"
#include "support.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

mqtt_bytes::connect_options v3(std::string id) {
  return {.client_id = std::move(id)};
}
mqtt_bytes::connect_options v5(std::string id) {
  return {.version = mqtt::v5, .client_id = std::move(id)};
}

// Publishes `probe` on `topic` until `sub` receives it: then its subscription is in place.
void settle(mqtt_raw& pub, mqtt_raw& sub, const std::string& topic,
            std::uint8_t version = mqtt::v311) {
  for (int i = 0; i < 200; ++i) {
    pub.send(b::publish(topic, "probe"));
    if (auto m = sub.next_publish(version, 25ms); m && m->payload == "probe") {
      while (sub.next_publish(version, 50ms)) // later probes
        ;
      return;
    }
  }
  FAIL("the subscription never took effect");
}

} // namespace

TEST_CASE("MQTT topic a/b is channel /topic/a/b: each protocol reads what the other publishes") {
  running_broker br;
  mqtt_raw m(br.mqtt_port());
  REQUIRE(m.handshake(v3("m")) == 0);
  REQUIRE(m.subscribe(1, "news/world", 0) == 0);
  client frame_sub(br.port());
  frame_sub.send_frame("/topic/news/world");
  REQUIRE(br.wait_subscribers(2));

  client frame_pub(br.port());
  frame_pub.send_frame("/null");
  frame_pub.publish("/topic/news/world", "from frames");
  auto got = m.next_publish();
  REQUIRE(got);
  CHECK(got->topic == "news/world");
  CHECK(got->payload == "from frames");
  CHECK(frame_sub.read_frame() == "from frames");

  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  p.send(b::publish("news/world", "from mqtt"));
  CHECK(frame_sub.read_frame() == "from mqtt");
  got = m.next_publish();
  REQUIRE(got);
  CHECK(got->payload == "from mqtt");
}

TEST_CASE("wildcard subscriptions: '+' and '#' match, and a session gets each message once") {
  running_broker br;
  mqtt_raw s(br.mqtt_port());
  REQUIRE(s.handshake(v5("s")) == 0);
  REQUIRE(s.subscribe(1, "sport/+/score", 0, mqtt::v5) == 0);
  REQUIRE(s.subscribe(2, "sport/#", 1, mqtt::v5) == 1);
  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  REQUIRE(br.wait_subscribers(2));

  p.send(b::publish("sport/tennis/score", "6-4", 1, 5));
  auto ack = p.read();
  REQUIRE(ack);
  CHECK(ack->type() == mqtt::packet_type::puback);
  auto got = s.next_publish(mqtt::v5);
  REQUIRE(got);
  CHECK(got->topic == "sport/tennis/score");
  CHECK(got->payload == "6-4");
  CHECK(got->qos == 1); // the highest of its matching subscriptions
  s.send(b::puback(got->id));
  p.send(b::publish("sport", "parent level", 0));
  got = s.next_publish(mqtt::v5);
  REQUIRE(got);
  CHECK(got->payload == "parent level");
  p.send(b::publish("weather/today", "not for s", 0));
  p.send(b::publish("sport/golf/score", "-3", 0));
  got = s.next_publish(mqtt::v5);
  REQUIRE(got);
  CHECK(got->payload == "-3"); // once, although both filters match
  CHECK_FALSE(s.next_publish(mqtt::v5, 200ms));

  // UNSUBSCRIBE takes a filter out of the tree.
  s.send(b::unsubscribe(3, "sport/#", mqtt::v5));
  auto unsuback = s.read();
  REQUIRE(unsuback);
  CHECK(unsuback->type() == mqtt::packet_type::unsuback);
  REQUIRE(br.wait_subscribers(1));
  p.send(b::publish("sport/x", "gone", 0));
  p.send(b::publish("sport/x/score", "kept", 0));
  got = s.next_publish(mqtt::v5);
  REQUIRE(got);
  CHECK(got->payload == "kept");
}

TEST_CASE("QoS 1: unacknowledged messages of a kept session are sent again after a reconnect") {
  running_broker br;
  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("pub")) == 0);
  {
    mqtt_raw s(br.mqtt_port());
    auto o = v3("keeper");
    o.clean = false;
    REQUIRE(s.handshake(o) == 0);
    CHECK_FALSE(s.session_present);
    REQUIRE(s.subscribe(1, "q/1", 1) == 1);
    p.send(b::publish("q/1", "first", 1, 1));
    auto got = s.next_publish();
    REQUIRE(got);
    CHECK(got->payload == "first");
    CHECK(got->qos == 1);
    // Not acknowledged: the client vanishes.
  }
  // While it is away, QoS 1 messages wait for it.
  REQUIRE(eventually([&] { return br.stats().connections_current == 1; }));
  p.send(b::publish("q/1", "second", 1, 2));
  p.send(b::publish("q/1", "third", 1, 3));
  for (int i = 0; i < 2; ++i) {
    auto ack = p.read();
    REQUIRE(ack);
    CHECK(ack->type() == mqtt::packet_type::puback);
  }
  mqtt_raw again(br.mqtt_port());
  auto o = v3("keeper");
  o.clean = false;
  REQUIRE(again.handshake(o) == 0);
  CHECK(again.session_present);
  auto first = again.next_publish();
  REQUIRE(first);
  CHECK(first->payload == "first");
  CHECK(first->dup);
  again.send(b::puback(first->id));
  for (const char* want : {"second", "third"}) {
    auto m = again.next_publish();
    REQUIRE(m);
    CHECK(m->payload == want);
    CHECK_FALSE(m->dup);
    again.send(b::puback(m->id));
  }
  CHECK_FALSE(again.next_publish(mqtt::v311, 200ms));

  // A clean start drops the session.
  again.send(b::disconnect());
  CHECK(again.wait_closed());
  mqtt_raw fresh(br.mqtt_port());
  REQUIRE(fresh.handshake(v3("keeper")) == 0);
  CHECK_FALSE(fresh.session_present);
}

TEST_CASE("the QoS 1 window holds at most max_inflight unacknowledged messages") {
  config c = test_config();
  c.mqtt.max_inflight = 3;
  running_broker br(c);
  mqtt_raw s(br.mqtt_port());
  REQUIRE(s.handshake(v3("slow")) == 0);
  REQUIRE(s.subscribe(1, "w", 1) == 1);
  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  for (std::uint16_t i = 1; i <= 10; ++i)
    p.send(b::publish("w", std::to_string(i), 1, i));
  std::vector<received_publish> got;
  for (int i = 0; i < 3; ++i) {
    auto m = s.next_publish();
    REQUIRE(m);
    got.push_back(*m);
  }
  CHECK_FALSE(s.next_publish(mqtt::v311, 300ms)); // the window is full
  s.send(b::puback(got[0].id));
  auto fourth = s.next_publish();
  REQUIRE(fourth);
  CHECK(fourth->payload == "4");
}

TEST_CASE("retained messages: the latest per topic, sent on subscribe with RETAIN, empty deletes") {
  running_broker br;
  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  p.send(b::publish("r/a", "old", 0, 0, true));
  p.send(b::publish("r/a", "new", 0, 0, true));
  p.send(b::publish("r/b", "bee", 1, 1, true));
  REQUIRE(p.read()); // PUBACK
  br.srv().publish_retained("/topic/r/c", "from newsdesk");
  REQUIRE(eventually([&] { return br.stats().retained_messages == 3; }));

  mqtt_raw s(br.mqtt_port());
  REQUIRE(s.handshake(v3("s")) == 0);
  REQUIRE(s.subscribe(1, "r/a", 0) == 0);
  auto m = s.next_publish();
  REQUIRE(m);
  CHECK(m->payload == "new");
  CHECK(m->retain);
  REQUIRE(s.subscribe(2, "r/+", 1) == 1);
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto r = s.next_publish();
    REQUIRE(r);
    CHECK(r->retain);
    if (r->qos == 1)
      s.send(b::puback(r->id));
    seen.insert(r->payload);
  }
  CHECK(seen == std::set<std::string>{"new", "bee", "from newsdesk"});
  // A live publish with RETAIN reaches established subscribers with the flag clear.
  p.send(b::publish("r/a", "newest", 0, 0, true));
  auto live = s.next_publish();
  REQUIRE(live);
  CHECK(live->payload == "newest");
  CHECK_FALSE(live->retain);
  p.send(b::publish("r/a", "", 0, 0, true));
  REQUIRE(eventually([&] { return br.stats().retained_messages == 2; }));
}

TEST_CASE("only newsdesk publishes under newsdesk/: MQTT 5 gets PUBACK 0x87, 3.1.1 is closed") {
  running_broker br;
  mqtt_raw reader(br.mqtt_port());
  REQUIRE(reader.handshake(v3("reader")) == 0);
  REQUIRE(reader.subscribe(1, "newsdesk/#", 0) == 0);
  REQUIRE(br.wait_subscribers(1));

  mqtt_raw five(br.mqtt_port());
  REQUIRE(five.handshake(v5("five")) == 0);
  five.send(b::publish("newsdesk/headlines/bbc", "FORGED", 1, 7, false, mqtt::v5));
  auto ack = five.read();
  REQUIRE(ack);
  CHECK(ack->type() == mqtt::packet_type::puback);
  REQUIRE(ack->body.size() >= 3);
  CHECK(static_cast<unsigned char>(ack->body[2]) == 0x87);
  five.send(b::publish("newsdesk/x", "FORGED too", 0, 0, false, mqtt::v5));
  five.send(b::pingreq()); // still connected
  auto pong = five.read();
  REQUIRE(pong);
  CHECK(pong->type() == mqtt::packet_type::pingresp);

  mqtt_raw three(br.mqtt_port());
  REQUIRE(three.handshake(v3("three")) == 0);
  three.send(b::publish("newsdesk/headlines/bbc", "FORGED", 0));
  CHECK(three.wait_closed());

  br.srv().publish("/topic/newsdesk/headlines/bbc", "genuine");
  auto got = reader.next_publish();
  REQUIRE(got);
  CHECK(got->payload == "genuine");
  const auto st = br.stats();
  CHECK(st.drops.not_authorized == 2);
  CHECK(st.disconnects.reserved_channel == 1);
}

TEST_CASE("users: a bad password is refused in CONNACK; permissions bound reading and writing") {
  config c = test_config();
  c.mqtt.users = {{"alice", "s3cret", {"newsdesk/#", "alice/#"}, {"alice/#"}}};
  c.mqtt.anonymous = mqtt_anonymous::never;
  running_broker br(c);
  {
    mqtt_raw bad(br.mqtt_port());
    auto o = v5("x");
    o.user = "alice";
    o.password = "wrong";
    CHECK(bad.handshake(o) == 0x86);
    CHECK(bad.wait_closed());
  }
  {
    mqtt_raw bad(br.mqtt_port());
    auto o = v3("x");
    o.user = "mallory";
    o.password = "s3cret";
    CHECK(bad.handshake(o) == 0x04);
    CHECK(bad.wait_closed());
  }
  {
    mqtt_raw anon(br.mqtt_port());
    CHECK(anon.handshake(v5("anon")) == 0x87);
  }
  mqtt_raw alice(br.mqtt_port());
  auto o = v5("alice-1");
  o.user = "alice";
  o.password = "s3cret";
  REQUIRE(alice.handshake(o) == 0);
  CHECK(alice.subscribe(1, "newsdesk/headlines/+", 0, mqtt::v5) == 0);
  CHECK(alice.subscribe(2, "alice/inbox", 0, mqtt::v5) == 0);
  CHECK(alice.subscribe(3, "#", 0, mqtt::v5) == 0x87);
  CHECK(alice.subscribe(4, "bob/+", 0, mqtt::v5) == 0x87);
  alice.send(b::publish("bob/inbox", "no", 1, 9, false, mqtt::v5));
  auto ack = alice.read();
  REQUIRE(ack);
  REQUIRE(ack->body.size() >= 3);
  CHECK(static_cast<unsigned char>(ack->body[2]) == 0x87);
  alice.send(b::publish("alice/inbox", "yes", 0, 0, false, mqtt::v5));
  auto got = alice.next_publish(mqtt::v5);
  REQUIRE(got);
  CHECK(got->payload == "yes");
  const auto st = br.stats();
  CHECK(st.disconnects.auth_failed == 2);
  CHECK(st.disconnects.not_authorized == 1);
}

TEST_CASE("malformed packets close that connection only, each with its counted reason") {
  running_broker br;
  mqtt_raw bystander(br.mqtt_port());
  REQUIRE(bystander.handshake(v3("bystander")) == 0);
  REQUIRE(bystander.subscribe(1, "ok", 0) == 0);

  auto connected = [&](const std::string& id) {
    auto c = std::make_unique<mqtt_raw>(br.mqtt_port());
    REQUIRE(c->handshake(v3(id)) == 0);
    return c;
  };
  {
    auto c = connected("len");
    c->send(std::string("\x30\xff\xff\xff\xff\x01", 6));
    CHECK(c->wait_closed());
  }
  {
    auto c = connected("utf8");
    c->send(b::publish("bad/\xc0\xaf", "x"));
    CHECK(c->wait_closed());
  }
  {
    auto c = connected("wild");
    c->send(b::publish("a/+/c", "x"));
    CHECK(c->wait_closed());
  }
  {
    mqtt_raw c(br.mqtt_port());
    c.send(b::publish("ok", "before connect"));
    CHECK(c.wait_closed());
  }
  {
    auto c = connected("big");
    c->send(std::string("\x30\xff\xff\xff\x7f", 5)); // 256 MiB announced
    CHECK(c->wait_closed());
  }
  {
    auto c = connected("again");
    c->send(b::connect(v3("again"))); // a second CONNECT
    CHECK(c->wait_closed());
  }
  REQUIRE(eventually([&] { return br.stats().connections_current == 1; }));
  const auto d = br.stats().disconnects;
  CHECK(d.mqtt_malformed_length == 1);
  CHECK(d.mqtt_bad_utf8 == 1);
  CHECK(d.mqtt_bad_topic == 1);
  CHECK(d.mqtt_before_connect == 1);
  CHECK(d.mqtt_packet_too_large == 1);
  CHECK(d.mqtt_protocol_error == 1);

  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  p.send(b::publish("ok", "still here"));
  auto got = bystander.next_publish();
  REQUIRE(got);
  CHECK(got->payload == "still here");
}

TEST_CASE("keep-alive: a client silent for 1.5 times its keep-alive is closed; PINGREQ keeps it") {
  running_broker br;
  mqtt_raw quiet(br.mqtt_port());
  auto o = v3("quiet");
  o.keep_alive = 1;
  REQUIRE(quiet.handshake(o) == 0);
  mqtt_raw pinging(br.mqtt_port());
  auto po = v3("pinging");
  po.keep_alive = 1;
  REQUIRE(pinging.handshake(po) == 0);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 3500ms) {
    pinging.send(b::pingreq());
    auto pong = pinging.read(2000ms);
    REQUIRE(pong);
    CHECK(pong->type() == mqtt::packet_type::pingresp);
    std::this_thread::sleep_for(400ms); // the client's own ping interval
  }
  CHECK(quiet.wait_closed(100ms));
  CHECK(br.stats().disconnects.mqtt_keep_alive == 1);
  pinging.send(b::pingreq());
  CHECK(pinging.read());
}

TEST_CASE("a will is published when its client vanishes, not after DISCONNECT") {
  running_broker br;
  mqtt_raw watcher(br.mqtt_port());
  REQUIRE(watcher.handshake(v3("watcher")) == 0);
  REQUIRE(watcher.subscribe(1, "status/+", 0) == 0);
  {
    mqtt_raw polite(br.mqtt_port());
    auto o = v3("polite");
    o.will_topic = "status/polite";
    o.will_payload = "polite vanished";
    REQUIRE(polite.handshake(o) == 0);
    polite.send(b::disconnect());
    CHECK(polite.wait_closed());
  }
  {
    mqtt_raw rude(br.mqtt_port());
    auto o = v3("rude");
    o.will_topic = "status/rude";
    o.will_payload = "rude vanished";
    REQUIRE(rude.handshake(o) == 0);
  }
  auto got = watcher.next_publish();
  REQUIRE(got);
  CHECK(got->topic == "status/rude");
  CHECK(got->payload == "rude vanished");
  CHECK_FALSE(watcher.next_publish(mqtt::v311, 200ms));
}

TEST_CASE("a client whose last packet and end of stream arrive together is closed at once") {
  // The broker's reactor reports readiness once per change (edge-triggered): when the data and
  // the FIN come in one report, the read that takes the data must not be taken for "the socket
  // is empty", or the end is never seen and the connection stays (here: 90 s of keep-alive).
  running_broker br;
  mqtt_raw watcher(br.mqtt_port());
  REQUIRE(watcher.handshake(v3("watcher")) == 0);
  REQUIRE(watcher.subscribe(1, "gone/+", 0) == 0);
  constexpr int clients = 20;
  for (int i = 0; i < clients; ++i) {
    mqtt_raw last_words(br.mqtt_port());
    auto o = v3("c" + std::to_string(i));
    o.will_topic = "gone/" + std::to_string(i);
    o.will_payload = "vanished";
    REQUIRE(last_words.handshake(o) == 0);
    last_words.send(b::publish("chatter", std::string(100, 'x')));
    last_words.close(); // at once: the PUBLISH and the FIN travel together
  }
  int wills = 0;
  while (wills < clients && watcher.next_publish(mqtt::v311, 3000ms))
    ++wills;
  CHECK(wills == clients);
}

TEST_CASE("a second connection with the same client id takes the session over") {
  running_broker br;
  mqtt_raw first(br.mqtt_port());
  REQUIRE(first.handshake(v3("same")) == 0);
  mqtt_raw second(br.mqtt_port());
  REQUIRE(second.handshake(v3("same")) == 0);
  CHECK(first.wait_closed());
  CHECK(br.stats().disconnects.mqtt_taken_over == 1);
  second.send(b::pingreq());
  CHECK(second.read());
}

TEST_CASE("a slow MQTT subscriber loses messages under drop_newest, others get every one") {
  config c = test_config();
  c.queue_max_messages = 100;
  running_broker br(c);
  mqtt_raw slow(br.mqtt_port());
  REQUIRE(slow.handshake(v3("slow")) == 0);
  REQUIRE(slow.subscribe(1, "flood", 0) == 0);
  mqtt_raw fast(br.mqtt_port());
  REQUIRE(fast.handshake(v3("fast")) == 0);
  REQUIRE(fast.subscribe(1, "flood", 0) == 0);
  mqtt_raw p(br.mqtt_port());
  REQUIRE(p.handshake(v3("p")) == 0);
  settle(p, fast, "flood");
  // 3 MB in groups the fast reader takes before the next is sent; the slow one never reads,
  // so once the kernel's buffers are full its queue overflows.
  const std::string payload(1000, 'x');
  const int total = 3000;
  int got = 0;
  for (int sent = 0; sent < total; sent += 50) {
    std::string group;
    for (int i = 0; i < 50; ++i)
      group += b::publish("flood", payload);
    p.send(group);
    for (int i = 0; i < 50; ++i)
      if (fast.next_publish())
        ++got;
  }
  CHECK(got == total);
  CHECK(br.stats().drops.queue_full > 0);
}
