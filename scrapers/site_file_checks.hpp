// Internal to scrapers/ (namespace detail): the checks a site file's values must pass, the
// defaults made for values it leaves out, and the wording of a JSON syntax error, for
// parse_site_file (site_file.cpp). Not part of the site-file surface: only site_file.cpp and
// site_file_checks.cpp include it. Every function is pure and never throws except std::bad_alloc.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace newsdesk::scrapers::detail {

// A display name made from a site's name: "hacker_news" -> "Hacker News".
std::string display_name_from(std::string_view name);

// A colour for a site file without one ("#rrggbb"): picked by the name, so it stays the same
// across restarts and machines.
std::string colour_from(std::string_view name);

// Whether `name` can be an HTML attribute's name (url_attribute): not empty, no spaces, control
// characters, quotes, '>', '/' or '='.
bool is_attribute_name(std::string_view name);

// A BCP 47 language tag's shape: a primary language of 2-3 letters, then subtags of 1-8 letters
// or digits, separated by '-' ("de", "pt-BR", "zh-Hant-TW", "sr-Latn").
bool is_language_tag(std::string_view tag);

// "#rgb" or "#rrggbb" in hex digits of either case.
bool is_hex_colour(std::string_view c);

// An nlohmann exception's message without its "[json.exception.parse_error.101] " tag: the rest
// names the line and column.
std::string json_error_text(const nlohmann::json::exception& e);

// The message for a JSON syntax error `e` in `text`, without nlohmann's tag: a trailing comma or
// a missing one is named at the comma or at the value it should follow ("line 4, column 7:
// trailing comma before '}' ..."); anything else as nlohmann words it.
std::string describe_json_error(std::string_view text, const nlohmann::json::parse_error& e);

} // namespace newsdesk::scrapers::detail
