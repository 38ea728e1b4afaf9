#include <doctest/doctest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "broker/config.hpp"
#include "server/core/settings.hpp"

using namespace newsdesk::broker;

TEST_CASE("the defaults are safe: loopback, port 25000, 1 MiB frames, bounded queues") {
  const config c;
  CHECK(c.enabled);
  CHECK(c.address == "127.0.0.1");
  CHECK(c.port == 25000);
  CHECK(c.max_frame_bytes == 1024 * 1024);
  CHECK(c.queue_max_bytes > 0);
  CHECK(c.queue_max_messages > 0);
  CHECK(c.backlog_max_messages > 0);
  CHECK(c.max_connections > 0);
}

TEST_CASE("a config round-trips through JSON") {
  config c;
  c.port = 1234;
  c.max_channel_name = 99;
  c.slow_consumer = slow_consumer_policy::disconnect;
  c.write_deadline = std::chrono::milliseconds(777);
  const nlohmann::json j = c;
  CHECK(j.at("slow_consumer") == "disconnect");
  const config back = j.get<config>();
  CHECK(back.port == 1234);
  CHECK(back.max_channel_name == 99);
  CHECK(back.slow_consumer == slow_consumer_policy::disconnect);
  CHECK(back.write_deadline.count() == 777);
}

TEST_CASE("absent keys keep their defaults") {
  const auto c = nlohmann::json::parse(R"({"port": 0})").get<config>();
  CHECK(c.port == 0);
  CHECK(c.max_frame_bytes == config{}.max_frame_bytes);
}

TEST_CASE("an unknown key is rejected with a message naming it") {
  try {
    (void)nlohmann::json::parse(R"({"prot": 1})").get<config>();
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("prot: unknown key") != std::string::npos);
  }
}

TEST_CASE("a value of the wrong type is rejected with a message naming the key") {
  try {
    (void)nlohmann::json::parse(R"({"max_connections": "many"})").get<config>();
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("max_connections") != std::string::npos);
  }
  CHECK_THROWS_AS((void)nlohmann::json::parse(R"({"slow_consumer": "block"})").get<config>(),
                  std::invalid_argument);
}

TEST_CASE("a config file that does not parse names the file") {
  const std::string path = "broker_config_test.json";
  std::ofstream(path) << "{ not json";
  try {
    (void)load_config_file(path);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("--listen takes ADDR:PORT and rejects anything else") {
  config c;
  apply_listen_spec(c, "127.0.0.2:0");
  CHECK(c.address == "127.0.0.2");
  CHECK(c.port == 0);
  apply_listen_spec(c, "[::1]:900");
  CHECK(c.address == "::1");
  CHECK(c.port == 900);
  CHECK_THROWS_AS(apply_listen_spec(c, "localhost"), std::invalid_argument);
  CHECK_THROWS_AS(apply_listen_spec(c, "1.2.3.4:70000"), std::invalid_argument);
  CHECK_THROWS_AS(apply_listen_spec(c, "1.2.3.4:12x"), std::invalid_argument);
}

TEST_CASE("the broker-wide bounds have safe defaults, round-trip, and max_channels must be > 0") {
  const config d;
  CHECK(d.max_channels >= 2 * d.max_connections);
  CHECK(d.backlog_total_max_bytes >= d.backlog_max_bytes);
  const auto c = nlohmann::json::parse(R"({"max_channels": 7, "backlog_total_max_bytes": 1000})")
                     .get<config>();
  CHECK(c.max_channels == 7);
  CHECK(c.backlog_total_max_bytes == 1000);
  const nlohmann::json j = c;
  CHECK(j.at("max_channels") == 7);
  CHECK(j.at("backlog_total_max_bytes") == 1000);
  CHECK_THROWS_AS((void)nlohmann::json::parse(R"({"max_channels": 0})").get<config>(),
                  std::invalid_argument);
}

TEST_CASE("a value out of range names the key and the range") {
  try {
    (void)nlohmann::json::parse(R"({"partial_frame_timeout_ms": -5})").get<config>();
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "broker config: partial_frame_timeout_ms: expected ms at least 0, got -5");
  }
  CHECK_THROWS_WITH_AS((void)nlohmann::json::parse(R"({"max_frame_bytes": 0})").get<config>(),
                       "broker config: max_frame_bytes: expected bytes from 1 to 2147483647, got 0",
                       std::invalid_argument);
}

TEST_CASE("every broker setting has a help line, and --help shows its default and unit") {
  for (const auto* row : config_table().rows()) {
    CAPTURE(row->path);
    CHECK_FALSE(row->help.empty());
  }
  const auto help = config_table().help("");
  CHECK(help.find("backlog_total_max_bytes") != std::string::npos);
  CHECK(help.find("[default 30000 ms;") != std::string::npos);
  CHECK(help.find("[default drop_newest; one of drop_newest, disconnect]") != std::string::npos);
}

TEST_CASE("the MQTT per-address limits parse from JSON, idle_timeout in seconds") {
  const config d;
  CHECK(d.mqtt.max_connections_per_address == 256);
  CHECK(d.mqtt.idle_timeout == std::chrono::seconds(600));
  CHECK(d.mqtt.max_will_bytes_per_address == 1024 * 1024);
  const auto c = nlohmann::json::parse(R"({"mqtt": {"max_connections_per_address": 8,
      "idle_timeout": 30, "max_will_bytes_per_address": 4096}})")
                     .get<config>();
  CHECK(c.mqtt.max_connections_per_address == 8);
  CHECK(c.mqtt.idle_timeout == std::chrono::seconds(30));
  CHECK(c.mqtt.max_will_bytes_per_address == 4096);
}

TEST_CASE("mqtt.port: only another port than the default counts as asked for (a busy one stops "
          "the start); 1883 written out, as config.example.json does, is the default") {
  CHECK_FALSE(config{}.mqtt.port_given);
  CHECK_FALSE(nlohmann::json::parse(R"({"mqtt": {"port": 1883}})").get<config>().mqtt.port_given);
  const auto other = nlohmann::json::parse(R"({"mqtt": {"port": 1884}})").get<config>();
  CHECK(other.mqtt.port == 1884);
  CHECK(other.mqtt.port_given);
  config listen;
  apply_listen_spec(listen, "127.0.0.1:0");
  CHECK(listen.mqtt.port == 0);
  CHECK(listen.mqtt.port_given);
}

TEST_CASE("the MQTT settings of issue 48 parse: sys_interval in seconds, receive_maximum") {
  const config d;
  CHECK(d.mqtt.sys_interval == std::chrono::seconds(10));
  CHECK(d.mqtt.receive_maximum == 1000);
  CHECK(d.mqtt.anonymous_read == "#,$SYS/#");
  const auto c = nlohmann::json::parse(R"({"mqtt": {"sys_interval": 2, "receive_maximum": 20}})")
                     .get<config>();
  CHECK(c.mqtt.sys_interval == std::chrono::seconds(2));
  CHECK(c.mqtt.receive_maximum == 20);
}
