// The real newsdesk-broker binary and MQTT: it reads the settings newsdesk's embedded broker reads
// (newsdesk's config file, NEWSDESK_BROKER_* variables), and one client address cannot take every
// connection slot (issue 46: 16,384 keep-alive-0 connections from one address).

#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/http_get.hpp"
#include "tests/support/test_paths.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
using newsdesk::testing::child_process;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

// Every NEWSDESK_ variable of this process cleared, so a developer's shell changes nothing.
std::vector<std::string> cleared_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry = *e;
    if (entry.starts_with("NEWSDESK_"))
      env.push_back(std::string(entry.substr(0, entry.find('='))) + "=");
  }
  return env;
}

} // namespace

TEST_CASE("newsdesk-broker reads newsdesk's config file (its \"broker\" object) and "
          "NEWSDESK_BROKER_* variables, as the embedded broker does") {
  const std::string path = "mqtt_binary_test_newsdesk.json";
  // newsdesk's own file: the broker takes its "broker" object and leaves the rest to newsdesk.
  std::ofstream(path) << R"({"port": 8080, "sites": [], "broker": {"port": 0,
    "mqtt": {"max_packet_bytes": 4096}}})";
  const std::uint16_t mqtt_port = newsdesk::testing::unused_port();
  auto env = cleared_environment();
  env.push_back("NEWSDESK_BROKER_MQTT_PORT=" + std::to_string(mqtt_port));
  env.push_back("NEWSDESK_BROKER_MQTT_NO_SUCH_SETTING=1");
  child_process broker(NEWSDESK_BINARY, {"--config", path}, env, "mqtt_binary_test.err");
  const auto line = broker.wait_for_line("mqtt listening on 127.0.0.1:", 10s);
  REQUIRE(line);
  CHECK(*line == std::to_string(mqtt_port));
  // The file's limit holds: a packet over 4096 bytes closes the connection.
  mqtt_raw c(mqtt_port);
  REQUIRE(c.handshake({.client_id = "big"}) == 0);
  c.send(b::publish("big", std::string(5000, 'x')));
  CHECK(c.wait_closed());
  broker.stop(SIGTERM, 5s);
  std::ifstream err("mqtt_binary_test.err");
  const std::string warnings{std::istreambuf_iterator<char>(err), {}};
  CHECK(warnings.find("unknown environment variable NEWSDESK_BROKER_MQTT_NO_SUCH_SETTING") !=
        std::string::npos);
  std::remove(path.c_str());
  std::remove("mqtt_binary_test.err");
}

TEST_CASE("16,384 keep-alive-0 MQTT connections from one address: another address still "
          "connects, and the log names the address and the slots left (newsdesk-broker, "
          "default limits)") {
  child_process broker(NEWSDESK_BINARY, {"--listen", "127.0.0.1:0"}, cleared_environment());
  const auto line = broker.wait_for_line("mqtt listening on 127.0.0.1:", 10s);
  REQUIRE(line);
  const auto port = static_cast<std::uint16_t>(std::stoi(*line));

  // As many as max_connections allows in all (16384 by default), each saying CONNECT with
  // keep-alive 0 and nothing more. A connection the broker refuses is simply closed.
  const std::string connect = b::connect({.client_id = {}, .keep_alive = 0});
  std::vector<int> fds;
  fds.reserve(16384);
  for (int i = 0; i < 16384; ++i) {
    const int fd = newsdesk::testing::connect_loopback(port, 0);
    REQUIRE(fd >= 0);
    (void)::send(fd, connect.data(), connect.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  mqtt_raw other(port, "127.0.0.2");
  CHECK(other.handshake({.client_id = "from-elsewhere"}) == 0);
  const auto refused = broker.wait_for_log("msg=\"broker: connections refused\"", 10s);
  REQUIRE(refused);
  CHECK(refused->find("address=127.0.0.1 ") != std::string::npos);
  CHECK(refused->find("max_connections_per_address=1024") != std::string::npos);
  CHECK(refused->find("slots_left_for_others=") != std::string::npos);
  for (const int fd : fds)
    ::close(fd);
  CHECK(broker.stop(SIGTERM, 10s) == 0);
}
