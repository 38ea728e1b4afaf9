// Tables of settings: each setting of a program is declared once, as a row (Redis's
// `standardConfig configs[]`, nginx's command tables), and every reader and writer of settings
// works from the rows: the config file parser, environment variables, command-line flags, the
// printed configuration, --help and the range checks. A new setting is one new row.
//
// Where it lives: in newsdesk_core, the bottom layer, which depends on nothing but the standard
// library and nlohmann/json. The server's table (server/app/config.cpp) and the broker's
// (broker/config.cpp) both use it, so the broker links newsdesk_core and still knows nothing of
// news; nothing here includes a header from another folder.
//
// A row reads and writes one field of a settings struct whose own default member initializers
// are the defaults: the table never repeats a default, it reads it from a default-constructed
// struct. Values move in the file's form and units (JSON; durations in seconds or milliseconds
// as the row says); text from the environment or a flag is converted by the row's kind first.
//
// Failure: error (a std::invalid_argument) whose message starts with the key path, e.g.
// "refresh.retry_base: expected seconds from 0.01 to 3600, got 5000". Callers prefix where the
// value came from (the file, the variable, the flag).
//
// Tables are built once and then only read: any thread may use one.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace newsdesk::settings {

struct error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// What a setting holds, which decides how text becomes a value and what the file must hold.
enum class kind {
  boolean,  // true/false (text: true, false, 1, 0, yes, no, on, off)
  integer,  // a whole number
  number,   // any number
  duration, // a number of `unit` (seconds or ms), kept as std::chrono::milliseconds
  text,     // a string, limited to `choices` when there are any
  list,     // a JSON array (text: the array, or names separated by commas)
};

// How a row is written in a table. Designated initializers keep the table readable:
//   {.path = "port", .flag = "--port N", .max = 65535, .help = "listen port (0: any free)"}
struct spec {
  std::string_view path;          // the key in the file; nested keys by dots: "refresh.retries"
  std::string_view flag = {};     // "--port N": the flag and what its value is; empty: no flag
  std::string_view unit = {};     // "seconds", "ms", "bytes", ...; durations: seconds or ms
  std::optional<double> min = {}; // the range a value must be in (inclusive)
  std::optional<double> max = {};
  std::vector<std::string> choices = {}; // text: the values allowed, when any
  std::string_view alias = {};           // a second environment name the ecosystem uses
  std::string_view help = {};            // one line for --help
};

// One setting: its spec, resolved, and how to read and write the field it stands for. `get`
// and `set` take the settings struct the table is for, type-erased; set receives a value that
// check() has accepted.
struct setting {
  std::string path;
  kind type = kind::text;
  std::string flag; // without the dashes: "port"
  std::string metavar;
  std::string unit;
  std::optional<double> min, max;           // the range the row chose (help, messages)
  std::optional<double> type_min, type_max; // an integer field's type limits, checked too
  std::vector<std::string> choices;
  std::string alias;
  std::string help;
  std::function<nlohmann::json(const void*)> get;
  std::function<void(void*, const nlohmann::json&)> set;
};

// Rows under one heading in --help. An embedded table is a group named after its prefix.
struct group {
  std::string heading;
  std::vector<setting> rows;
};

// "refresh.retry_base" -> PREFIX_REFRESH_RETRY_BASE.
std::string env_name(std::string_view prefix, std::string_view path);
// The candidate nearest to `word` by edit distance, when near enough to be a likely typo.
std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates);
// A number as people write it: 0.5, 30, 604800 (not 604800.0 or 6.048e5).
std::string format_number(double value);

class basic_table {
 public:
  explicit basic_table(std::vector<group> groups);

  const std::vector<group>& groups() const { return groups_; }
  std::vector<const setting*> rows() const;
  const setting* find(std::string_view path) const;
  const setting* find_flag(std::string_view flag) const;

  // Checks `value` against the row (type, range, choices) and sets it. Throws error naming
  // the row's path.
  void apply(void* target, const setting& row, const nlohmann::json& value) const;
  // Converts environment or flag text by the row's kind, then apply(). Throws error: "expected
  // a number, got 'eighty'" (the caller names the variable or flag), or apply()'s message.
  void apply_text(void* target, const setting& row, std::string_view text) const;
  // Applies a JSON object: each key a setting, or an object holding a group of them; a group
  // given as true/false sets its "enabled" setting ("broker": false). Unknown keys throw error
  // naming the key's path and the known keys at that level.
  void apply_json(void* target, const nlohmann::json& object) const;
  // Every setting in the file's form and units, nested by path.
  nlohmann::json to_json(const void* source) const;
  // --help lines for every row, grouped: path, flag, environment name (and alias; none when
  // `env_prefix` is empty), default (read from `defaults`), unit, range and help.
  std::string help(const void* defaults, std::string_view env_prefix) const;

 private:
  std::vector<group> groups_;
};

