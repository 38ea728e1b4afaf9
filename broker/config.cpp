#include "broker/config.hpp"

#include "broker/mqtt_codec.hpp"
#include "server/core/settings.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace newsdesk::broker {

namespace {

using settings::field;
using settings::kind;

settings::setting slow_consumer_row() {
  return settings::custom<config>(
      {.path = "slow_consumer",
       .choices = {"drop_newest", "disconnect"},
       .help = "a /topic subscriber whose queue is full: drop_newest drops the message for it, "
               "disconnect closes it"},
      kind::text,
      [](const config& c) {
        return nlohmann::json(c.slow_consumer == slow_consumer_policy::disconnect ? "disconnect"
                                                                                  : "drop_newest");
      },
      [](config& c, const nlohmann::json& v) {
        c.slow_consumer = v == "disconnect" ? slow_consumer_policy::disconnect
                                            : slow_consumer_policy::drop_newest;
      });
}

// A row for a field of config::mqtt, under "mqtt.".
template <class T> settings::setting mqtt_field(T mqtt_config::*member, const settings::spec& s) {
  return settings::project(field(member, s), &config::mqtt);
}

// mqtt.port, which also records whether another port than the default was asked for
// (mqtt_config::port_given): only such a port stops the start when it is busy. The default
// written out counts as left out: config.example.json lists every setting at its default, and a
// file copied from it must not turn a busy 1883 into a failed start.
settings::setting mqtt_port_row() {
  return settings::custom<config>(
      {.path = "mqtt.port",
       .min = 0,
       .max = 65535,
       .help = "MQTT listen port, on address (0: any free); the default 1883, when busy, is "
               "skipped with a warning"},
      kind::integer, [](const config& c) { return nlohmann::json(c.mqtt.port); },
      [](config& c, const nlohmann::json& v) {
        c.mqtt.port = v.get<std::uint16_t>();
        c.mqtt.port_given = c.mqtt.port != mqtt_config{}.port;
      });
}

settings::setting mqtt_anonymous_row() {
  return settings::custom<config>(
      {.path = "mqtt.anonymous",
       .choices = {"loopback", "always", "never"},
       .help = "MQTT clients without a user name: from loopback addresses only, from anywhere, "
               "or never"},
      kind::text,
      [](const config& c) {
        switch (c.mqtt.anonymous) {
        case mqtt_anonymous::always:
          return nlohmann::json("always");
        case mqtt_anonymous::never:
          return nlohmann::json("never");
        case mqtt_anonymous::loopback:
          break;
        }
        return nlohmann::json("loopback");
      },
      [](config& c, const nlohmann::json& v) {
        c.mqtt.anonymous = v == "always"  ? mqtt_anonymous::always
                           : v == "never" ? mqtt_anonymous::never
                                          : mqtt_anonymous::loopback;
      });
}

// A list of topic filters in a user entry: an array of strings, each a valid filter.
std::vector<std::string> filters_of(const nlohmann::json& v, const std::string& path) {
  std::vector<std::string> out;
  if (!v.is_array())
    throw settings::error(path + ": expected an array of topic filters");
  for (const auto& f : v) {
    if (!f.is_string() || !mqtt::valid_topic_filter(f.get<std::string>()))
      throw settings::error(path + ": " + f.dump() + " is not an MQTT topic filter");
    out.push_back(f.get<std::string>());
  }
  return out;
}

settings::setting mqtt_users_row() {
  return settings::custom<config>(
      {.path = "mqtt.users",
       .help = "MQTT users: [{\"name\", \"password\", \"read\": [filters], \"write\": "
               "[filters]}]; read defaults to [\"newsdesk/#\"], write to []"},
      kind::list,
      [](const config& c) {
        auto out = nlohmann::json::array();
        for (const auto& u : c.mqtt.users)
          out.push_back(
              {{"name", u.name}, {"password", u.password}, {"read", u.read}, {"write", u.write}});
        return out;
      },
      [](config& c, const nlohmann::json& v) {
        std::vector<mqtt_user> users;
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::string path = "mqtt.users[" + std::to_string(i) + "]";
          const auto& e = v[i];
          if (!e.is_object())
            throw settings::error(path + ": expected an object with name and password");
          mqtt_user u;
          for (const auto& [key, value] : e.items()) {
            if (key == "name" && value.is_string())
              u.name = value.get<std::string>();
            else if (key == "password" && value.is_string())
              u.password = value.get<std::string>();
            else if (key == "read")
              u.read = filters_of(value, path + ".read");
            else if (key == "write")
              u.write = filters_of(value, path + ".write");
            else
              throw settings::error(path + "." + key +
                                    ": unknown key or wrong type (name, password: strings; "
                                    "read, write: arrays of topic filters)");
          }
          if (u.name.empty() || !mqtt::valid_mqtt_utf8(u.name))
            throw settings::error(path + ".name: expected a non-empty UTF-8 user name");
          for (const auto& other : users)
            if (other.name == u.name)
              throw settings::error(path + ".name: \"" + u.name + "\" is listed twice");
          users.push_back(std::move(u));
        }
        c.mqtt.users = std::move(users);
      });
}

