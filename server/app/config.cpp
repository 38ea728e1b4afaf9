#include "server/app/config.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/scraper.hpp"
#include "scrapers/site_file.hpp"
#include "scrapers/url.hpp"
#include "server/render/chromium_renderer.hpp"
#include "server/render/renderer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace newsdesk::server {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(std::string_view where, std::string_view what) {
  throw config_error(std::string(where) + ": " + std::string(what));
}

// "refresh" + "interval" -> "refresh.interval"; at the top level just the key.
std::string key_path(std::string_view where, std::string_view key) {
  return where.empty() ? std::string(key) : std::string(where) + "." + std::string(key);
}

void reject_unknown_keys(const json& object, std::string_view where,
                         std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto k : known)
        list += (list.empty() ? "" : ", ") + std::string(k);
      fail(key_path(where, key), "unknown key (known: " + list + ")");
    }
}

template <class T> const char* type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else
    return "a number";
}

// Reads object[key] into out when present, naming the key on a type mismatch.
template <class T> bool read(const json& object, const char* key, T& out, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end())
    return false;
  bool fits = false;
  if constexpr (std::is_same_v<T, bool>)
    fits = it->is_boolean();
  else if constexpr (std::is_same_v<T, std::string>)
    fits = it->is_string();
  else if constexpr (std::is_integral_v<T>)
    fits = it->is_number_integer() || it->is_number_unsigned();
  else
    fits = it->is_number();
  if (!fits)
    fail(key_path(where, key), std::string("expected ") + type_name<T>() + ", got " + it->dump());
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    auto value = it->get<long long>();
    if (value < 0 || static_cast<unsigned long long>(value) > std::numeric_limits<T>::max())
      fail(key_path(where, key), "out of range: " + it->dump());
    out = static_cast<T>(value);
  } else {
    it->get_to(out);
  }
  return true;
}

double parse_number(std::string_view where, std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    fail(where, "expected a number, got '" + std::string(text) + "'");
  return value;
}

unsigned long parse_unsigned(std::string_view where, std::string_view text, unsigned long max) {
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > max)
    fail(where, "expected a whole number from 0 to " + std::to_string(max) + ", got '" +
                    std::string(text) + "'");
  return value;
}

bool is_hex_colour(std::string_view c) {
  if (c.size() != 4 && c.size() != 7)
    return false;
  return c[0] == '#' && std::all_of(c.begin() + 1, c.end(), [](char ch) {
           return std::isxdigit(static_cast<unsigned char>(ch));
         });
}

void check_renderer(std::string_view where, const std::string& name) {
  if (!scrapers::is_renderer_name(name))
    fail(where, "unknown renderer '" + name + "' (known: " + scrapers::renderer_name_list() + ")");
}

void validate(config& cfg) {
  if (cfg.threads > 256)
    fail("threads", "at most 256");
  if (!cfg.renderer.empty())
    check_renderer("renderer", cfg.renderer);
  if (!cfg.splash_url.empty() && !scrapers::url::is_http_url(cfg.splash_url))
    fail("splash_url", "expected an http:// or https:// URL, got '" + cfg.splash_url + "'");
  if (!cfg.browserless_url.empty() && cfg.browserless_url.rfind("http://", 0) != 0)
    fail("browserless_url", "expected an http:// URL, got '" + cfg.browserless_url + "'");
  if (cfg.chromium_max_concurrent < 1 || cfg.chromium_max_concurrent > 64)
    fail("chromium_max_concurrent", "expected 1 to 64");
  if (cfg.chromium_recycle_after < 1)
    fail("chromium_recycle_after", "must be at least 1");
  if (!(cfg.default_timeout > 0) || cfg.default_timeout > 3600)
    fail("timeout", "expected seconds in (0, 3600]");
  if (!(cfg.default_wait >= 0) || cfg.default_wait >= cfg.default_timeout)
    fail("wait", "expected seconds >= 0 and below the timeout");
  if (!(cfg.splash_max_timeout > 0))
    fail("splash_max_timeout", "expected seconds > 0");
  if (cfg.http.max_connections == 0)
    fail("http.max_connections", "must be at least 1");
}

