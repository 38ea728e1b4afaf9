// Reading newsdesk's log lines back in tests: a strict logfmt reader (so a line a value broke
// fails to read) and a capture of the lines the process logs (set_log_sink).
#pragma once

#include "server/core/log.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace newsdesk::testing {

// One line as written: "TIME key=value key=\"quoted value\" ...\n".
struct logfmt_line {
  std::string time;
  std::vector<std::pair<std::string, std::string>> fields; // values unescaped

  // The first field called `key`, or nullopt.
  std::optional<std::string> get(std::string_view key) const {
    for (const auto& [k, v] : fields)
      if (k == key)
        return v;
    return std::nullopt;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& f : fields)
      out.push_back(f.first);
    return out;
  }
};

// Reads exactly one line ending in its only newline, or nullopt when `text` is not that: a
// second line, a raw control character, an unknown escape, an unterminated quote, a key without
// '=', or a bare value holding a quote.
inline std::optional<logfmt_line> read_logfmt_line(std::string_view text) {
  if (text.empty() || text.back() != '\n')
    return std::nullopt;
  text.remove_suffix(1);
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return std::nullopt;
  logfmt_line line;
  std::size_t i = text.find(' ');
  if (i == std::string_view::npos)
    return std::nullopt;
  line.time = std::string(text.substr(0, i));
  while (i < text.size()) {
    if (text[i++] != ' ')
      return std::nullopt;
    const auto eq = text.find('=', i);
    if (eq == std::string_view::npos || eq == i)
      return std::nullopt;
    auto key = std::string(text.substr(i, eq - i));
    if (key.find_first_of(" \"\\") != std::string::npos)
      return std::nullopt;
    i = eq + 1;
    std::string value;
    if (i < text.size() && text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char c = text[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i >= text.size())
          return std::nullopt;
        switch (char e = text[i++]) {
        case '"':
        case '\\':
          value += e;
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'u': {
          if (i + 4 > text.size() || text.substr(i, 2) != "00")
            return std::nullopt;
          value += static_cast<char>(std::stoi(std::string(text.substr(i + 2, 2)), nullptr, 16));
          i += 4;
          break;
        }
        default:
          return std::nullopt;
        }
      }
      if (!closed || (i < text.size() && text[i] != ' '))
        return std::nullopt;
    } else {
      const auto end = std::min(text.find(' ', i), text.size());
      value = std::string(text.substr(i, end - i));
      if (value.find_first_of("\"\\=") != std::string::npos)
        return std::nullopt;
      i = end;
    }
    line.fields.emplace_back(std::move(key), std::move(value));
  }
  return line;
}

// Collects every line logged while it lives, instead of writing them out.
class log_capture {
 public:
  log_capture() {
    server::set_log_sink([this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~log_capture() { server::set_log_sink(nullptr); }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  // The lines holding `text`.
  std::vector<std::string> lines_with(std::string_view text) const {
    std::vector<std::string> out;
    for (auto& l : lines())
      if (l.find(text) != std::string::npos)
        out.push_back(std::move(l));
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

} // namespace newsdesk::testing
