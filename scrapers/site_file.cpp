#include "scrapers/site_file.hpp"

#include "scrapers/charset.hpp"
#include "scrapers/css/selector.hpp"
#include "scrapers/detect.hpp"
#include "scrapers/dom.hpp"
#include "scrapers/feed.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/text.hpp"
#include "scrapers/url.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace newsdesk::scrapers {
namespace {

using json = nlohmann::json;

// Names a site can be referred to by in URLs and config; longer names are a mistake, not a site.
constexpr std::size_t max_site_name_length = 64;

struct url_filter {
  std::vector<std::string> prefix;
  std::vector<std::string> suffix;
  std::vector<std::string> contains;
  std::optional<std::regex> regex;

  bool empty() const { return prefix.empty() && suffix.empty() && contains.empty() && !regex; }
};

bool any_prefix(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& p) { return url.starts_with(p); });
}
bool any_suffix(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& s) { return url.ends_with(s); });
}
bool any_substring(const std::vector<std::string>& list, std::string_view url) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& s) { return url.find(s) != std::string_view::npos; });
}
bool regex_finds(const std::regex& re, const std::string& url) {
  return std::regex_search(url, re);
}

// include: every kind that is given must match (any entry of a list will do).
bool included(const url_filter& f, const std::string& url) {
  return (f.prefix.empty() || any_prefix(f.prefix, url)) &&
         (f.suffix.empty() || any_suffix(f.suffix, url)) &&
         (f.contains.empty() || any_substring(f.contains, url)) &&
         (!f.regex || regex_finds(*f.regex, url));
}

// exclude: any single test that matches is enough.
bool excluded(const url_filter& f, const std::string& url) {
  return any_prefix(f.prefix, url) || any_suffix(f.suffix, url) || any_substring(f.contains, url) ||
         (f.regex && regex_finds(*f.regex, url));
}

struct rule {
  std::string field;     // how errors and hints name it: "link" or "rules[1].link"
  std::string link_text; // the selector as written
  css::selector_list link;
  std::optional<css::selector_list> title;
  bool title_fallback = false; // the link's own text when `title` finds nothing inside it
  std::string url_attribute = "href";
  url_filter include;
  url_filter exclude;
};

// The most rules one file may list: each costs a test per element of the page.
constexpr std::size_t max_rules = 20;

class site_file_scraper final : public scraper {
 public:
  site_file_scraper(site_info info, std::vector<rule> rules, std::string definition)
      : info_(std::move(info))
      , rules_(std::move(rules))
      , definition_(std::move(definition)) {}

