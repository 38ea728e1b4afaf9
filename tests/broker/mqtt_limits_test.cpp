// What one client address may take, and the MQTT listener's port, against an in-process broker:
// the per-address connection cap (and its log line), the idle limit for clients asking for no
// keep-alive, the will byte budgets, and a busy default port.

#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"
#include "tests/support/logfmt.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

mqtt_bytes::connect_options idle_client(std::string id, std::uint8_t version = mqtt::v311) {
  return {.version = version, .client_id = std::move(id), .keep_alive = 0};
}

} // namespace

TEST_CASE("an address at max_connections_per_address: its next connection is closed and logged "
          "with the slots left for the others; another address still connects") {
  newsdesk::testing::log_capture log;
  auto cfg = test_config();
  cfg.max_connections = 10;
  cfg.max_connections_per_address = 4;
  running_broker br(cfg);
  std::vector<std::unique_ptr<mqtt_raw>> mine;
  for (int i = 0; i < 4; ++i) {
    mine.push_back(std::make_unique<mqtt_raw>(br.mqtt_port()));
    REQUIRE(mine.back()->handshake(idle_client("c" + std::to_string(i))) == 0);
  }
  mqtt_raw fifth(br.mqtt_port());
  CHECK(fifth.wait_closed());
  client frame(br.port()); // every listener counts
  CHECK(frame.wait_closed());
  CHECK(br.stats().connections_rejected == 2);

  mqtt_raw other(br.mqtt_port(), "127.0.0.2");
  CHECK(other.handshake(idle_client("other")) == 0);
  const auto lines = log.lines_with("broker: connections refused");
  REQUIRE_FALSE(lines.empty());
  CHECK(lines[0].find("level=warn") != std::string::npos);
  CHECK(lines[0].find("address=127.0.0.1 ") != std::string::npos);
  CHECK(lines[0].find("address_connections=4") != std::string::npos);
  CHECK(lines[0].find("max_connections_per_address=4") != std::string::npos);
  CHECK(lines[0].find("slots_left_for_others=6") != std::string::npos);

  mine.pop_back(); // a slot of its own again
  REQUIRE(wait_until([&] { return br.stats().connections_current == 4; }));
  mqtt_raw again(br.mqtt_port());
  CHECK(again.handshake(idle_client("again")) == 0);
}

TEST_CASE("a client asking for no keep-alive is held to mqtt.idle_timeout: MQTT 5 clients are "
          "told it, and a silent one is closed") {
  auto cfg = test_config();
  cfg.mqtt.idle_timeout = std::chrono::seconds(1);
  running_broker br(cfg);
  mqtt_raw five(br.mqtt_port());
  five.send(b::connect(idle_client("five", mqtt::v5)));
  const auto connack = five.read();
  REQUIRE(connack);
  CHECK(connack->body.find(std::string("\x13\x00\x01", 3)) != std::string::npos);
  mqtt_raw three(br.mqtt_port());
  REQUIRE(three.handshake(idle_client("three")) == 0);
  mqtt_raw talking(br.mqtt_port());
  REQUIRE(talking.handshake(idle_client("talking")) == 0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) { // 2.5 s of pings: never idle
    talking.send(b::pingreq());
    REQUIRE(talking.read());
    std::this_thread::sleep_until(start + std::chrono::milliseconds(250 * (i + 1)));
  }
  CHECK(five.wait_closed(5000ms));
  CHECK(three.wait_closed(5000ms));
  CHECK(br.stats().disconnects.mqtt_keep_alive == 2);
  talking.send(b::pingreq());
  CHECK(talking.read());
}

TEST_CASE("wills count against their address's byte budget: a CONNECT whose will does not fit "
          "is refused, the budget comes back when the connection goes, other addresses have "
          "their own") {
  auto cfg = test_config();
  cfg.mqtt.will_bytes_per_address = 100;
  running_broker br(cfg);
  auto with_will = [](std::string id, std::uint8_t version = mqtt::v311) {
    mqtt_bytes::connect_options o{.version = version, .client_id = id};
    o.will_topic = "w/" + id;
    o.will_payload = std::string(60, 'x'); // with "/topic/w/..." about 70 bytes
    return o;
  };
  auto first = std::make_unique<mqtt_raw>(br.mqtt_port());
  REQUIRE(first->handshake(with_will("one")) == 0);
  mqtt_raw second(br.mqtt_port());
  CHECK(second.handshake(with_will("two")) == mqtt::v3_connack::server_unavailable);
  CHECK(second.wait_closed());
  mqtt_raw five(br.mqtt_port());
  CHECK(five.handshake(with_will("five", mqtt::v5)) == mqtt::reason::quota_exceeded);
  mqtt_raw elsewhere(br.mqtt_port(), "127.0.0.2");
  CHECK(elsewhere.handshake(with_will("elsewhere")) == 0);

  first->send(b::disconnect());
  CHECK(first->wait_closed());
  mqtt_raw third(br.mqtt_port());
  CHECK(third.handshake(with_will("three")) == 0);
  CHECK(br.stats().disconnects.mqtt_refused == 2);
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
