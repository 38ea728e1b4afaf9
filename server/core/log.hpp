// One line per event, logfmt: "2026-11-22T08:55:06.123Z level=warn msg=... key=value".
// On stdout by default (where container runtimes collect it), or stderr. Thread-safe, and
// never blocking: lines are written by a writer thread, in the order they were logged (see
// log.cpp), so a slow terminal or pipe never holds up a request.
//
// A value that may carry arbitrary text (an error's message, a path, a name read from a file or
// a peer) goes into a line through logfmt_quoted, never between hand-written quotes: then no text
// can end its value early, forge a field or start a line of its own.
#pragma once

#include <functional>
#include <string>
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

// `text` as one logfmt value, in double quotes: `"` and `\` escaped with a backslash, a newline,
// carriage return and tab as \n, \r and \t, any other control character (and DEL) as \u00XX.
// Bytes from 0x80 up are kept as they are, so UTF-8 stays readable.
std::string logfmt_quoted(std::string_view text);

// Which characters append_escaped escapes besides `"`, `\` and newline.
enum class escape_style {
  logfmt,     // every other control character too, as logfmt_quoted describes
  prometheus, // none: a Prometheus label value may hold them as they are, and the exposition
              // format knows no escape but \\, \" and \n
};
// Appends `text` escaped for between double quotes (the quotes themselves are the caller's): the
// one escaping routine behind logfmt_quoted, the access log and Prometheus label values.
void append_escaped(std::string& out, std::string_view text,
                    escape_style style = escape_style::logfmt);

// Tests: from now on every line (with its newline) goes to `sink`, called on the thread that
// logs it, instead of to the output; an empty function restores the output. `sink` must not log.
void set_log_sink(std::function<void(std::string_view line)> sink);

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