// The frame protocol's rows and the settings every listener shares.
std::vector<settings::setting> broker_rows() {
  // The ranges keep values the code relies on: a frame length fits the 31-bit prefix, names and
  // channels can exist at all, and a read buffer holds at least a frame header many times over.
  return {
      field(&config::enabled,
            {.path = "enabled", .help = "run the broker (the server starts it only when true)"}),
      field(&config::address,
            {.path = "address", .help = "listen address (loopback: there is no authentication)"}),
      field(&config::port, {.path = "port", .help = "listen port (0: any free)"}),
      field(&config::max_frame_bytes,
            {.path = "max_frame_bytes",
             .unit = "bytes",
             .min = 1,
             .max = 2147483647,
             .help = "largest data frame; a bigger length prefix closes the connection"}),
      field(
          &config::max_channel_name,
          {.path = "max_channel_name", .unit = "bytes", .min = 1, .help = "longest channel name"}),
      field(&config::max_connections,
            {.path = "max_connections", .help = "connections at once; more are closed at once"}),
      field(&config::max_unidentified_connections,
            {.path = "max_unidentified_connections",
             .min = 1,
             .help = "connections yet to send their first frame; past it a random one is "
                     "closed"}),
      field(&config::queue_max_messages,
            {.path = "queue_max_messages", .help = "messages queued for one subscriber"}),
      field(
          &config::queue_max_bytes,
          {.path = "queue_max_bytes", .unit = "bytes", .help = "bytes queued for one subscriber"}),
      slow_consumer_row(),
      field(&config::hard_limit_bytes,
            {.path = "hard_limit_bytes",
             .unit = "bytes",
             .help = "a subscriber owing more than this is disconnected (0: no limit)"}),
      field(&config::write_deadline,
            {.path = "write_deadline_ms",
             .unit = "ms",
             .min = 0,
             .help = "a subscriber making no write progress this long is disconnected (0: "
                     "never)"}),
      field(&config::backlog_max_messages,
            {.path = "backlog_max_messages",
             .help = "messages kept for a /queue channel nobody can take them from"}),
      field(&config::backlog_max_bytes, {.path = "backlog_max_bytes",
                                         .unit = "bytes",
                                         .help = "bytes kept for one /queue channel"}),
      field(&config::backlog_total_max_bytes,
            {.path = "backlog_total_max_bytes",
             .unit = "bytes",
             .help = "bytes kept for all /queue channels together"}),
      field(&config::max_channels, {.path = "max_channels", .min = 1, .help = "channels at once"}),
      field(&config::max_channels_per_connection,
            {.path = "max_channels_per_connection",
             .min = 1,
             .help = "/queue channels one connection may create; past it, closed"}),
      field(&config::backlog_ttl,
            {.path = "backlog_ttl_ms",
             .unit = "ms",
             .min = 0,
             .help = "a /queue backlog with no subscriber this long is dropped (0: kept)"}),
      field(&config::reserved_prefixes,
            {.path = "reserved_prefixes",
             .help = "channel prefixes only the process itself may publish to, comma-separated"}),
      field(&config::token,
            {.path = "token",
             .help = "shared secret a client sends as its first frame (empty: none)"}),
      field(&config::first_frame_timeout,
            {.path = "first_frame_timeout_ms",
             .unit = "ms",
             .min = 0,
             .help = "a connection whose first frame has not arrived this long after it "
                     "connected is closed (0: never)"}),
      field(&config::ping_interval,
            {.path = "ping_interval_ms",
             .unit = "ms",
             .min = 0,
             .help = "a subscriber quiet this long is sent a zero-length frame (0: never)"}),
      field(&config::partial_frame_timeout,
            {.path = "partial_frame_timeout_ms",
             .unit = "ms",
             .min = 0,
             .help = "a connection silent this long in the middle of a frame is closed (0: "
                     "never)"}),
      field(&config::shutdown_deadline,
            {.path = "shutdown_deadline_ms",
             .unit = "ms",
             .min = 0,
             .help = "graceful shutdown delivers queued messages for at most this long"}),
      field(&config::read_chunk_bytes, {.path = "read_chunk_bytes",
                                        .unit = "bytes",
                                        .min = 4096,
                                        .help = "bytes read from a socket per read call"}),
      field(&config::send_buffer_bytes,
            {.path = "send_buffer_bytes",
             .unit = "bytes",
             .help = "SO_SNDBUF of each connection (0: the kernel's autotuning)"}),
  };
}