  const site_info& site() const override { return info_; }
  std::string definition() const override { return definition_; }

  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    return run(page, page_url, nullptr, false);
  }

  // Selectors first; detection when the file has none, or when they find nothing (a redesign):
  // the site keeps its headlines and the note tells the operator to update the file.
  using scraper::parse;
  std::vector<headline> parse(std::string_view html, std::string_view page_url, std::string* note,
                              std::string_view content_type) const override {
    site_trial trial;
    const auto page = parse_page(html, content_type);
    auto found = read(page, page_url, trial, false);
    declare_language(found, page_language(page));
    if (note)
      *note = trial.method == fallback_method ? "found by detection; the selectors matched nothing"
                                              : "";
    return found;
  }

  // run(), then detection when the selectors found nothing; `s.method` says which. With
  // `explain`, s.left_out lists every link left out and why (for --try-site; the service does
  // without the list).
  std::vector<headline> read(const dom::document& page, std::string_view page_url, site_trial& s,
                             bool explain) const {
    auto found = run(page, page_url, &s, explain);
    if (found.empty() && s.method == "selectors") {
      found = detect_headlines(page, page_url, info_.name, explain ? &s.left_out : nullptr);
      if (!found.empty()) {
        s.method = fallback_method;
      }
    }
    return found;
  }
  static constexpr const char* fallback_method = "detection (the selectors matched nothing)";

  // Never throws except std::bad_alloc (which terminates a noexcept caller as it would anyway).
  std::vector<headline> run(const dom::document& page, std::string_view page_url, site_trial* stats,
                            bool explain) const {
    site_trial ignored;
    site_trial& s = stats ? *stats : ignored;
    std::vector<left_out_link>* left_out = stats && explain ? &s.left_out : nullptr;
    if (rules_.empty()) { // a file with only a name and a URL: detection is its rule
      s.method = "detection";
      return detect_headlines(page, page_url, info_.name, left_out);
    }
    s.method = "selectors";
    headline_collector collector(info_.name, page_url, page);
    collector.report_left_out(left_out);
    auto leave_out = [&](dom::node link, std::string_view url, const char* reason) {
      if (left_out)
        left_out->push_back({collapse_whitespace(cut_utf8(link.text(), max_left_out_title)),
                             std::string(url), reason});
    };
    // Per rule: elements matched, and how many of those had no URL but hold a link.
    std::map<const rule*, std::pair<std::size_t, std::size_t>> holders;
    for (const auto& [link, r] : matches(page)) {
      ++holders[r].first;
      ++s.link_matches;
      std::optional<std::string_view> href = link.attr(r->url_attribute);
      std::optional<std::string> target = href ? collector.resolve(*href) : std::nullopt;
      if (!target || !url::is_http_url(*target)) {
        ++s.without_url;
        leave_out(link, href ? *href : std::string_view(), "no usable URL");
        if (!href && css::select_first(link, links_inside())) {
          ++holders[r].second;
        }
        continue;
      }
      dom::node title = r->title ? css::select_first(link, *r->title) : link;
      if (!title && r->title_fallback) {
        title = link;
      }
      const auto parts = title ? split_title(title) : title_parts();
      const std::string& text = parts.title;
      if (text.empty()) {
        ++s.without_title;
        leave_out(link, *target, "bad title: the title selector found no text");
        continue;
      }
      if (!passes_filters(*r, *target)) {
        ++s.filtered_out;
        leave_out(link, *target, "filtered out by include/exclude");
        continue;
      }
      if (!collector.add(text, *href, time_near(link, collector.now_ms()), parts.kicker)) {
        switch (collector.last_refusal()) {
        case headline_collector::refusal::bad_title:
          ++s.bad_titles;
          break;
        case headline_collector::refusal::not_http:
          ++s.without_url;
          break;
        default:
          ++s.duplicates;
        }
      } else {
        collector.illustrate_last(image_near(link));
      }
    }
    // A selector that matches the boxes around links rather than the links is the commonest
    // mistake: say so, and how to fix it.
    for (const auto& [r, count] : holders) {
      if (count.first > 0 && count.second == count.first) {
        s.hint = r->field + ": '" + r->link_text + "' matched " + std::to_string(count.first) +
                 (count.first == 1 ? " element" : " elements") +
                 " but none is a link (an <a href>); they contain links: try '" + r->link_text +
                 " a'";
        break;
      }
    }
    return collector.take();
  }

 private:
  static const css::selector_list& links_inside() {
    static const css::selector_list list = css::parse("a[href]");
    return list;
  }

  // The elements the rules' link selectors match, in page order, each with the first rule that
  // matches it (up to max_link_matches): headlines keep the page's order whichever rule found
  // them.
  std::vector<std::pair<dom::node, const rule*>> matches(const dom::document& page) const {
    std::vector<std::pair<dom::node, const rule*>> out;
    if (rules_.size() == 1) {
      for (dom::node e : css::select(page.root(), rules_.front().link)) {
        out.emplace_back(e, &rules_.front());
      }
    } else {
      // One selection per rule (each linear in the page), then one walk to put the matches in
      // page order: testing every element against every rule would walk each one's ancestors.
      std::unordered_map<const void*, const rule*> first_rule;
      for (const rule& r : rules_) {
        for (dom::node e : css::select(page.root(), r.link)) {
          first_rule.emplace(e.raw(), &r); // an earlier rule keeps an element it matched
        }
      }
      for (dom::node e : page.root().descendant_elements()) {
        if (out.size() > max_link_matches || out.size() == first_rule.size()) {
          break;
        }
        if (auto it = first_rule.find(e.raw()); it != first_rule.end()) {
          out.emplace_back(e, it->second);
        }
      }
    }
    if (out.size() > max_link_matches) {
      out.resize(max_link_matches);
    }
    return out;
  }

  static bool passes_filters(const rule& r, const std::string& url) {
    if (r.include.empty() && r.exclude.empty()) {
      return true;
    }
    if (url.size() > max_filtered_url_bytes) {
      return false;
    }
    // std::regex reports resource exhaustion (a pathological pattern) by throwing; extract()
    // must not throw, and a link we cannot judge is better left out.
    try {
      return included(r.include, url) && !excluded(r.exclude, url);
    } catch (const std::regex_error&) {
      return false;
    }
  }

  site_info info_;
  std::vector<rule> rules_;
  std::string definition_; // the file's JSON, dumped: keys sorted, no whitespace
};

// A site read from its RSS or Atom feed: the "page" it is given is the feed's bytes.
class feed_scraper final : public scraper {
 public:
  feed_scraper(site_info info, std::string definition)
      : info_(std::move(info))
      , definition_(std::move(definition)) {}

  const site_info& site() const override { return info_; }
  std::string definition() const override { return definition_; }
  // A feed has no page to look at: its headlines come from parse().
  std::vector<headline> extract(const dom::document&, std::string_view) const override {
    return {};
  }
  using scraper::parse;
  // A feed's warning (read in recovery mode, or in another encoding than it claims) is not
  // passed on as the note: /news shows any note as "found by detection".
  std::vector<headline> parse(std::string_view bytes, std::string_view feed_url, std::string* note,
                              std::string_view content_type) const override {
    if (note)
      note->clear();
    auto read = parse_feed(bytes, feed_url, info_.name, content_type);
    declare_language(read.headlines, read.language);
    return std::move(read.headlines);
  }

