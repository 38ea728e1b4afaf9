#include "server/core/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

namespace newsdesk::settings {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(std::string_view path, std::string_view what) {
  throw error(std::string(path) + ": " + std::string(what));
}

// The value as written, for messages: strings without their JSON quotes.
std::string shown(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// What a value of the row must look like, for "expected ..." messages.
std::string expected(const setting& row) {
  switch (row.type) {
  case kind::boolean:
    return "true or false";
  case kind::integer:
    return row.unit.empty() ? "a whole number" : "a whole number of " + row.unit;
  case kind::number:
    return row.unit.empty() ? "a number" : "a number (" + row.unit + ")";
  case kind::duration:
    return row.unit == "ms" ? "a whole number of ms" : "a number of seconds";
  case kind::text:
    return "a string";
  case kind::list:
    return "an array";
  }
  return "a value";
}

bool fits_kind(const setting& row, const json& v) {
  switch (row.type) {
  case kind::boolean:
    return v.is_boolean();
  case kind::integer:
    return v.is_number_integer();
  case kind::number:
    return v.is_number();
  case kind::duration:
    return row.unit == "ms" ? v.is_number_integer() : v.is_number();
  case kind::text:
    return v.is_string();
  case kind::list:
    return v.is_array();
  }
  return false;
}

// "from 1 to 1000", "at least 4096", "at most 256": the range as --help and messages say it.
std::string range_text(const std::optional<double>& min, const std::optional<double>& max) {
  if (min && max)
    return "from " + format_number(*min) + " to " + format_number(*max);
  if (min)
    return "at least " + format_number(*min);
  if (max)
    return "at most " + format_number(*max);
  return "";
}

// `text` broken at spaces into lines of at most 100 columns, continuation lines indented.
std::string wrapped(std::string_view text, std::size_t indent) {
  constexpr std::size_t width = 100;
  std::string out;
  while (text.size() > width) {
    auto space = text.rfind(' ', width);
    if (space == std::string_view::npos || space <= indent)
      break;
    out += std::string(text.substr(0, space)) + "\n" + std::string(indent, ' ');
    text.remove_prefix(space + 1);
  }
  return out + std::string(text) + "\n";
}

json list_from_text(std::string_view text) {
  json value = json::parse(text, nullptr, false);
  if (value.is_array())
    return value;
  if (text.find_first_of("[{") != std::string_view::npos)
    throw error("expected a JSON array or names separated by commas");
  value = json::array();
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (!item.empty())
      value.push_back(std::string(item));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return value;
}

} // namespace

std::string env_name(std::string_view prefix, std::string_view path) {
  std::string name(prefix);
  name += '_';
  for (char c : path)
    name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
  // An old or shortened name first: the shortest candidate that continues the word
  // (NEWSDESK_STORE -> NEWSDESK_STORE_PATH, --chromium -> --chromium-path).
  std::optional<std::string> best;
  for (const auto& c : candidates)
    if (c.size() > word.size() + 1 && c.starts_with(word) &&
        std::string_view("_-.").find(c[word.size()]) != std::string_view::npos &&
        (!best || c.size() < best->size()))
      best = c;
  if (best)
    return best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates)
    if (auto d = edit_distance(word, c); d < best_distance) {
      best_distance = d;
      best = c;
    }
  return best;
}