void apply_http_json(http_server_limits& limits, const json& j) {
  const std::string_view where = "http";
  if (!j.is_object())
    fail(where, "expected an object");
  reject_unknown_keys(
      j, where,
      {"max_header_bytes", "max_body_bytes", "read_timeout", "write_timeout", "max_connections"});
  read(j, "max_header_bytes", limits.max_header_bytes, where);
  read(j, "max_body_bytes", limits.max_body_bytes, where);
  double seconds = 0;
  if (read(j, "read_timeout", seconds, where))
    limits.read_timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  if (read(j, "write_timeout", seconds, where))
    limits.write_timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  read(j, "max_connections", limits.max_connections, where);
}

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

void apply_refresh_json(refresh_settings& r, const json& j) {
  const std::string where = "refresh";
  if (!j.is_object())
    fail(where, "expected an object");
  reject_unknown_keys(j, where,
                      {"interval", "jitter", "max_concurrent_renders", "retries", "retry_base",
                       "retry_max", "max_backoff_factor", "cold_start_wait", "manual_min_interval",
                       "retention"});
  auto seconds_key = [&](const char* key, std::chrono::milliseconds& out, double min, double max) {
    double value = 0;
    if (!read(j, key, value, where))
      return;
    if (!(value >= min && value <= max))
      fail(where + "." + key,
           "expected seconds from " + std::to_string(min) + " to " + std::to_string(max));
    out = seconds_to_ms(value);
  };
  seconds_key("interval", r.interval, 1, 7 * 24 * 3600.0);
  seconds_key("retry_base", r.retry_base, 0.01, 3600);
  seconds_key("retry_max", r.retry_max, 0.01, 24 * 3600.0);
  seconds_key("cold_start_wait", r.cold_start_wait, 0, 600);
  seconds_key("manual_min_interval", r.manual_min_interval, 0, 24 * 3600.0);
  seconds_key("retention", r.retention, 60, 3650 * 24 * 3600.0);
  if (read(j, "jitter", r.jitter, where) && !(r.jitter >= 0 && r.jitter < 1))
    fail(where + ".jitter", "expected a fraction from 0 to below 1");
  if (read(j, "max_concurrent_renders", r.max_concurrent_renders, where) &&
      (r.max_concurrent_renders < 1 || r.max_concurrent_renders > 1000))
    fail(where + ".max_concurrent_renders", "expected 1 to 1000");
  if (read(j, "retries", r.retries, where) && r.retries > 20)
    fail(where + ".retries", "expected 0 to 20");
  if (read(j, "max_backoff_factor", r.max_backoff_factor, where) &&
      (r.max_backoff_factor < 1 || r.max_backoff_factor > 1024))
    fail(where + ".max_backoff_factor", "expected 1 to 1024");
}

} // namespace