 private:
  site_info info_;
  std::string definition_;
};

// A display name made from a site's name: "hacker_news" -> "Hacker News".
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

// A colour for a site file without one: picked by the name, so it stays the same across
// restarts and machines. Mid-tone colours: the page picks black or white text for each.
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

// A BCP 47 language tag's shape: a primary language of 2-3 letters, then subtags of 1-8 letters
// or digits, separated by '-' ("de", "pt-BR", "zh-Hant-TW", "sr-Latn").
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

// "line 4, column 7" of byte `at` in `text` (both counted from 1).
std::string line_and_column(std::string_view text, std::size_t at) {
  at = std::min(at, text.size());
  const auto before = text.substr(0, at);
  const auto line = std::count(before.begin(), before.end(), '\n') + 1;
  const auto line_start = before.rfind('\n');
  const auto column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// A JSON syntax error at the mistake rather than where the parser noticed it: nlohmann reports
// a trailing comma at the '}' after it (often the next line), and a missing comma at the next
// member. Either is named, at the comma or the value it should follow.
std::string describe_json_error(std::string_view text, const json::parse_error& e) {
  std::string what = e.what();
  // Drop nlohmann's "[json.exception.parse_error.101] " tag; the rest names line and column.
  if (auto bracket = what.find("] "); what.starts_with("[") && bracket != std::string::npos) {
    what.erase(0, bracket + 2);
  }
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

// Adds `s` to `r`, or throws naming whoever has the name already.
void add_site(registry& r, std::unique_ptr<scraper> s, const std::filesystem::path& file) {
  if (const scraper* taken = r.find(s->site().name)) {
    const site_info& other = taken->site();
    std::string by = !other.origin.empty() ? other.origin
                                           : "the built-in scraper " + other.display_name + " (" +
                                                 origin_of(other) + ")";
    throw site_file_error(file, "name", json(s->site().name).dump() + " is already taken by " + by);
  }
  r.add(std::move(s));
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
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; the rest names line and column.
    if (auto bracket = what.find("] "); what.starts_with("[") && bracket != std::string::npos) {
      what.erase(0, bracket + 2);
    }
    in.fail("", "not valid JSON: " + what);
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

void load_site_folder(const std::filesystem::path& dir, registry& r) {
  for (const std::filesystem::path& file : site_files_in(dir)) {
    add_site(r, load_site_file(file), file);
  }
}

std::vector<std::filesystem::path> site_files_in(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw site_file_error(dir, "",
                          std::filesystem::exists(dir, ec) ? "not a folder" : "no such folder");
  }
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    throw site_file_error(dir, "", "cannot list folder: " + ec.message());
  }
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    std::string name = p.filename().string();
    if (p.extension() != ".json" || name.starts_with(".")) {
      continue;
    }
    std::error_code type_ec;
    if (entry.is_regular_file(type_ec)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.filename() < b.filename(); });
  return files;
}

std::vector<std::string> check_site_folder(const std::filesystem::path& dir) {
  std::vector<std::string> errors;
  std::vector<std::filesystem::path> files;
  try {
    files = site_files_in(dir);
  } catch (const site_file_error& e) {
    errors.push_back(e.what());
    return errors;
  }
  registry r;
  register_builtin_scrapers(r);
  for (const std::filesystem::path& file : files) {
    try {
      add_site(r, load_site_file(file), file);
    } catch (const site_file_error& e) {
      errors.push_back(e.what());
    }
  }
  return errors;
}

site_trial try_scraper(const scraper& s, std::string_view html, std::string_view page_url,
                       std::string_view content_type) {
  site_trial trial;
  trial.site = s.site();
  std::string base(page_url.empty() ? std::string_view(trial.site.url) : page_url);
  if (const auto* site = dynamic_cast<const site_file_scraper*>(&s)) {
    const auto utf8 = page_as_utf8(html, content_type); // as the service reads the page
    trial.headlines =
        site->read(dom::document::parse(utf8 ? std::string_view(*utf8) : html), base, trial, true);
  } else if (dynamic_cast<const feed_scraper*>(&s)) {
    // The feed read as the service reads it, and what it would warn about as the hint.
    trial.method = "feed";
    auto f = parse_feed(html, base, trial.site.name, content_type);
    trial.headlines = std::move(f.headlines);
    trial.hint = std::move(f.warning);
  } else {
    trial.method = "built-in scraper (" + origin_of(trial.site) + ")";
    trial.headlines = s.parse(html, base, nullptr, content_type);
  }
  return trial;
}

site_trial try_site_file(const std::filesystem::path& file, std::string_view html,
                         std::string_view page_url) {
  return try_scraper(*load_site_file(file), html, page_url);
}

std::vector<headline> try_site(const std::filesystem::path& file, std::string_view html,
                               std::string_view page_url) {
  return try_site_file(file, html, page_url).headlines;
}

} // namespace newsdesk::scrapers
