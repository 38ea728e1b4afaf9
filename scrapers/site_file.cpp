// Reading one site file: its JSON checked field by field (the value checks themselves are in
// site_file_checks.cpp) into the site_info and rules of a scraper (site_file_scraper.hpp).
#include "scrapers/site_file.hpp"

#include "scrapers/css/selector.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/site_file_checks.hpp"
#include "scrapers/site_file_scraper.hpp"
#include "scrapers/url.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <system_error>
#include <utility>

namespace newsdesk::scrapers {

using detail::colour_from;
using detail::describe_json_error;
using detail::display_name_from;
using detail::feed_scraper;
using detail::is_attribute_name;
using detail::is_hex_colour;
using detail::is_language_tag;
using detail::json_error_text;
using detail::rule;
using detail::site_file_scraper;
using detail::url_filter;

namespace {

using json = nlohmann::json;

// Names a site can be referred to by in URLs and config; longer names are a mistake, not a site.
constexpr std::size_t max_site_name_length = 64;

// The most rules one file may list: each costs a test per element of the page.
constexpr std::size_t max_rules = 20;

// Reads one site file's JSON object, naming the field in every error.
class reader {
 public:
  reader(const std::filesystem::path& file)
      : file_(file) {}

  [[noreturn]] void fail(const std::string& field, std::string reason) const {
    throw site_file_error(file_, field, std::move(reason));
  }

  static std::string describe(const json& j) {
    std::string type = j.type_name();
    if (j.is_string()) {
      return "string " + j.dump();
    }
    if (j.is_number() || j.is_boolean() || j.is_null()) {
      return type + " " + j.dump();
    }
    return "an " + type;
  }

  std::string string_field(const json& j, const std::string& field) const {
    if (!j.is_string()) {
      fail(field, "expected a string, got " + describe(j));
    }
    std::string value;
    j.get_to(value);
    return value;
  }

  double number_field(const json& j, const std::string& field) const {
    if (!j.is_number()) {
      fail(field, "expected a number of seconds, got " + describe(j));
    }
    double value = 0;
    j.get_to(value);
    return value;
  }

  css::selector_list selector_field(const json& j, const std::string& field) const {
    std::string text = string_field(j, field);
    try {
      return css::parse(text);
    } catch (const css::syntax_error& e) {
      fail(field, e.what());
    }
  }

  std::vector<std::string> string_list(const json& j, const std::string& field) const {
    if (!j.is_array()) {
      fail(field, "expected an array of strings, got " + describe(j));
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < j.size(); ++i) {
      std::string where = field + "[" + std::to_string(i) + "]";
      std::string value = string_field(j.at(i), where);
      if (value.empty()) {
        // An empty prefix or substring matches every URL, which is never what was meant.
        fail(where, "must not be empty");
      }
      out.push_back(std::move(value));
    }
    return out;
  }

  url_filter filter_field(const json& j, const std::string& field) const {
    if (!j.is_object()) {
      fail(field, "expected an object with prefix, suffix, contains or regex, got " + describe(j));
    }
    url_filter f;
    for (const auto& [key, value] : j.items()) {
      std::string where = field + "." + key;
      if (key == "prefix") {
        f.prefix = string_list(value, where);
      } else if (key == "suffix") {
        f.suffix = string_list(value, where);
      } else if (key == "contains") {
        f.contains = string_list(value, where);
      } else if (key == "regex") {
        f.regex = regex_field(value, where);
      } else {
        fail(where, "unknown field (known: prefix, suffix, contains, regex)");
      }
    }
    return f;
  }

  // One rule's fields from `j` (the file itself, or an entry of "rules"); `prefix` is how its
  // fields are named in errors ("" or "rules[1].").
  rule rule_field(const json& j, const std::string& prefix) const {
    rule r;
    r.field = prefix + "link";
    r.link_text = string_field(j.at("link"), r.field);
    r.link = selector_field(j.at("link"), r.field);
    if (j.contains("title")) {
      r.title = selector_field(j.at("title"), prefix + "title");
    }
    if (j.contains("title_fallback")) {
      if (!j.at("title_fallback").is_boolean()) {
        fail(prefix + "title_fallback",
             "expected true or false, got " + describe(j.at("title_fallback")));
      }
      r.title_fallback = j.at("title_fallback").get<bool>();
    }
    if (j.contains("url_attribute")) {
      r.url_attribute = string_field(j.at("url_attribute"), prefix + "url_attribute");
      if (!is_attribute_name(r.url_attribute)) {
        fail(prefix + "url_attribute",
             "expected an attribute name, got " + json(r.url_attribute).dump());
      }
    }
    if (j.contains("include")) {
      r.include = filter_field(j.at("include"), prefix + "include");
    }
    if (j.contains("exclude")) {
      r.exclude = filter_field(j.at("exclude"), prefix + "exclude");
    }
    return r;
  }