std::vector<settings::setting> mqtt_rows() {
  return {
      mqtt_field(&mqtt_config::enabled,
                 {.path = "mqtt.enabled", .help = "run the MQTT listener beside the broker"}),
      mqtt_port_row(),
      mqtt_field(&mqtt_config::max_packet_bytes,
                 {.path = "mqtt.max_packet_bytes",
                  .unit = "bytes",
                  .min = 64,
                  .max = 268435455,
                  .help = "largest MQTT packet; a larger one closes the connection"}),
      mqtt_field(&mqtt_config::max_inflight,
                 {.path = "mqtt.max_inflight",
                  .min = 1,
                  .max = 65535,
                  .help = "QoS 1 and 2 messages sent to a client and not yet acknowledged"}),
      mqtt_field(&mqtt_config::max_queued_messages,
                 {.path = "mqtt.max_queued_messages",
                  .help = "QoS 1 and 2 messages kept for one session behind its window"}),
      mqtt_field(&mqtt_config::receive_maximum,
                 {.path = "mqtt.receive_maximum",
                  .min = 1,
                  .max = 65535,
                  .help = "QoS 2 messages a client may have sent and not yet released"}),
      mqtt_field(&mqtt_config::max_session_expiry,
                 {.path = "mqtt.max_session_expiry",
                  .unit = "seconds",
                  .min = 0,
                  .max = 4294967,
                  .help = "longest a session is kept after its client left"}),
      mqtt_field(&mqtt_config::max_sessions, {.path = "mqtt.max_sessions",
                                              .min = 1,
                                              .help = "MQTT sessions at once, connected or kept"}),
      mqtt_field(&mqtt_config::max_subscriptions, {.path = "mqtt.max_subscriptions",
                                                   .min = 1,
                                                   .help = "subscriptions of one MQTT session"}),
      mqtt_field(&mqtt_config::max_retained_messages,
                 {.path = "mqtt.max_retained_messages", .help = "retained messages kept"}),
      mqtt_field(&mqtt_config::max_retained_bytes,
                 {.path = "mqtt.max_retained_bytes",
                  .unit = "bytes",
                  .help = "payload bytes of all retained messages"}),
      mqtt_anonymous_row(),
      mqtt_field(&mqtt_config::anonymous_read,
                 {.path = "mqtt.anonymous_read",
                  .help = "topic filters anonymous clients may subscribe to, comma-separated"}),
      mqtt_field(&mqtt_config::anonymous_write,
                 {.path = "mqtt.anonymous_write",
                  .help = "topic filters anonymous clients may publish to, comma-separated"}),
      mqtt_users_row(),
      mqtt_field(&mqtt_config::max_connections_per_address,
                 {.path = "mqtt.max_connections_per_address",
                  .help = "MQTT connections at once from one client address (0: no cap)"}),
      mqtt_field(&mqtt_config::idle_timeout,
                 {.path = "mqtt.idle_timeout",
                  .unit = "seconds",
                  .min = 0,
                  .max = 4294967,
                  .help = "a client at keep-alive 0 that sends nothing this long is closed "
                          "(0: never)"}),
      mqtt_field(&mqtt_config::max_will_bytes_per_address,
                 {.path = "mqtt.max_will_bytes_per_address",
                  .unit = "bytes",
                  .help = "bytes of wills (topic and payload) one address's connections "
                          "may hold; a will past it refuses the CONNECT"}),
      mqtt_field(&mqtt_config::sys_interval,
                 {.path = "mqtt.sys_interval",
                  .unit = "seconds",
                  .min = 0,
                  .max = 86400,
                  .help = "how often $SYS/broker/... topics are published (0: never)"}),
  };
}

