// newsdesk's configuration: defaults, then a JSON file, then environment variables, then
// command-line flags, each overriding the one before. Anything wrong (unknown key, bad type,
// value out of range, unknown scraper) stops startup with a config_error naming the key.
#pragma once

#include "broker/config.hpp"
#include "server/http/http_server.hpp"
#include "server/news/site_config.hpp"
#include "server/core/log.hpp"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace newsdesk::scrapers {
class registry;
class scraper;
} // namespace newsdesk::scrapers

namespace newsdesk::server {

struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct config {
  std::string address = "127.0.0.1";
  unsigned short port = 8080;
  unsigned threads = 0; // 0: one per core
  std::filesystem::path templates_dir = "templates";
  std::filesystem::path static_dir = "static";
  // Folder of declarative site files (*.json). A missing folder is fine unless it was named
  // explicitly (file, environment or flag).
  std::filesystem::path site_files_dir = "sites";
  bool site_files_dir_given = false;
  log_level level = log_level::info;
  bool log_to_stderr = false; // logs on stdout unless "log_target": "stderr"
  bool access_log = true;     // one line per HTTP request
  bool metrics = true;        // GET /metrics and the counting behind it

  // Renderer for sites that do not name one: "splash", "chromium", "browserless" or "direct".
  // Empty: splash when a Splash URL is configured, else chromium when one is installed, else
  // direct.
  std::string renderer;
  std::string splash_url;    // e.g. "http://splash:8050"
  std::string chromium_path; // empty: chromium, chromium-browser or google-chrome on PATH
  unsigned chromium_max_concurrent = 4;  // renders (tabs) at once in the one browser
  unsigned chromium_recycle_after = 100; // renders before the browser is replaced by a fresh one
  std::string browserless_url;           // e.g. "http://browserless:3000" (token in the query)
  // Set by load_config: the Chromium executable found from chromium_path (empty: none). Only
  // then does a site get "chromium" automatically, or may name it.
  std::string chromium_found;
  double splash_max_timeout = 90; // Splash's --max-timeout: larger timeouts get a 400
  double default_wait = 0.5;      // seconds after the load event
  double default_timeout = 30;    // seconds for a whole render
  bool tls_verify = true;         // direct renderer: check certificates

  http_server_limits http;
  refresh_settings refresh;
  // The headline store (SQLite). ":memory:" keeps nothing across restarts.
  std::filesystem::path store_path = "newsdesk.db";

  // The "sites" entries as given (strings or objects); absent: every registered scraper.
  std::shared_ptr<const nlohmann::json> sites;
  // The embedded broker ("broker": {...} in the file, or false to turn it off).
  broker::config broker;
};

// Reads argv (after the program name and any subcommand), the environment through `getenv`,
// and the config file named by --config or NEWSDESK_CONFIG. Throws config_error.
// Sets `help` when --help was given (the caller prints usage()).
config load_config(const std::vector<std::string>& args,
                   const std::function<const char*(const char*)>& getenv, bool& help);

// Parses a config file's JSON text over `base`. `origin` names the file in messages.
void apply_config_json(config& base, std::string_view text, std::string_view origin);

// The sites to show, in config order, each bound to a registered scraper. Throws config_error
// for unknown scrapers, duplicate names and bad values.
std::vector<site_config> resolve_sites(const config& cfg,
                                       const std::shared_ptr<const scrapers::registry>& registry);

// The built-in scrapers plus the site files in cfg.site_files_dir (a missing folder is an error
// only when it was named), resolved as above. Throws config_error or scrapers::site_file_error.
std::vector<site_config> load_sites(const config& cfg);

// The effective configuration in the config file's format and units, every key present ("sites"
// as given, [] when absent). Read back by apply_config_json, it gives the same configuration.
nlohmann::json config_to_json(const config& cfg);
// Resolved sites as "sites" entries with every field filled in (for --print-config).
nlohmann::json sites_to_json(const std::vector<site_config>& sites);
// The environment variable for a config key path: {"refresh", "interval"} ->
// NEWSDESK_REFRESH_INTERVAL.
std::string env_name(const std::vector<std::string>& path);

// The --help text, with every environment variable and its default.
std::string usage();

} // namespace newsdesk::server
