// The checks a site file's values must pass, the defaults made for values it leaves out, and the
// wording of JSON syntax errors (site_file_checks.hpp).
#include "scrapers/site_file_checks.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

namespace newsdesk::scrapers::detail {
namespace {

using json = nlohmann::json;

// "line 4, column 7" of byte `at` in `text` (both counted from 1).
std::string line_and_column(std::string_view text, std::size_t at) {
  at = std::min(at, text.size());
  const auto before = text.substr(0, at);
  const auto line = std::count(before.begin(), before.end(), '\n') + 1;
  const auto line_start = before.rfind('\n');
  const auto column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

} // namespace

std::string display_name_from(std::string_view name) {
  std::string out;
  bool word_start = true;
  for (char c : name) {
    if (c == '_' || c == '-') {
      out += ' ';
      word_start = true;
    } else {
      out += word_start && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
      word_start = false;
    }
  }
  return out;
}

// Mid-tone colours: the page picks black or white text for each.
std::string colour_from(std::string_view name) {
  static constexpr std::array<std::string_view, 12> palette{
      "#c0392b", "#2471a3", "#1e8449", "#b9770e", "#7d3c98", "#117a65",
      "#a04000", "#2e4053", "#c2185b", "#00838f", "#5d6d7e", "#6e2c00"};
  std::uint32_t hash = 2166136261u; // FNV-1a
  for (char c : name) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  }
  return std::string(palette[hash % palette.size()]);
}

bool is_attribute_name(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  return std::none_of(name.begin(), name.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7F || c == '"' || c == '\'' || c == '>' || c == '/' || c == '=';
  });
}

bool is_language_tag(std::string_view tag) {
  std::size_t part = 0;
  while (!tag.empty()) {
    const auto dash = tag.find('-');
    const auto sub = tag.substr(0, dash);
    tag = dash == std::string_view::npos ? std::string_view() : tag.substr(dash + 1);
    const bool letters = std::all_of(sub.begin(), sub.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    });
    const bool alnum = std::all_of(sub.begin(), sub.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    });
    if (part == 0 ? !(letters && sub.size() >= 2 && sub.size() <= 3)
                  : !(alnum && !sub.empty() && sub.size() <= 8))
      return false;
    if (dash == std::string_view::npos)
      return true;
    if (tag.empty())
      return false;
    ++part;
  }
  return false;
}

bool is_hex_colour(std::string_view c) {
  if ((c.size() != 4 && c.size() != 7) || c[0] != '#') {
    return false;
  }
  return std::all_of(c.begin() + 1, c.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
  });
}

std::string json_error_text(const json::exception& e) {
  std::string what = e.what();
  if (auto bracket = what.find("] "); what.starts_with("[") && bracket != std::string::npos) {
    what.erase(0, bracket + 2);
  }
  return what;
}

// A JSON syntax error at the mistake rather than where the parser noticed it: nlohmann reports
// a trailing comma at the '}' after it (often the next line), and a missing comma at the next
// member. Either is named, at the comma or the value it should follow.
std::string describe_json_error(std::string_view text, const json::parse_error& e) {
  std::string what = json_error_text(e);
  if (e.byte == 0 || e.byte > text.size()) {
    return what;
  }
  // e.byte ends the token the parser stopped at: back to that token's start.
  const std::size_t at = e.byte - 1;
  std::size_t start = at;
  if (text[at] == '"') {
    start = at > 0 ? text.rfind('"', at - 1) : 0;
    start = start == std::string_view::npos ? at : start;
  } else {
    while (start > 0 &&
           (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '.' ||
            text[start - 1] == '-' || text[start - 1] == '+')) {
      --start;
    }
  }
  std::size_t prev = start;
  while (prev > 0 && std::string_view(" \t\r\n").find(text[prev - 1]) != std::string_view::npos) {
    --prev;
  }
  if (prev == 0) {
    return what;
  }
  const char stopped = text[at], last = text[prev - 1];
  if ((stopped == '}' || stopped == ']') && last == ',') {
    return line_and_column(text, prev - 1) + ": trailing comma before '" + stopped +
           "' (JSON allows none: remove it)";
  }
  if ((what.find("expected '}'") != std::string::npos ||
       what.find("expected ']'") != std::string::npos) &&
      last != ',' && last != '{' && last != '[') {
    return line_and_column(text, prev) + ": missing ',' after this value";
  }
  return what;
}

} // namespace newsdesk::scrapers::detail
