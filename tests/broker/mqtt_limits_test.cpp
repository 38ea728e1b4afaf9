// What one client address may hold of the MQTT listener (issue 46): connections
// (mqtt.max_connections_per_address), silent connections at keep-alive 0 (mqtt.idle_timeout) and
// wills (mqtt.max_will_bytes_per_address). An in-process broker, driven over real sockets from
// two loopback addresses, 127.0.0.1 and 127.0.0.2, which the broker tells apart. And the MQTT
// listener's port: a busy default is skipped, a busy port asked for stops the start (issue 48).

#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"
#include "tests/support/logfmt.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

mqtt_bytes::connect_options quiet(std::string id, std::uint8_t version = mqtt::v311) {
  return {.version = version, .client_id = std::move(id), .keep_alive = 0};
}

mqtt_bytes::connect_options with_will(std::string id, std::size_t payload_bytes,
                                      std::uint8_t version = mqtt::v311) {
  auto o = quiet(std::move(id), version);
  o.will_topic = "status/" + o.client_id;
  o.will_payload.assign(payload_bytes, 'w');
  return o;
}

} // namespace

TEST_CASE("one address holds at most max_connections_per_address; another still connects") {
  newsdesk::testing::log_capture log;
  auto cfg = test_config();
  cfg.mqtt.max_connections_per_address = 4;
  cfg.max_connections = 100;
  running_broker br(cfg);
  std::vector<std::unique_ptr<mqtt_raw>> mine;
  for (int i = 0; i < 4; ++i) {
    mine.push_back(std::make_unique<mqtt_raw>("127.0.0.1", br.mqtt_port()));
    REQUIRE(mine.back()->handshake(quiet("one-" + std::to_string(i))) == 0);
  }

  // The fifth from the same address is closed at accept, before its CONNECT is read.
  mqtt_raw extra("127.0.0.1", br.mqtt_port());
  extra.send(b::connect(quiet("one-extra")));
  CHECK(extra.wait_closed());
  CHECK(br.stats().connections_rejected_per_address == 1);
  CHECK(nlohmann::json(br.stats()).at("connections_rejected_per_address") == 1);
  // Named in the log with what is left for everyone else; more refusals within the interval
  // add no line (they are counted into the next one).
  mqtt_raw extra2("127.0.0.1", br.mqtt_port());
  CHECK(extra2.wait_closed());
  const auto lines = log.lines_with("connections from one address refused");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("address=\"127.0.0.1\"") != std::string::npos);
  CHECK(lines[0].find("cap=4") != std::string::npos);
  CHECK(lines[0].find("slots_left_for_others=96") != std::string::npos);

  // Another address is not counted against the first one's cap.
  std::vector<std::unique_ptr<mqtt_raw>> theirs;
  for (int i = 0; i < 4; ++i) {
    theirs.push_back(std::make_unique<mqtt_raw>("127.0.0.2", br.mqtt_port()));
    CHECK(theirs.back()->handshake(quiet("two-" + std::to_string(i))) == 0);
  }

  // A slot given back is a slot the address may take again.
  const auto before = br.stats().connections_current;
  mine.front()->close();
  REQUIRE(eventually([&] { return br.stats().connections_current == before - 1; }));
  mqtt_raw again("127.0.0.1", br.mqtt_port());
  CHECK(again.handshake(quiet("one-again")) == 0);
  CHECK(br.stats().connections_rejected_per_address == 2);
}

TEST_CASE("at the default cap, a flood of keep-alive-0 clients from one address leaves room for "
          "another address") {
  // The probe, scaled down: one address opens more connections than the broker has
  // slots (max_connections 300 here), each a CONNECT at keep-alive 0. Without a per-address
  // cap it takes every slot and a client from elsewhere is refused.
  auto cfg = test_config();
  cfg.max_connections = 300;
  running_broker br(cfg);
  REQUIRE(cfg.mqtt.max_connections_per_address == 256); // the default, under test
  std::vector<std::unique_ptr<mqtt_raw>> flood;
  int accepted = 0;
  for (int i = 0; i < 320; ++i) {
    flood.push_back(std::make_unique<mqtt_raw>("127.0.0.1", br.mqtt_port()));
    if (flood.back()->handshake(quiet("flood-" + std::to_string(i))) == 0)
      ++accepted;
  }
  CHECK(accepted == 256);
  CHECK(br.stats().connections_rejected_per_address == 64);
  mqtt_raw elsewhere("127.0.0.2", br.mqtt_port());
  CHECK(elsewhere.handshake(quiet("elsewhere")) == 0);
  CHECK(br.stats().connections_rejected == 0);
}

