// Whitespace as HTML defines it (ASCII space, tab, LF, FF, CR), shared by the DOM wrapper, the
// headline rules, URL cleaning, CSS selectors and site files so they agree on what a space is.
// U+00A0 and other Unicode spaces are text, as in browsers' whitespace collapsing.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace newsdesk::scrapers {

constexpr bool is_ascii_whitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence. Everything kept from
// outside (titles, URLs, error texts) is cut with it before it is stored or shown.
constexpr std::string_view cut_utf8(std::string_view text, std::size_t max) {
  if (text.size() <= max)
    return text;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;
  return text.substr(0, end);
}

constexpr std::string_view trim_ascii_whitespace(std::string_view text) {
  while (!text.empty() && is_ascii_whitespace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_ascii_whitespace(text.back()))
    text.remove_suffix(1);
  return text;
}

// Builds text with every run of whitespace collapsed to one space and none at either end, from
// one or more chunks: a run that spans chunks (the text nodes of "a <b> b</b>") is still one
// space. Characters that are not text are never kept: control characters (C0, DEL and C1, which
// reach terminals and logs as commands) and line separators count as whitespace; the invisible
// ones that only reorder or hide text (bidirectional overrides and isolates, zero-width space,
// byte order mark) are dropped, so a title cannot display other than it reads.
class collapsed_text {
 public:
  void append(std::string_view chunk) {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const auto c = static_cast<unsigned char>(chunk[i]);
      auto next = [&](std::size_t k) {
        return i + k < chunk.size() ? static_cast<unsigned char>(chunk[i + k]) : 0;
      };
      if (c < 0x20 || c == 0x7f || (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) ||
          (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9))) {
        pending_space_ = true; // ASCII whitespace, controls, U+2028 and U+2029
        i += c < 0x80 ? 0 : c == 0xc2 ? 1 : 2;
        continue;
      }
      if (c == 0xe2 &&
          ((next(1) == 0x80 && (next(2) == 0x8b || (next(2) >= 0xaa && next(2) <= 0xae))) ||
           (next(1) == 0x81 && next(2) >= 0xa6 && next(2) <= 0xa9))) {
        i += 2; // U+200B, U+202A-U+202E, U+2066-U+2069
        continue;
      }
      if (c == 0xef && next(1) == 0xbb && next(2) == 0xbf) {
        i += 2; // U+FEFF
        continue;
      }
      if (c == ' ') {
        pending_space_ = true;
        continue;
      }
      if (pending_space_ && !out_.empty())
        out_.push_back(' ');
      pending_space_ = false;
      out_.push_back(static_cast<char>(c));
    }
  }
  void reserve(std::size_t bytes) { out_.reserve(bytes); }
  std::string take() && { return std::move(out_); }

 private:
  std::string out_;
  bool pending_space_ = false; // whitespace seen since the last character written
};

} // namespace newsdesk::scrapers
