// MQTT clients nobody here wrote, against the real newsdesk-broker binary (and, where a check
// needs the broker's counters, an in-process broker): Mosquitto's mosquitto_sub and
// mosquitto_pub (Debian's mosquitto-clients) and Eclipse Paho for Python (python3-paho-mqtt).
// A missing client program fails the test: scripts/setup installs them.

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "mqtt_support.hpp"
#include "support.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/test_paths.hpp"

using namespace newsdesk::broker;
using namespace newsdesk::broker::test;
using newsdesk::testing::child_process;
namespace b = newsdesk::broker::test::mqtt_bytes;

namespace {

std::string required_program(const std::string& name) {
  const std::string path = program_path(name);
  INFO(name << " is not installed: scripts/setup installs mosquitto-clients and python3-paho-mqtt");
  REQUIRE_FALSE(path.empty());
  return path;
}

// A newsdesk-broker process with `config_json` (MQTT on a free port), and its MQTT port.
struct broker_process {
  std::string config_path;
  std::unique_ptr<child_process> proc;
  std::uint16_t mqtt_port = 0;

  explicit broker_process(const std::string& config_json, const std::string& name) {
    config_path = "mqtt_clients_test_" + name + ".json";
    std::ofstream(config_path) << config_json;
    proc = std::make_unique<child_process>(
        NEWSDESK_BINARY,
        std::vector<std::string>{"--listen", "127.0.0.1:0", "--config", config_path});
    const auto line = proc->wait_for_line("mqtt listening on 127.0.0.1:", 10s);
    REQUIRE(line);
    mqtt_port = static_cast<std::uint16_t>(std::stoi(*line));
  }
  ~broker_process() {
    proc->stop(SIGTERM, 5s);
    std::remove(config_path.c_str());
  }
};

// Runs a client program to its end; its exit code (or -1 when it did not end in time).
int run(const std::string& program, const std::vector<std::string>& args,
        const std::string& stderr_path = {}) {
  child_process p(program, args, {}, stderr_path);
  return p.wait_exit(20s).value_or(-1);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* users_config = R"({"mqtt": {"users": [{"name": "alice", "password": "s3cret",
  "read": ["alice/#", "newsdesk/#"], "write": ["alice/#"]}]}})";

} // namespace

TEST_CASE("mosquitto_sub and mosquitto_pub: retained first, then wildcard matches only") {
  const std::string sub_bin = required_program("mosquitto_sub");
  const std::string pub_bin = required_program("mosquitto_pub");
  broker_process broker("{}", "wild");
  const std::string port = std::to_string(broker.mqtt_port);
  auto pub = [&](const std::string& topic, const std::string& message, bool retain = false) {
    std::vector<std::string> args{"-h", "127.0.0.1", "-p",  port, "-q",
                                  "1",  "-t",        topic, "-m", message};
    if (retain)
      args.push_back("-r");
    return run(pub_bin, args);
  };
  REQUIRE(pub("news/kept", "retained one", true) == 0);

  child_process sub(sub_bin, {"-h", "127.0.0.1", "-p", port, "-V", "mqttv5", "-q", "1", "-t",
                              "news/+/x", "-t", "news/#", "-t", "other/+", "-F", "%r %t %p"});
  // Retained messages come right after the SUBACK: the subscriptions are in place.
  CHECK(sub.wait_for_line("1 news/kept ", 10s) == "retained one");
  REQUIRE(pub("news/a/x", "both filters match") == 0);
  REQUIRE(pub("weather/today", "no filter matches") == 0);
  REQUIRE(pub("other/one", "plus matches") == 0);
  REQUIRE(pub("other/one/two", "plus does not match two levels") == 0);
  REQUIRE(pub("news/end", "last") == 0);
  CHECK(sub.wait_for_line("0 news/a/x ", 10s) == "both filters match");
  CHECK(sub.wait_for_line("0 other/one ", 10s) == "plus matches");
  CHECK(sub.wait_for_line("0 news/end ", 10s) == "last");
  const std::string out = sub.output();
  CHECK(out.find("no filter matches") == std::string::npos);
  CHECK(out.find("two levels") == std::string::npos);
  // Once, although two of its filters match.
  CHECK(out.find("both filters match") == out.rfind("both filters match"));
}

TEST_CASE("mosquitto_pub with a wrong password is refused, in MQTT 3.1.1 and 5") {
  const std::string pub_bin = required_program("mosquitto_pub");
  broker_process broker(users_config, "auth");
  const std::string port = std::to_string(broker.mqtt_port);
  for (const char* version : {"mqttv311", "mqttv5"}) {
    const std::string err = std::string("mqtt_clients_test_auth_") + version + ".err";
    CHECK(run(pub_bin,
              {"-h", "127.0.0.1", "-p", port, "-V", version, "-u", "alice", "-P", "wrong", "-t",
               "alice/x", "-m", "hi"},
              err) != 0);
    const std::string text = read_all(err);
    INFO(text);
    CHECK(text.find("assword") != std::string::npos); // "bad user name or password"
    std::remove(err.c_str());
  }
  CHECK(run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-u", "alice", "-P", "s3cret", "-q", "1", "-t",
                      "alice/x", "-m", "hi"}) == 0);
}