  std::regex regex_field(const json& j, const std::string& field) const {
    std::string source = string_field(j, field);
    if (source.empty()) {
      fail(field, "must not be empty");
    }
    if (source.size() > max_regex_length) {
      fail(field, "longer than " + std::to_string(max_regex_length) + " characters");
    }
    try {
      return std::regex(source, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(field, "bad regex " + json(source).dump() + ": " + e.what());
    }
  }

 private:
  const std::filesystem::path& file_;
};

// The fields a site file may have at its top level.
const std::vector<std::string> known_fields{
    "name",          "display_name", "url",     "feed",    "colour",  "wait",
    "timeout",       "renderer",     "rules",   "link",    "title",   "title_fallback",
    "url_attribute", "include",      "exclude", "comment", "section", "language"};

// The fields of one rule, at the top level (one rule) or in each entry of "rules".
const std::vector<std::string> rule_fields{"link",          "title",   "title_fallback",
                                           "url_attribute", "include", "exclude"};

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    out += (out.empty() ? "" : ", ") + w;
  }
  return out;
}

} // namespace

site_file_error::site_file_error(std::filesystem::path file, std::string field, std::string reason)
    : std::runtime_error(file.string() + ": " + (field.empty() ? "" : field + ": ") + reason)
    , file_(std::move(file))
    , field_(std::move(field))
    , reason_(std::move(reason)) {}

