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
// space.
class collapsed_text {
 public:
  void append(std::string_view chunk) {
    for (char c : chunk) {
      if (is_ascii_whitespace(c)) {
        pending_space_ = true;
        continue;
      }
      if (pending_space_ && !out_.empty())
        out_.push_back(' ');
      pending_space_ = false;
      out_.push_back(c);
    }
  }
  void reserve(std::size_t bytes) { out_.reserve(bytes); }
  std::string take() && { return std::move(out_); }

 private:
  std::string out_;
  bool pending_space_ = false; // whitespace seen since the last character written
};

} // namespace newsdesk::scrapers
