#include "broker/config.hpp"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace newsdesk::broker {

namespace {

const char* policy_name(slow_consumer_policy p) {
  return p == slow_consumer_policy::disconnect ? "disconnect" : "drop_newest";
}

slow_consumer_policy policy_from(const std::string& s) {
  if (s == "drop_newest")
    return slow_consumer_policy::drop_newest;
  if (s == "disconnect")
    return slow_consumer_policy::disconnect;
  throw std::invalid_argument("broker config: slow_consumer must be \"drop_newest\" or "
                              "\"disconnect\", got \"" +
                              s + "\"");
}

template <class T> void read_key(const nlohmann::json& j, const char* key, T& out) {
  try {
    j.at(key).get_to(out);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("broker config: key \"") + key + "\": " + e.what());
  }
}

void read_ms(const nlohmann::json& j, const char* key, std::chrono::milliseconds& out) {
  std::int64_t v = 0;
  read_key(j, key, v);
  if (v < 0)
    throw std::invalid_argument(std::string("broker config: key \"") + key +
                                "\" must not be negative");
  out = std::chrono::milliseconds(v);
}

} // namespace

void to_json(nlohmann::json& j, const config& c) {
  j = nlohmann::json{{"enabled", c.enabled},
                     {"address", c.address},
                     {"port", c.port},
                     {"max_frame_bytes", c.max_frame_bytes},
                     {"max_channel_name", c.max_channel_name},
                     {"max_connections", c.max_connections},
                     {"queue_max_messages", c.queue_max_messages},
                     {"queue_max_bytes", c.queue_max_bytes},
                     {"slow_consumer", policy_name(c.slow_consumer)},
                     {"hard_limit_bytes", c.hard_limit_bytes},
                     {"write_deadline_ms", c.write_deadline.count()},
                     {"backlog_max_messages", c.backlog_max_messages},
                     {"backlog_max_bytes", c.backlog_max_bytes},
                     {"backlog_total_max_bytes", c.backlog_total_max_bytes},
                     {"max_channels", c.max_channels},
                     {"partial_frame_timeout_ms", c.partial_frame_timeout.count()},
                     {"shutdown_deadline_ms", c.shutdown_deadline.count()},
                     {"read_chunk_bytes", c.read_chunk_bytes},
                     {"send_buffer_bytes", c.send_buffer_bytes}};
}

void from_json(const nlohmann::json& j, config& c) {
  if (!j.is_object())
    throw std::invalid_argument("broker config: expected a JSON object");
  for (const auto& item : j.items()) {
    const std::string& k = item.key();
    if (k == "enabled")
      read_key(j, "enabled", c.enabled);
    else if (k == "address")
      read_key(j, "address", c.address);
    else if (k == "port")
      read_key(j, "port", c.port);
    else if (k == "max_frame_bytes")
      read_key(j, "max_frame_bytes", c.max_frame_bytes);
    else if (k == "max_channel_name")
      read_key(j, "max_channel_name", c.max_channel_name);
    else if (k == "max_connections")
      read_key(j, "max_connections", c.max_connections);
    else if (k == "queue_max_messages")
      read_key(j, "queue_max_messages", c.queue_max_messages);
    else if (k == "queue_max_bytes")
      read_key(j, "queue_max_bytes", c.queue_max_bytes);
    else if (k == "slow_consumer") {
      std::string s;
      read_key(j, "slow_consumer", s);
      c.slow_consumer = policy_from(s);
    } else if (k == "hard_limit_bytes")
      read_key(j, "hard_limit_bytes", c.hard_limit_bytes);
    else if (k == "write_deadline_ms")
      read_ms(j, "write_deadline_ms", c.write_deadline);
    else if (k == "backlog_max_messages")
      read_key(j, "backlog_max_messages", c.backlog_max_messages);
    else if (k == "backlog_max_bytes")
      read_key(j, "backlog_max_bytes", c.backlog_max_bytes);
    else if (k == "backlog_total_max_bytes")
      read_key(j, "backlog_total_max_bytes", c.backlog_total_max_bytes);
    else if (k == "max_channels")
      read_key(j, "max_channels", c.max_channels);
    else if (k == "partial_frame_timeout_ms")
      read_ms(j, "partial_frame_timeout_ms", c.partial_frame_timeout);
    else if (k == "shutdown_deadline_ms")
      read_ms(j, "shutdown_deadline_ms", c.shutdown_deadline);
    else if (k == "read_chunk_bytes")
      read_key(j, "read_chunk_bytes", c.read_chunk_bytes);
    else if (k == "send_buffer_bytes")
      read_key(j, "send_buffer_bytes", c.send_buffer_bytes);
    else
      throw std::invalid_argument("broker config: unknown key \"" + k + "\"");
  }
  if (c.max_frame_bytes == 0 || c.max_frame_bytes > 0x7fffffffU)
    throw std::invalid_argument("broker config: key \"max_frame_bytes\" must be in 1..2^31-1");
  if (c.max_channel_name == 0)
    throw std::invalid_argument("broker config: key \"max_channel_name\" must be positive");
  if (c.max_channels == 0)
    throw std::invalid_argument("broker config: key \"max_channels\" must be positive");
  if (c.read_chunk_bytes < 4096)
    throw std::invalid_argument("broker config: key \"read_chunk_bytes\" must be >= 4096");
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
}

} // namespace newsdesk::broker
