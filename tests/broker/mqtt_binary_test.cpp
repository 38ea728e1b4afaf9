// The real newsdesk-broker binary and MQTT: it reads the settings newsdesk's embedded broker reads
// (newsdesk's config file, NEWSDESK_BROKER_* variables), issue 48 item 5.

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