// A table for one settings struct: the typed face of basic_table.
template <class Config> class table : public basic_table {
 public:
  using basic_table::basic_table;
  void apply(Config& target, const setting& row, const nlohmann::json& value) const {
    basic_table::apply(&target, row, value);
  }
  void apply_text(Config& target, const setting& row, std::string_view text) const {
    basic_table::apply_text(&target, row, text);
  }
  void apply_json(Config& target, const nlohmann::json& object) const {
    basic_table::apply_json(&target, object);
  }
  nlohmann::json to_json(const Config& source) const { return basic_table::to_json(&source); }
  std::string help(std::string_view env_prefix) const {
    const Config defaults{};
    return basic_table::help(&defaults, env_prefix);
  }
};

namespace detail {
setting make_setting(const spec& s, kind type);
double to_double(const nlohmann::json& value);
} // namespace detail

// A row for the field `member` of Config; its kind follows the field's type (bool, integers,
// floating point, std::string, std::filesystem::path, std::chrono::milliseconds). Integers are
// also kept within their type's range.
template <class Config, class T> setting field(T Config::*member, const spec& s) {
  using milliseconds = std::chrono::milliseconds;
  constexpr kind type = std::is_same_v<T, bool>                    ? kind::boolean
                        : std::is_integral_v<T>                    ? kind::integer
                        : std::is_floating_point_v<T>              ? kind::number
                        : std::is_same_v<T, milliseconds>          ? kind::duration
                        : std::is_same_v<T, std::string>           ? kind::text
                        : std::is_same_v<T, std::filesystem::path> ? kind::text
                                                                   : kind::list;
  static_assert(type != kind::list, "field(): no row kind for this member type");
  setting row = detail::make_setting(s, type);
  const bool in_ms = row.unit == "ms";
  // in_ms is read only for durations; the casts keep Clang from calling the capture unused.
  row.get = [member, in_ms](const void* c) -> nlohmann::json {
    static_cast<void>(in_ms);
    const T& value = static_cast<const Config*>(c)->*member;
    if constexpr (std::is_same_v<T, milliseconds>)
      return in_ms ? nlohmann::json(value.count())
                   : nlohmann::json(static_cast<double>(value.count()) / 1000);
    else if constexpr (std::is_same_v<T, std::filesystem::path>)
      return value.string();
    else
      return value;
  };
  row.set = [member, in_ms](void* c, const nlohmann::json& v) {
    static_cast<void>(in_ms);
    T& out = static_cast<Config*>(c)->*member;
    if constexpr (std::is_same_v<T, milliseconds>)
      out = in_ms ? milliseconds(v.get<long long>())
                  : milliseconds(static_cast<long long>(detail::to_double(v) * 1000 + 0.5));
    else if constexpr (std::is_same_v<T, std::filesystem::path>)
      out = v.get<std::string>();
    else
      out = v.get<T>();
  };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    row.type_min = static_cast<double>(std::numeric_limits<T>::lowest());
    row.type_max = static_cast<double>(std::numeric_limits<T>::max());
  }
  return row;
}

// A row whose value is not one field as it stands (an enum spelt as a name, a flag kept as a
// choice, a list kept behind a pointer): `get` returns the file's form, `set` takes a value the
// row's checks accepted.
template <class Config>
setting custom(const spec& s, kind type, std::function<nlohmann::json(const Config&)> get,
               std::function<void(Config&, const nlohmann::json&)> set) {
  setting row = detail::make_setting(s, type);
  row.get = [get = std::move(get)](const void* c) { return get(*static_cast<const Config*>(c)); };
  row.set = [set = std::move(set)](void* c, const nlohmann::json& v) {
    set(*static_cast<Config*>(c), v);
  };
  return row;
}

// `row`, a row for some struct, as a row of Outer: `find` returns that struct inside an Outer
// given either `const Outer&` or `Outer&` (a generic lambda; the renderers' options are found by
// type, not by member).
template <class Outer, class Find> setting project_with(setting row, Find find) {
  row.get = [find, get = std::move(row.get)](const void* c) {
    return get(&find(*static_cast<const Outer*>(c)));
  };
  row.set = [find, set = std::move(row.set)](void* c, const nlohmann::json& v) {
    set(&find(*static_cast<Outer*>(c)), v);
  };
  return row;
}

// `row`, a row for the struct in Outer::*part, as a row of Outer.
template <class Outer, class Part> setting project(setting row, Part Outer::*part) {
  return project_with<Outer>(
      std::move(row), [part](auto& outer) -> auto& { return outer.*part; });
}

// The rows of `inner`, a table for the struct in Outer::*member, as rows of Outer under
// "prefix." (the server's file holds the broker's settings under "broker").
template <class Outer, class Inner>
group embed(std::string_view prefix, Inner Outer::*member, const table<Inner>& inner) {
  group out{std::string(prefix), {}};
  for (const setting* r : inner.rows()) {
    setting row = project(*r, member);
    row.path = std::string(prefix) + "." + r->path;
    row.flag.clear(); // a component's own flags mean nothing to the embedding program
    out.rows.push_back(std::move(row));
  }
  return out;
}

} // namespace newsdesk::settings