namespace {

// Applies one parsed config object (a file, or one environment variable's key) over `cfg`.
// Messages name the key by its path ("refresh.interval").
void apply_config_object(config& cfg, const json& j) {
  const std::string where;
  if (!j.is_object())
    fail("config", "expected a JSON object at the top level");
  reject_unknown_keys(j, where,
                      {"address",
                       "port",
                       "threads",
                       "templates_dir",
                       "static_dir",
                       "site_files_dir",
                       "log_level",
                       "log_target",
                       "access_log",
                       "metrics",
                       "renderer",
                       "splash_url",
                       "splash_max_timeout",
                       "wait",
                       "timeout",
                       "tls_verify",
                       "http",
                       "refresh",
                       "store_path",
                       "sites",
                       "broker",
                       "chromium_path",
                       "chromium_max_concurrent",
                       "chromium_recycle_after",
                       "browserless_url"});
  read(j, "address", cfg.address, where);
  read(j, "port", cfg.port, where);
  read(j, "threads", cfg.threads, where);
  std::string text_value;
  if (read(j, "templates_dir", text_value, where))
    cfg.templates_dir = text_value;
  if (read(j, "static_dir", text_value, where))
    cfg.static_dir = text_value;
  if (read(j, "site_files_dir", text_value, where)) {
    cfg.site_files_dir = text_value;
    cfg.site_files_dir_given = true;
  }
  if (read(j, "log_level", text_value, where)) {
    try {
      cfg.level = parse_log_level(text_value);
    } catch (const std::invalid_argument& e) {
      fail("log_level", e.what());
    }
  }
  if (read(j, "log_target", text_value, where)) {
    if (text_value != "stdout" && text_value != "stderr")
      fail("log_target", "expected \"stdout\" or \"stderr\", got '" + text_value + "'");
    cfg.log_to_stderr = text_value == "stderr";
  }
  read(j, "access_log", cfg.access_log, where);
  read(j, "metrics", cfg.metrics, where);
  read(j, "renderer", cfg.renderer, where);
  read(j, "splash_url", cfg.splash_url, where);
  read(j, "chromium_path", cfg.chromium_path, where);
  read(j, "chromium_max_concurrent", cfg.chromium_max_concurrent, where);
  read(j, "chromium_recycle_after", cfg.chromium_recycle_after, where);
  read(j, "browserless_url", cfg.browserless_url, where);
  read(j, "splash_max_timeout", cfg.splash_max_timeout, where);
  read(j, "wait", cfg.default_wait, where);
  read(j, "timeout", cfg.default_timeout, where);
  read(j, "tls_verify", cfg.tls_verify, where);
  if (j.contains("http"))
    apply_http_json(cfg.http, j["http"]);
  if (j.contains("refresh"))
    apply_refresh_json(cfg.refresh, j["refresh"]);
  if (read(j, "store_path", text_value, where))
    cfg.store_path = text_value;
  if (j.contains("sites")) {
    if (!j["sites"].is_array())
      fail("sites", "expected an array of site names or objects");
    cfg.sites = std::make_shared<const json>(j["sites"]);
  }
  if (j.contains("broker")) {
    const auto& b = j["broker"];
    if (b.is_boolean()) {
      cfg.broker.enabled = b.get<bool>();
    } else {
      try {
        b.get_to(cfg.broker);
      } catch (const std::exception& e) {
        fail("broker", e.what());
      }
    }
  }
}

// The value of one environment variable as the JSON type `like` has ("600" -> 600 where a
// number is expected). Throws config_error naming the variable.
json env_value(const std::string& name, const std::string& text, const json& like) {
  if (like.is_string())
    return text;
  if (like.is_boolean()) {
    if (text == "true" || text == "1" || text == "yes" || text == "on")
      return true;
    if (text == "false" || text == "0" || text == "no" || text == "off")
      return false;
    fail(name, "expected true or false, got '" + text + "'");
  }
  if (like.is_number()) {
    json value = json::parse(text, nullptr, false);
    if (!value.is_number())
      fail(name, "expected a number, got '" + text + "'");
    return value;
  }
  fail(name, "cannot be set from the environment");
}

// Calls `visit(path, default value)` for every key the config file has, nested ones by path
// ({"refresh", "interval"}), in the order config_to_json lists them. "sites" is a leaf.
template <class Visit>
void for_each_key(const json& object, std::vector<std::string>& path, Visit&& visit) {
  for (const auto& [key, value] : object.items()) {
    path.push_back(key);
    if (value.is_object())
      for_each_key(value, path, visit);
    else
      visit(path, value);
    path.pop_back();
  }
}

// What an environment variable may hold for "sites": a JSON array, or names separated by
// commas ("cnn,bbc").
json sites_from_env(const std::string& name, const std::string& text) {
  json value = json::parse(text, nullptr, false);
  if (value.is_array())
    return value;
  if (text.find_first_of("[{") != std::string::npos)
    fail(name, "expected a JSON array or site names separated by commas");
  value = json::array();
  std::string_view rest = text;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (!item.empty())
      value.push_back(std::string(item));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return value;
}

} // namespace

void apply_config_json(config& cfg, std::string_view text, std::string_view origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(origin, std::string("not valid JSON: ") + e.what());
  }
  try {
    apply_config_object(cfg, j);
  } catch (const config_error& e) {
    fail(origin, e.what());
  }
}

