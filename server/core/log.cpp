#include "server/core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>

namespace newsdesk::server {
namespace {
std::atomic<log_level> min_level{log_level::info};
std::atomic<bool> use_stderr{false};

const char* level_name(log_level l) {
  switch (l) {
  case log_level::debug:
    return "debug";
  case log_level::info:
    return "info";
  case log_level::warn:
    return "warn";
  case log_level::error:
    return "error";
  }
  return "info";
}
} // namespace

void set_log_level(log_level level) {
  min_level = level;
}

void log_to_stderr(bool on) {
  use_stderr = on;
}

std::string_view to_string(log_level level) {
  return level_name(level);
}

log_level parse_log_level(std::string_view name) {
  for (auto l : {log_level::debug, log_level::info, log_level::warn, log_level::error})
    if (name == level_name(l))
      return l;
  throw std::invalid_argument("unknown log level '" + std::string(name) +
                              "' (expected debug, info, warn or error)");
}

void log(log_level level, std::string_view message) {
  if (level < min_level.load(std::memory_order_relaxed))
    return;
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line;
  line.reserve(message.size() + 64);
  line += stamp;
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(millis));
  line += ms;
  line += " level=";
  line += level_name(level);
  line += ' ';
  line += message;
  line += '\n';
  auto* out = use_stderr ? stderr : stdout;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

} // namespace newsdesk::server