TEST_CASE("mosquitto_pub under newsdesk/ is refused: PUBACK 0x87 in MQTT 5, closed in 3.1.1") {
  const std::string sub_bin = required_program("mosquitto_sub");
  const std::string pub_bin = required_program("mosquitto_pub");
  running_broker br;
  const std::string port = std::to_string(br.mqtt_port());
  child_process sub(sub_bin, {"-h", "127.0.0.1", "-p", port, "-t", "newsdesk/#", "-v"});
  REQUIRE(br.wait_subscribers(1, 10s));
  run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-V", "mqttv5", "-q", "1", "-t",
                "newsdesk/headlines/bbc", "-m", "FORGED five"});
  run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-V", "mqttv311", "-q", "1", "-t",
                "newsdesk/headlines/bbc", "-m", "FORGED three"});
  br.srv().publish_retained("/topic/newsdesk/headlines/bbc", "genuine");
  CHECK(sub.wait_for_line("newsdesk/headlines/bbc ", 10s) == "genuine");
  CHECK(sub.output().find("FORGED") == std::string::npos);
  CHECK(br.stats().drops.not_authorized == 1);
  // mosquitto_pub may try again after the close; each try is closed the same way.
  CHECK(br.stats().disconnects.reserved_channel >= 1);
}

TEST_CASE("Paho (python3-paho-mqtt): bad password, retained, wildcards, QoS 1 across reconnect") {
  const std::string python = "/usr/bin/python3"; // Debian's, where python3-paho-mqtt installs
  INFO("python3 from Debian is needed for Paho: scripts/setup installs python3-paho-mqtt");
  REQUIRE(::access(python.c_str(), X_OK) == 0);
  broker_process broker(users_config, "paho");
  child_process paho(python, {std::string(NEWSDESK_SOURCE_DIR) + "/tests/broker/mqtt_paho_check.py",
                              std::to_string(broker.mqtt_port)});
  const auto code = paho.wait_exit(90s);
  INFO(paho.output());
  CHECK(code == 0);
}

TEST_CASE("raw malformed bytes close only their own connection; mosquitto_sub keeps receiving") {
  const std::string sub_bin = required_program("mosquitto_sub");
  const std::string pub_bin = required_program("mosquitto_pub");
  broker_process broker("{}", "raw");
  const std::string port = std::to_string(broker.mqtt_port);
  child_process sub(sub_bin, {"-h", "127.0.0.1", "-p", port, "-t", "raw/#", "-v"});
  // mosquitto_sub prints nothing when subscribed: publish until it shows a message.
  bool ready = false;
  for (int i = 0; i < 50 && !ready; ++i) {
    run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-t", "raw/probe", "-m", "probe"});
    ready = sub.wait_for_line("raw/probe ", 200ms).has_value();
  }
  REQUIRE(ready);
  const std::vector<std::string> garbage{
      std::string("\x10\xff\xff\xff\xff\x01", 6), // five length bytes
      b::publish("raw/x", "before connect"),      // no CONNECT first
      b::connect({.client_id = "g"}) + b::publish("raw/+", "wildcard"),
      b::connect({.client_id = "h"}) + b::publish("raw/\xc0\xaf", "bad UTF-8"),
      std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), // not MQTT at all
  };
  for (const auto& bytes : garbage) {
    mqtt_raw c(broker.mqtt_port);
    c.send(bytes);
    CHECK(c.wait_closed());
  }
  REQUIRE(run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-q", "1", "-t", "raw/after", "-m",
                        "still delivered"}) == 0);
  CHECK(sub.wait_for_line("raw/after ", 10s) == "still delivered");
  CHECK(sub.output().find("wildcard") == std::string::npos);
}

TEST_CASE("mosquitto_sub -t '$SYS/#' shows clients connected and messages received and sent "
          "within sys_interval") {
  const std::string sub_bin = required_program("mosquitto_sub");
  const std::string pub_bin = required_program("mosquitto_pub");
  broker_process broker(R"({"mqtt": {"sys_interval": 1}})", "sys");
  const std::string port = std::to_string(broker.mqtt_port);
  child_process sub(sub_bin, {"-h", "127.0.0.1", "-p", port, "-t", "$SYS/#", "-v"});
  // Values change as they are read, and each goes out when it changed: read lines until the
  // counts show this subscriber connected and a message of mosquitto_pub's received and sent.
  auto until = [&](const std::string& topic, auto holds) {
    for (int i = 0; i < 20; ++i) {
      const auto value = sub.wait_for_line(topic + " ", 5s);
      if (!value)
        return false;
      if (holds(std::stoull(*value)))
        return true;
    }
    return false;
  };
  CHECK(until("$SYS/broker/clients/connected", [](auto n) { return n >= 1; }));
  CHECK(run(pub_bin, {"-h", "127.0.0.1", "-p", port, "-t", "sys/probe", "-m", "x"}) == 0);
  CHECK(until("$SYS/broker/messages/received", [](auto n) { return n >= 1; }));
  CHECK(until("$SYS/broker/messages/sent", [](auto n) { return n >= 1; }));
  const auto uptime = sub.wait_for_line("$SYS/broker/uptime ", 5s);
  REQUIRE(uptime);
  CHECK(uptime->ends_with(" seconds"));
}