std::string format_number(double value) {
  if (std::abs(value) < 1e15 && value == std::floor(value))
    return std::to_string(static_cast<long long>(value));
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

namespace detail {

setting make_setting(const spec& s, kind type) {
  setting row;
  row.path = s.path;
  row.type = type;
  if (!s.flag.empty()) {
    auto flag = s.flag.substr(s.flag.starts_with("--") ? 2 : 0);
    auto space = flag.find(' ');
    row.flag = flag.substr(0, space);
    if (space != std::string_view::npos)
      row.metavar = flag.substr(space + 1);
  }
  row.unit = s.unit.empty() && type == kind::duration ? "seconds" : std::string(s.unit);
  row.min = s.min;
  row.max = s.max;
  row.choices = s.choices;
  row.alias = s.alias;
  row.help = s.help;
  return row;
}

double to_double(const json& value) {
  return value.get<double>();
}

} // namespace detail

basic_table::basic_table(std::vector<group> groups)
    : groups_(std::move(groups)) {
  std::set<std::string> paths, flags;
  for (const setting* row : rows()) {
    if (!paths.insert(row->path).second)
      throw std::logic_error("settings table: two rows for " + row->path);
    if (!row->flag.empty() && !flags.insert(row->flag).second)
      throw std::logic_error("settings table: two rows with --" + row->flag);
  }
}

std::vector<const setting*> basic_table::rows() const {
  std::vector<const setting*> out;
  for (const auto& g : groups_)
    for (const auto& row : g.rows)
      out.push_back(&row);
  return out;
}

const setting* basic_table::find(std::string_view path) const {
  for (const auto& g : groups_)
    for (const auto& row : g.rows)
      if (row.path == path)
        return &row;
  return nullptr;
}

const setting* basic_table::find_flag(std::string_view flag) const {
  for (const auto& g : groups_)
    for (const auto& row : g.rows)
      if (!row.flag.empty() && row.flag == flag)
        return &row;
  return nullptr;
}

void basic_table::apply(void* target, const setting& row, const json& value) const {
  if (!fits_kind(row, value))
    fail(row.path, "expected " + expected(row) + ", got " + value.dump());
  if (row.type == kind::integer || row.type == kind::number || row.type == kind::duration) {
    // long double holds every 64-bit integer exactly, so a size_t bound is checked exactly.
    const long double v = value.is_number_unsigned()  ? value.get<unsigned long long>()
                          : value.is_number_integer() ? value.get<long long>()
                                                      : value.get<double>();
    auto outside = [&](const std::optional<double>& min, const std::optional<double>& max) {
      return (min && v < static_cast<long double>(*min)) ||
             (max && v > static_cast<long double>(*max)) || std::isnan(static_cast<double>(v));
    };
    const bool by_row = outside(row.min, row.max);
    if (by_row || outside(row.type_min, row.type_max)) {
      // A row's own range, else (a negative port, say) the limits of the field's type.
      const std::string range =
          by_row ? range_text(row.min, row.max) : range_text(row.type_min, row.type_max);
      const std::string what = row.type == kind::duration ? (row.unit == "ms" ? "ms" : "seconds")
                               : row.unit.empty()
                                   ? (row.type == kind::integer ? "a whole number" : "a number")
                                   : row.unit;
      fail(row.path, "expected " + what + " " + range + ", got " + value.dump());
    }
  }
  if (row.type == kind::text && !row.choices.empty() &&
      std::find(row.choices.begin(), row.choices.end(), value.get<std::string>()) ==
          row.choices.end()) {
    std::string list;
    for (const auto& c : row.choices)
      list += (list.empty() ? "" : ", ") + (c.empty() ? std::string("\"\"") : c);
    fail(row.path, "expected one of " + list + ", got '" + shown(value) + "'");
  }
  try {
    row.set(target, value);
  } catch (const error&) {
    throw;
  } catch (const std::exception& e) { // a custom row's own check
    fail(row.path, e.what());
  }
}

void basic_table::apply_text(void* target, const setting& row, std::string_view text) const {
  json value;
  switch (row.type) {
  case kind::boolean:
    if (text == "true" || text == "1" || text == "yes" || text == "on")
      value = true;
    else if (text == "false" || text == "0" || text == "no" || text == "off")
      value = false;
    else
      throw error("expected true or false, got '" + std::string(text) + "'");
    break;
  case kind::integer:
  case kind::number:
  case kind::duration:
    value = json::parse(text, nullptr, false);
    if (!value.is_number())
      throw error("expected a number, got '" + std::string(text) + "'");
    break;
  case kind::text:
    value = std::string(text);
    break;
  case kind::list:
    value = list_from_text(text);
    break;
  }
  apply(target, row, value);
}

void basic_table::apply_json(void* target, const json& object) const {
  // Walks the object level by level; `prefix` is the path of the level ("" or "refresh.").
  std::function<void(const json&, const std::string&)> walk = [&](const json& level,
                                                                  const std::string& prefix) {
    for (const auto& [key, value] : level.items()) {
      const std::string path = prefix + key;
      if (const setting* row = find(path)) {
        apply(target, *row, value);
        continue;
      }
      const bool is_group = std::any_of(groups_.begin(), groups_.end(), [&](const group& g) {
        return std::any_of(g.rows.begin(), g.rows.end(),
                           [&](const setting& r) { return r.path.starts_with(path + "."); });
      });
      if (is_group && value.is_object()) {
        walk(value, path + ".");
        continue;
      }
      if (is_group && value.is_boolean())
        if (const setting* enabled = find(path + ".enabled")) {
          apply(target, *enabled, value);
          continue;
        }
      if (is_group)
        fail(path, "expected an object" +
                       std::string(find(path + ".enabled") ? " or true/false" : "") + ", got " +
                       value.dump());
      // The keys this level has, for the message.
      std::set<std::string> known;
      for (const setting* r : rows())
        if (r->path.starts_with(prefix)) {
          auto rest = r->path.substr(prefix.size());
          known.insert(rest.substr(0, rest.find('.')));
        }
      std::vector<std::string> candidates(known.begin(), known.end());
      std::string message = "unknown key";
      if (auto near = closest(key, candidates))
        message += " (did you mean " + *near + "?)";
      std::string list;
      for (const auto& k : known)
        list += (list.empty() ? "" : ", ") + k;
      fail(path, message + " (known: " + list + ")");
    }
  };
  if (!object.is_object())
    throw error("expected a JSON object at the top level");
  walk(object, "");
}

json basic_table::to_json(const void* source) const {
  json out = json::object();
  for (const setting* row : rows()) {
    std::string pointer = "/" + row->path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    out[json::json_pointer(pointer)] = row->get(source);
  }
  return out;
}

std::string basic_table::help(const void* defaults, std::string_view env_prefix) const {
  std::string text;
  for (const auto& g : groups_) {
    text += "\n" + g.heading + ":\n";
    for (const auto& row : g.rows) {
      std::string line = "  " + row.path;
      if (!row.flag.empty())
        line += ", --" + row.flag + (row.metavar.empty() ? "" : " " + row.metavar);
      if (!env_prefix.empty())
        line += ", " + env_name(env_prefix, row.path);
      if (!env_prefix.empty() && !row.alias.empty())
        line += " or " + row.alias;
      text += line + "\n";
      json value = row.get(defaults);
      std::string fallback =
          value.is_null() || (value.is_string() && value.get<std::string>().empty()) ? "unset"
          : value.is_number() ? format_number(value.get<double>())
                              : shown(value);
      std::string detail = "      " + row.help + " [default " + fallback;
      if (!row.unit.empty())
        detail += (value.is_number() ? " " : "; in ") + row.unit;
      if (auto range = range_text(row.min, row.max); !range.empty())
        detail += "; " + range;
      if (!row.choices.empty()) {
        std::string list;
        for (const auto& c : row.choices)
          if (!c.empty())
            list += (list.empty() ? "" : ", ") + c;
        detail += "; one of " + list;
      }
      text += wrapped(detail + "]", 6);
    }
  }
  return text;
}

} // namespace newsdesk::settings