std::string env_name(const std::vector<std::string>& path) {
  std::string name = "NEWSDESK";
  for (const auto& part : path) {
    name += '_';
    for (char c : part)
      name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

nlohmann::json config_to_json(const config& cfg) {
  auto seconds = [](std::chrono::milliseconds ms) {
    return static_cast<double>(ms.count()) / 1000;
  };
  json j = {{"address", cfg.address},
            {"port", cfg.port},
            {"threads", cfg.threads},
            {"templates_dir", cfg.templates_dir.string()},
            {"static_dir", cfg.static_dir.string()},
            {"site_files_dir", cfg.site_files_dir.string()},
            {"log_level", std::string(to_string(cfg.level))},
            {"log_target", cfg.log_to_stderr ? "stderr" : "stdout"},
            {"access_log", cfg.access_log},
            {"metrics", cfg.metrics},
            {"renderer", cfg.renderer},
            {"splash_url", cfg.splash_url},
            {"splash_max_timeout", cfg.splash_max_timeout},
            {"wait", cfg.default_wait},
            {"timeout", cfg.default_timeout},
            {"tls_verify", cfg.tls_verify},
            {"chromium_path", cfg.chromium_path},
            {"chromium_max_concurrent", cfg.chromium_max_concurrent},
            {"chromium_recycle_after", cfg.chromium_recycle_after},
            {"browserless_url", cfg.browserless_url},
            {"store_path", cfg.store_path.string()},
            {"http",
             {{"max_header_bytes", cfg.http.max_header_bytes},
              {"max_body_bytes", cfg.http.max_body_bytes},
              {"read_timeout", seconds(cfg.http.read_timeout)},
              {"write_timeout", seconds(cfg.http.write_timeout)},
              {"max_connections", cfg.http.max_connections}}},
            {"refresh",
             {{"interval", seconds(cfg.refresh.interval)},
              {"jitter", cfg.refresh.jitter},
              {"max_concurrent_renders", cfg.refresh.max_concurrent_renders},
              {"retries", cfg.refresh.retries},
              {"retry_base", seconds(cfg.refresh.retry_base)},
              {"retry_max", seconds(cfg.refresh.retry_max)},
              {"max_backoff_factor", cfg.refresh.max_backoff_factor},
              {"cold_start_wait", seconds(cfg.refresh.cold_start_wait)},
              {"manual_min_interval", seconds(cfg.refresh.manual_min_interval)},
              {"retention", seconds(cfg.refresh.retention)}}},
            {"broker", cfg.broker}};
  if (cfg.sites)
    j["sites"] = *cfg.sites;
  return j;
}

nlohmann::json sites_to_json(const std::vector<site_config>& sites) {
  auto seconds = [](std::chrono::milliseconds ms) {
    return static_cast<double>(ms.count()) / 1000;
  };
  json out = json::array();
  for (const auto& s : sites)
    out.push_back({{"name", s.name},
                   {"scraper", s.scraper->site().name},
                   {"display_name", s.display_name},
                   {"url", s.url},
                   {"colour", s.colour},
                   {"renderer", s.renderer},
                   {"wait", seconds(s.wait)},
                   {"timeout", seconds(s.timeout)},
                   {"interval", seconds(s.interval)}});
  return out;
}

config load_config(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv, bool& help) {
  config cfg;
  help = false;

  // Flags first into a table, so the config file they name is read before anything else.
  std::vector<std::pair<std::string, std::string>> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      fail(arg, "unexpected argument (see --help)");
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      flags.emplace_back(arg.substr(2, eq - 2), arg.substr(eq + 1));
    } else {
      if (i + 1 >= args.size())
        fail(arg, "needs a value");
      flags.emplace_back(arg.substr(2), args[++i]);
    }
  }

  std::string config_path;
  if (const char* env = getenv("NEWSDESK_CONFIG"); env && *env)
    config_path = env;
  for (const auto& [name, value] : flags)
    if (name == "config")
      config_path = value;
  if (!config_path.empty()) {
    std::ifstream in(config_path, std::ios::binary);
    if (!in)
      fail(config_path, "cannot open the config file");
    std::ostringstream text;
    text << in.rdbuf();
    apply_config_json(cfg, text.str(), config_path);
  }

  // Every key of the file from the environment: NEWSDESK_ and its path in capitals
  // (refresh.interval -> NEWSDESK_REFRESH_INTERVAL), with the file's units.
  auto from_env = [&](const std::vector<std::string>& key, const char* text, json value) {
    if (!text || !*text)
      return;
    for (auto part = key.rbegin(); part != key.rend(); ++part)
      value = json{{*part, std::move(value)}};
    try {
      apply_config_object(cfg, value);
    } catch (const config_error& e) {
      fail(env_name(key), e.what());
    }
  };
  std::vector<std::string> path;
  for_each_key(config_to_json(config{}), path,
               [&](const std::vector<std::string>& key, const json& like) {
                 const char* text = getenv(env_name(key).c_str());
                 if (text && *text)
                   from_env(key, text, env_value(env_name(key), text, like));
               });
  if (const char* text = getenv("NEWSDESK_SITES"); text && *text)
    from_env({"sites"}, text, sites_from_env("NEWSDESK_SITES", text));

  // The short spellings (environment, then flags) of the common settings.
  auto set = [&](const std::string& key, const std::string& value, const std::string& where) {
    if (key == "address")
      cfg.address = value;
    else if (key == "port")
      cfg.port = static_cast<unsigned short>(parse_unsigned(where, value, 65535));
    else if (key == "threads")
      cfg.threads = static_cast<unsigned>(parse_unsigned(where, value, 256));
    else if (key == "templates")
      cfg.templates_dir = value;
    else if (key == "static")
      cfg.static_dir = value;
    else if (key == "log-target") {
      if (value != "stdout" && value != "stderr")
        fail(where, "expected stdout or stderr, got '" + value + "'");
      cfg.log_to_stderr = value == "stderr";
    } else if (key == "store")
      cfg.store_path = value;
    else if (key == "sites-dir") {
      cfg.site_files_dir = value;
      cfg.site_files_dir_given = true;
    } else if (key == "renderer")
      cfg.renderer = value;
    else if (key == "splash-url")
      cfg.splash_url = value;
    else if (key == "chromium-path")
      cfg.chromium_path = value;
    else if (key == "chromium-max-concurrent")
      cfg.chromium_max_concurrent = static_cast<unsigned>(parse_unsigned(where, value, 64));
    else if (key == "chromium-recycle-after")
      cfg.chromium_recycle_after = static_cast<unsigned>(parse_unsigned(where, value, 1000000));
    else if (key == "browserless-url")
      cfg.browserless_url = value;
    else if (key == "wait")
      cfg.default_wait = parse_number(where, value);
    else if (key == "timeout")
      cfg.default_timeout = parse_number(where, value);
    else if (key == "log-level") {
      try {
        cfg.level = parse_log_level(value);
      } catch (const std::invalid_argument& e) {
        fail(where, e.what());
      }
    } else if (key == "broker-listen") {
      if (value == "off") {
        cfg.broker.enabled = false;
      } else {
        try {
          broker::apply_listen_spec(cfg.broker, value);
          cfg.broker.enabled = true;
        } catch (const std::exception& e) {
          fail(where, e.what());
        }
      }
    } else if (key == "config") {
      // read above
    } else
      fail(where, "unknown option (see --help)");
  };
  const std::pair<const char*, const char*> env_names[] = {
      {"NEWSDESK_TEMPLATES", "templates"},    {"NEWSDESK_STATIC", "static"},
      {"NEWSDESK_SITES_DIR", "sites-dir"},    {"NEWSDESK_STORE", "store"},
      {"SPLASH_URL", "splash-url"},           {"NEWSDESK_BROKER_LISTEN", "broker-listen"},
      {"NEWSDESK_CHROMIUM", "chromium-path"}, {"BROWSERLESS_URL", "browserless-url"}};
  for (const auto& [env, key] : env_names)
    if (const char* value = getenv(env); value && *value)
      set(key, value, env);
  for (const auto& [name, value] : flags)
    set(name, value, "--" + name);

  validate(cfg);
  cfg.chromium_found = find_chromium(cfg.chromium_path);
  return cfg;
}