settings::table<config> make_table() {
  std::vector<settings::setting> rows = broker_rows();
  for (auto& row : mqtt_rows())
    rows.push_back(std::move(row));
  return settings::table<config>({{"broker", std::move(rows)}});
}

} // namespace

const settings::table<config>& config_table() {
  static const settings::table<config> table = make_table();
  return table;
}

void to_json(nlohmann::json& j, const config& c) {
  j = config_table().to_json(c);
}

void from_json(const nlohmann::json& j, config& c) {
  if (!j.is_object())
    throw std::invalid_argument("broker config: expected a JSON object");
  try {
    config_table().apply_json(c, j);
  } catch (const settings::error& e) {
    throw std::invalid_argument(std::string("broker config: ") + e.what());
  }
}

config load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument("cannot open broker config file " + path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  // newsdesk's own file: its "broker" object ("broker" is no key of the broker's own files). The
  // rest of that file is newsdesk's to check.
  if (j.is_object() && j.contains("broker")) {
    const nlohmann::json broker = j.at("broker");
    j = broker.is_boolean() ? nlohmann::json{{"enabled", broker}} : broker;
  }
  config c;
  try {
    from_json(j, c);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  return c;
}

void apply_listen_spec(config& c, const std::string& spec) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon + 1 == spec.size())
    throw std::invalid_argument("--listen expects ADDR:PORT, got \"" + spec + "\"");
  std::string addr = spec.substr(0, colon);
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']')
    addr = addr.substr(1, addr.size() - 2);
  unsigned long port = 0;
  try {
    std::size_t used = 0;
    port = std::stoul(spec.substr(colon + 1), &used);
    if (used != spec.size() - colon - 1)
      throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw std::invalid_argument("--listen: bad port in \"" + spec + "\"");
  }
  if (port > 65535)
    throw std::invalid_argument("--listen: port out of range in \"" + spec + "\"");
  c.address = addr.empty() ? "127.0.0.1" : addr;
  c.port = static_cast<std::uint16_t>(port);
  // Port 0 is how tests start a broker: the MQTT listener then takes any free port too, instead
  // of every test's broker racing for 1883.
  if (port == 0) {
    c.mqtt.port = 0;
    c.mqtt.port_given = true;
  }
}

std::string environment_name(std::string_view path) {
  return settings::env_name("NEWSDESK_BROKER", path);
}

std::vector<std::string>
apply_environment(config& c, const std::map<std::string, std::string, std::less<>>& env) {
  std::vector<std::string> known;
  for (const settings::setting* row : config_table().rows()) {
    const std::string name = environment_name(row->path);
    known.push_back(name);
    const auto it = env.find(name);
    if (it == env.end() || it->second.empty())
      continue;
    try {
      config_table().apply_text(c, *row, it->second);
    } catch (const settings::error& e) {
      throw std::invalid_argument(name + ": " + e.what());
    }
  }
  std::vector<std::string> warnings;
  for (const auto& [name, value] : env) {
    if (!name.starts_with("NEWSDESK_BROKER_") || value.empty() ||
        std::find(known.begin(), known.end(), name) != known.end())
      continue;
    const auto near = settings::closest(name, known);
    warnings.push_back("unknown environment variable " + name + " ignored" +
                       (near ? " (did you mean " + *near + "?)" : std::string()));
  }
  return warnings;
}

} // namespace newsdesk::broker
