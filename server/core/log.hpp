// One line per event, logfmt: "2026-11-22T08:55:06.123Z level=warn msg=... key=value".
// On stdout by default (where container runtimes collect it), or stderr. Thread-safe, and
// never blocking: lines are written by a writer thread, in the order they were logged (see
// log.cpp), so a slow terminal or pipe never holds up a request.
#pragma once

#include <string_view>

namespace newsdesk::server {

enum class log_level { debug, info, warn, error };

void set_log_level(log_level level);
// true: stderr; false: stdout (the default).
void log_to_stderr(bool on);
log_level parse_log_level(std::string_view name); // throws std::invalid_argument naming it
std::string_view to_string(log_level level);      // "debug", "info", "warn", "error"
void log(log_level level, std::string_view message);
// An info line on a hot path (one per HTTP request): appended to a buffer of the calling thread's
// own, which the writer collects within log_access_delay_ms, so a request neither waits for a
// lock another thread holds nor makes a system call. Lines of different threads may come out
// up to that delay out of order (each carries its time).
void log_access(std::string_view message);
inline constexpr int log_access_delay_ms = 50;

inline void log_info(std::string_view m) {
  log(log_level::info, m);
}
inline void log_warn(std::string_view m) {
  log(log_level::warn, m);
}
inline void log_error(std::string_view m) {
  log(log_level::error, m);
}

} // namespace newsdesk::server