std::vector<site_config> resolve_sites(const config& cfg,
                                       const std::shared_ptr<const scrapers::registry>& registry) {
  // Which renderer a site uses, strongest first: its config entry; the operator's global
  // "renderer"; the scraper's own hint when that renderer is available; Splash when configured,
  // else a local Chromium when one is installed, else direct.
  auto available = [&](const std::string& name) {
    if (name == "splash")
      return !cfg.splash_url.empty();
    if (name == "chromium")
      return !cfg.chromium_found.empty();
    if (name == "browserless")
      return !cfg.browserless_url.empty();
    return true;
  };
  const std::string automatic = !cfg.splash_url.empty()       ? "splash"
                                : !cfg.chromium_found.empty() ? "chromium"
                                                              : "direct";
  auto default_renderer_for = [&](const scrapers::site_info& info) {
    if (!cfg.renderer.empty())
      return cfg.renderer;
    if (info.renderer && available(*info.renderer))
      return *info.renderer;
    return automatic;
  };

  json entries = json::array();
  if (cfg.sites) {
    entries = *cfg.sites;
  } else {
    for (const auto* s : registry->all())
      entries.push_back(s->site().name);
  }

  std::vector<site_config> sites;
  std::set<std::string> names;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "sites[" + std::to_string(i) + "]";
    json entry = entries[i].is_string() ? json{{"scraper", entries[i]}} : entries[i];
    if (!entry.is_object())
      fail(where, "expected a scraper name or an object");
    reject_unknown_keys(entry, where,
                        {"scraper", "name", "display_name", "url", "colour", "renderer", "wait",
                         "timeout", "interval", "enabled"});
    std::string scraper_name;
    if (!read(entry, "scraper", scraper_name, where))
      fail(where, "missing \"scraper\"");
    bool enabled = true;
    read(entry, "enabled", enabled, where);
    const auto* scraper = registry->find(scraper_name);
    if (!scraper) {
      std::string known;
      for (const auto* s : registry->all())
        known += (known.empty() ? "" : ", ") + s->site().name;
      fail(where + ".scraper",
           "no scraper named '" + scraper_name + "' (registered: " + known + ")");
    }
    if (!enabled)
      continue;
    const auto& info = scraper->site();
    // A bad value is reported where it was written: this config entry, else the site file (or
    // C++ scraper) that supplied it, else the service-wide default.
    auto source = [&](const char* key, bool from_site, std::string_view fallback) {
      if (entry.contains(key))
        return where + "." + key;
      if (from_site)
        return origin_of(info) + ": " + key;
      return std::string(fallback);
    };
    site_config site;
    site.scraper = std::shared_ptr<const scrapers::scraper>(registry, scraper);
    site.name = info.name;
    site.display_name = info.display_name;
    site.url = info.url;
    site.colour = info.colour;
    site.renderer = default_renderer_for(info);
    double wait = info.wait_seconds.value_or(cfg.default_wait);
    double timeout = info.timeout_seconds.value_or(cfg.default_timeout);
    read(entry, "name", site.name, where);
    read(entry, "display_name", site.display_name, where);
    read(entry, "url", site.url, where);
    read(entry, "colour", site.colour, where);
    read(entry, "renderer", site.renderer, where);
    read(entry, "wait", wait, where);
    read(entry, "timeout", timeout, where);
    double interval = static_cast<double>(cfg.refresh.interval.count()) / 1000.0;
    if (read(entry, "interval", interval, where) && !(interval >= 1 && interval <= 7 * 24 * 3600.0))
      fail(where + ".interval", "expected seconds from 1 to 604800");

    if (site.name.empty() || !std::all_of(site.name.begin(), site.name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        }))
      fail(where + ".name", "expected [a-z0-9_-]+, got '" + site.name + "'");
    if (!names.insert(site.name).second)
      fail(where + ".name", "duplicate site name '" + site.name + "'");
    if (site.display_name.empty())
      site.display_name = site.name;
    if (!scrapers::url::is_http_url(site.url))
      fail(where + ".url", "expected an http:// or https:// URL, got '" + site.url + "'");
    if (!is_hex_colour(site.colour))
      fail(where + ".colour", "expected #rgb or #rrggbb, got '" + site.colour + "'");
    const std::string renderer_source =
        source("renderer", info.renderer && site.renderer == *info.renderer, "renderer");
    const std::string timeout_source =
        source("timeout", info.timeout_seconds.has_value(), "timeout");
    check_renderer(renderer_source, site.renderer);
    if (!(timeout > 0) || timeout > 3600)
      fail(timeout_source, "expected seconds in (0, 3600]");
    if (!(wait >= 0) || wait >= timeout)
      fail(source("wait", info.wait_seconds.has_value(), "wait"),
           "expected seconds >= 0 and below the timeout (" + format_seconds(timeout) + " s)");
    if (site.renderer == "chromium" && cfg.chromium_found.empty())
      fail(renderer_source,
           "site '" + site.name + "' uses Chromium but none was found" +
               (cfg.chromium_path.empty() ? std::string(" (install the chromium package or set "
                                                        "chromium_path / NEWSDESK_CHROMIUM)")
                                          : " at '" + cfg.chromium_path + "'"));
    if (site.renderer == "browserless" && cfg.browserless_url.empty())
      fail(renderer_source,
           "site '" + site.name +
               "' uses browserless but no browserless_url or BROWSERLESS_URL is set");
    if (site.renderer == "splash") {
      if (cfg.splash_url.empty())
        fail(renderer_source,
             "site '" + site.name + "' uses Splash but no splash_url or SPLASH_URL is set");
      if (timeout > cfg.splash_max_timeout)
        fail(timeout_source, "Splash refuses timeouts above its --max-timeout (" +
                                 format_seconds(cfg.splash_max_timeout) +
                                 " s, splash_max_timeout)");
    }
    site.wait = std::chrono::milliseconds(static_cast<long long>(wait * 1000));
    site.timeout = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
    site.interval = seconds_to_ms(interval);
    sites.push_back(std::move(site));
  }
  return sites;
}