std::unique_ptr<scraper> parse_site_file(std::string_view json_text,
                                         const std::filesystem::path& file) {
  reader in(file);
  if (json_text.size() > max_site_file_bytes) {
    in.fail("", "larger than " + std::to_string(max_site_file_bytes) + " bytes");
  }
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    in.fail("", "not valid JSON: " + describe_json_error(json_text, e));
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double ("1E400").
    in.fail("", "not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) {
    in.fail("", "expected a JSON object { ... }, got " + reader::describe(j));
  }
  for (const auto& item : j.items()) {
    if (std::find(known_fields.begin(), known_fields.end(), item.key()) == known_fields.end()) {
      in.fail(item.key(), "unknown field (known: " + joined(known_fields) + ")");
    }
  }
  if (!j.contains("name")) {
    in.fail("name", "missing (required)");
  }
  const bool is_feed = j.contains("feed");
  if (!is_feed && !j.contains("url")) {
    in.fail("url", "missing: give the page's url (or a feed)");
  }
  if (is_feed) {
    for (const char* page_only : {"rules", "link", "title", "title_fallback", "url_attribute",
                                  "include", "exclude", "wait"}) {
      if (j.contains(page_only)) {
        in.fail(page_only, "not for a feed: a feed's items are its headlines");
      }
    }
  }
  if (j.contains("rules") && j.contains("link")) {
    in.fail("rules", "give either rules or a top-level link, not both");
  }

  site_info info;
  info.name = in.string_field(j.at("name"), "name");
  if (!is_valid_site_name(info.name) || info.name.size() > max_site_name_length) {
    in.fail("name", "expected 1-" + std::to_string(max_site_name_length) +
                        " characters of a-z, 0-9, _ and -, got " + json(info.name).dump());
  }
  info.display_name = display_name_from(info.name);
  if (j.contains("display_name")) {
    // Shown on the page, in logs and on terminals: no control characters, one line.
    info.display_name = collapse_whitespace(in.string_field(j.at("display_name"), "display_name"));
    if (info.display_name.empty()) {
      in.fail("display_name", "must not be empty");
    }
  }
  if (j.contains("section")) {
    // A chip on the page, like the display name: one line of a few words.
    info.section = collapse_whitespace(in.string_field(j.at("section"), "section"));
    if (info.section.empty() || info.section.size() > max_section_bytes)
      in.fail("section", "expected 1-" + std::to_string(max_section_bytes) +
                             " bytes of text, got " + json(info.section).dump());
  }
  // A feed site's URL is its feed's: that is what is fetched. Its "url", when given, is the
  // site's home page, shown to people and never fetched.
  const char* url_field = is_feed ? "feed" : "url";
  info.url = in.string_field(j.at(url_field), url_field);
  if (!url::is_http_url(info.url)) {
    in.fail(url_field,
            "expected an absolute http:// or https:// URL, got " + json(info.url).dump());
  }
  if (is_feed && j.contains("url")) {
    info.home_url = in.string_field(j.at("url"), "url");
    if (!url::is_http_url(info.home_url)) {
      in.fail("url", "expected the site's home page as an absolute http:// or https:// URL, got " +
                         json(info.home_url).dump());
    }
  }
  info.colour = colour_from(info.name);
  if (j.contains("colour")) {
    info.colour = in.string_field(j.at("colour"), "colour");
    if (!is_hex_colour(info.colour)) {
      in.fail("colour", "expected #rgb or #rrggbb, got " + json(info.colour).dump());
    }
  }
  if (j.contains("wait")) {
    double wait = in.number_field(j.at("wait"), "wait");
    if (!(wait >= 0 && wait <= 3600)) {
      in.fail("wait", "expected seconds from 0 to 3600");
    }
    info.wait_seconds = wait;
  }
  if (j.contains("timeout")) {
    double timeout = in.number_field(j.at("timeout"), "timeout");
    if (!(timeout > 0 && timeout <= 3600)) {
      in.fail("timeout", "expected seconds above 0, at most 3600");
    }
    info.timeout_seconds = timeout;
  }
  if (info.wait_seconds && info.timeout_seconds && *info.wait_seconds >= *info.timeout_seconds) {
    in.fail("wait", "must be below timeout");
  }
  if (j.contains("renderer")) {
    std::string renderer = in.string_field(j.at("renderer"), "renderer");
    if (!is_renderer_name(renderer)) {
      in.fail("renderer",
              "expected one of " + renderer_name_list() + ", got " + json(renderer).dump());
    }
    info.renderer = renderer;
  }
  if (is_feed) {
    if (info.renderer && *info.renderer != "feed") {
      in.fail("renderer",
              "a feed is read by the feed renderer, got " + json(*info.renderer).dump());
    }
    info.renderer = "feed";
  }
  if (j.contains("language")) {
    info.language = in.string_field(j.at("language"), "language");
    if (!is_language_tag(info.language)) {
      in.fail("language", "expected a language tag such as \"de\", \"pt-BR\" or \"zh-Hant\", got " +
                              json(info.language).dump());
    }
  }
  if (j.contains("comment")) {
    in.string_field(j.at("comment"), "comment");
  }
  info.origin = file.string();
  if (is_feed) {
    return std::make_unique<feed_scraper>(std::move(info), j.dump());
  }

  std::vector<rule> rules; // none: detection finds the headlines
  if (!j.contains("link")) {
    for (const auto& field : rule_fields) {
      if (field != "link" && j.contains(field)) {
        in.fail(field, "only with a top-level link (or inside rules)");
      }
    }
  }
  if (j.contains("link")) {
    rules.push_back(in.rule_field(j, ""));
  } else if (j.contains("rules")) {
    const json& list = j.at("rules");
    if (!list.is_array() || list.empty() || list.size() > max_rules) {
      in.fail("rules", "expected an array of 1 to " + std::to_string(max_rules) +
                           " rules {\"link\": ..., \"title\": ...}, got " + reader::describe(list));
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "rules[" + std::to_string(i) + "]";
      if (!list[i].is_object()) {
        in.fail(where, "expected a rule {\"link\": ..., \"title\": ...}, got " +
                           reader::describe(list[i]));
      }
      for (const auto& item : list[i].items()) {
        if (std::find(rule_fields.begin(), rule_fields.end(), item.key()) == rule_fields.end()) {
          in.fail(where + "." + item.key(), "unknown field (known: " + joined(rule_fields) + ")");
        }
      }
      if (!list[i].contains("link")) {
        in.fail(where + ".link", "missing (required)");
      }
      rules.push_back(in.rule_field(list[i], where + "."));
    }
  }
  return std::make_unique<site_file_scraper>(std::move(info), std::move(rules), j.dump());
}

std::unique_ptr<scraper> load_site_file(const std::filesystem::path& file) {
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    throw site_file_error(file, "", "cannot read: " + ec.message());
  }
  if (size > max_site_file_bytes) {
    throw site_file_error(file, "",
                          "larger than " + std::to_string(max_site_file_bytes) + " bytes (" +
                              std::to_string(size) + "); is this a site file?");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw site_file_error(file, "", "cannot open for reading");
  }
  // Read at most one byte past the limit, in case the file grew since file_size().
  std::string text(max_site_file_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) {
    throw site_file_error(file, "", "read error");
  }
  return parse_site_file(text, file);
}

} // namespace newsdesk::scrapers