TEST_CASE("a client at keep-alive 0 that sends nothing for idle_timeout is closed") {
  auto cfg = test_config();
  cfg.mqtt.idle_timeout = 300ms;
  running_broker br(cfg);
  mqtt_raw silent(br.mqtt_port());
  REQUIRE(silent.handshake(quiet("silent")) == 0);
  mqtt_raw pinging(br.mqtt_port());
  REQUIRE(pinging.handshake(quiet("pinging")) == 0);
  mqtt_raw with_keep_alive(br.mqtt_port());
  auto o = quiet("kept");
  o.keep_alive = 60; // its own limit (90 s) applies, not idle_timeout
  REQUIRE(with_keep_alive.handshake(o) == 0);

  const auto start = std::chrono::steady_clock::now();
  while (br.stats().disconnects.mqtt_idle == 0 && std::chrono::steady_clock::now() - start < 5s) {
    pinging.send(b::pingreq());
    auto pong = pinging.read(2000ms);
    REQUIRE(pong);
    CHECK(pong->type() == mqtt::packet_type::pingresp);
    std::this_thread::sleep_for(100ms); // well inside idle_timeout
  }
  CHECK(silent.wait_closed(1000ms));
  CHECK(br.stats().disconnects.mqtt_idle == 1);
  CHECK(nlohmann::json(br.stats()).at("disconnects").at("mqtt_idle") == 1);
  pinging.send(b::pingreq());
  CHECK(pinging.read());
  with_keep_alive.send(b::pingreq());
  CHECK(with_keep_alive.read());
}

TEST_CASE("a connection that never sends CONNECT is closed at first_frame_timeout") {
  auto cfg = test_config();
  cfg.first_frame_timeout = 200ms;
  running_broker br(cfg);
  mqtt_raw mute(br.mqtt_port());
  CHECK(mute.wait_closed(3000ms));
  CHECK(br.stats().disconnects.first_frame_timeout == 1);
}

TEST_CASE("wills count against max_will_bytes_per_address: one past it refuses the CONNECT") {
  auto cfg = test_config();
  cfg.mqtt.max_will_bytes_per_address = 1000;
  running_broker br(cfg);
  mqtt_raw first("127.0.0.1", br.mqtt_port());
  REQUIRE(first.handshake(with_will("first", 600)) == 0);

  // 3.1.1: server unavailable; MQTT 5: quota exceeded. Either way the connection closes.
  mqtt_raw second("127.0.0.1", br.mqtt_port());
  CHECK(second.handshake(with_will("second", 600)) == mqtt::v3_connack::server_unavailable);
  CHECK(second.wait_closed());
  mqtt_raw second5("127.0.0.1", br.mqtt_port());
  CHECK(second5.handshake(with_will("second5", 600, mqtt::v5)) == mqtt::reason::quota_exceeded);
  CHECK(second5.wait_closed());
  CHECK(br.stats().disconnects.mqtt_will_budget == 2);

  // A will that fits what is left, and another address's will, are taken.
  mqtt_raw small("127.0.0.1", br.mqtt_port());
  CHECK(small.handshake(with_will("small", 300)) == 0);
  mqtt_raw other("127.0.0.2", br.mqtt_port());
  CHECK(other.handshake(with_will("other", 600)) == 0);

  // A will given back (its client said DISCONNECT) frees its bytes.
  first.send(b::disconnect());
  REQUIRE(first.wait_closed());
  mqtt_raw third("127.0.0.1", br.mqtt_port());
  CHECK(third.handshake(with_will("third", 600)) == 0);
  CHECK(br.stats().disconnects.mqtt_will_budget == 2);
}

TEST_CASE("a busy default MQTT port is skipped with a warning; a busy port asked for fails") {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor taken(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::uint16_t busy = taken.local_endpoint().port();
  {
    newsdesk::testing::log_capture log;
    auto cfg = test_config();
    cfg.mqtt.port = busy; // as if it were 1883 with Mosquitto on it: not asked for
    cfg.mqtt.port_given = false;
    running_broker br(cfg);
    CHECK_FALSE(br.srv().mqtt_listening());
    client c(br.port()); // the rest of the broker runs
    c.send_frame("/topic/still");
    CHECK(br.wait_subscribers(1));
    const auto lines = log.lines_with("the default MQTT port is in use");
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("level=warn") != std::string::npos);
    CHECK(lines[0].find(":" + std::to_string(busy)) != std::string::npos);
  }
  auto cfg = test_config();
  cfg.mqtt.port = busy;
  cfg.mqtt.port_given = true;
  server srv(ioc, cfg);
  try {
    srv.listen();
    FAIL("listen did not throw");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find("MQTT on 127.0.0.1:" + std::to_string(busy)) !=
          std::string::npos);
  }
}