std::vector<site_config> load_sites(const config& cfg) {
  auto registry = std::make_shared<scrapers::registry>();
  scrapers::register_builtin_scrapers(*registry);
  if (std::filesystem::is_directory(cfg.site_files_dir))
    scrapers::load_site_folder(cfg.site_files_dir, *registry);
  else if (cfg.site_files_dir_given)
    throw config_error("site files folder " + cfg.site_files_dir.string() + " does not exist");
  return resolve_sites(cfg, registry);
}

std::string usage() {
  std::string text = R"(usage: newsdesk [options]

Serves /news: the current headlines of the configured sites on one page.

options (each also settable in the JSON config file; flags win over environment, which wins
over the file):
  --config FILE       JSON config file                  env NEWSDESK_CONFIG
  --address ADDR      listen address (127.0.0.1)
  --port N            listen port (8080; 0 = any free)
  --threads N         network threads (0 = one per core)
  --templates DIR     folder holding news.html (templates)   env NEWSDESK_TEMPLATES
  --static DIR        folder served under /static (static)    env NEWSDESK_STATIC
  --sites-dir DIR     folder of site files, *.json (sites)    env NEWSDESK_SITES_DIR
  --store FILE        headline store, SQLite (newsdesk.db; :memory: keeps nothing)
                                                              env NEWSDESK_STORE
  --renderer NAME     splash, chromium, browserless or direct (splash when a Splash URL is
                      set, else chromium when installed, else direct)
  --splash-url URL    Splash's address, e.g. http://splash:8050   env SPLASH_URL
  --chromium-path P   the Chromium to run (chromium on PATH)     env NEWSDESK_CHROMIUM
  --chromium-max-concurrent N   renders at once in Chromium (4)
  --chromium-recycle-after N    renders before Chromium is restarted fresh (100)
  --browserless-url URL   a browserless server, e.g. http://browserless:3000
                                                              env BROWSERLESS_URL
  --wait S            default seconds to wait after page load (0.5)
  --timeout S         default seconds for a whole render (30)
  --log-level LEVEL   debug, info, warn or error (info)
  --log-target T      stdout or stderr (stdout)
  --broker-listen ADDR:PORT|off
                      the pub/sub broker's address (127.0.0.1:25000), or off
                                                              env NEWSDESK_BROKER_LISTEN
  --print-config      print the effective configuration (JSON, sites resolved) and exit
  --help              this text

commands (run instead of the server):
  newsdesk --check-scrapers [DIR]                   validate every site file in DIR (sites)
  newsdesk --try-site FILE --html PAGE [--url URL]  show what a site file extracts from a page
  newsdesk broker [--listen ADDR:PORT] [--config FILE]   run only the pub/sub broker

signals: SIGHUP reloads the site files and templates (a broken one keeps the old ones);
SIGINT and SIGTERM shut down gracefully.

environment: every key of the config file, as NEWSDESK_ and its path in capitals, in the
file's units (seconds for durations); the short names above are applied after these.
Defaults in brackets. See config.example.json for what each key does.
)";
  std::vector<std::string> path;
  for_each_key(config_to_json(config{}), path,
               [&](const std::vector<std::string>& key, const json& value) {
                 auto name = env_name(key);
                 auto shown = !value.is_string()                 ? value.dump()
                              : value.get<std::string>().empty() ? std::string("unset")
                                                                 : value.get<std::string>();
                 text += "  " + name + std::string(name.size() < 42 ? 42 - name.size() : 1, ' ') +
                         "(" + shown + ")\n";
               });
  text += "  NEWSDESK_SITES                            (every scraper; a JSON array, or names "
          "separated by commas)\n";
  return text;
}

} // namespace newsdesk::server
