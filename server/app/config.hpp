// newsdesk's configuration: defaults, then a JSON file, then environment variables, then
// command-line flags, each overriding the one before. Anything wrong (unknown key, bad type,
// value out of range, unknown scraper) stops startup with a config_error naming the key.
#pragma once

#include "broker/config.hpp"
#include "server/alerts/alert.hpp"
#include "server/core/log.hpp"
#include "server/core/settings.hpp"
#include "server/http/http_server.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/site_config.hpp"
#include "server/render/renderers.hpp"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
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

// Every setting, declared once as a row of config_table() (config.cpp) with its key path, flag,
// unit, range and help; the defaults are the member initializers here and in the components'
// own option structs, which the config holds whole so each component gets its own struct. The
// renderers' rows are declared by the renderers themselves (renderers.hpp).
struct config {
  std::string address = "127.0.0.1";
  unsigned short port = 8080;
  unsigned threads = 0; // 0: one per core
  // HTTP connections on event loops, one per network thread (each connection on one thread for
  // its whole life), instead of strands shared by all network threads. See README "Serving".
  bool event_loops = false;
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

  // Renderer for sites that do not name one: a registered renderer's name. Empty: the automatic
  // choice (automatic_renderer in renderers.hpp).
  std::string renderer;
  double default_wait = 0.5;   // seconds after the load event
  double default_timeout = 30; // seconds for a whole render
  // Each renderer's own options (renderers.of<Options>(), Options the struct the renderer
  // declares) and what they share. load_config runs each renderer's resolve step, which finds
  // what the settings point at (the Chromium executable); a config built in code has none of
  // that until it says so.
  renderer_options renderers;

  // max_connections and max_streams 0: derived from the open-file limit at start.
  http_server_limits http{.max_connections = 0, .max_streams = 0};
  refresh_settings refresh;
  // Where readers reach newsdesk ("https://news.example.org"): the feeds' absolute links start
  // with it, and they are built once per change. Empty: taken from each request's Host header.
  std::string public_url;
  // Without public_url: the Host names readers may use ("news.example.org,news.lan:8080").
  // Another Host gets the first one in the feeds' links, or with reject_unknown_hosts a 400.
  // Empty: any plain host name is taken as given.
  std::string allowed_hosts;
  bool reject_unknown_hosts = false;
  // A picture per Top stories card, made from the image its lead's source gives and served from
  // newsdesk (server/pictures/). Off: no image is fetched and the page shows none.
  bool pictures = true;
  // Each site's pictures' bytes at most, in the store; the oldest go first. 2 MiB is some 60
  // pictures (15 to 40 KB each as made), far more than one site's cards at once.
  std::size_t picture_bytes_per_site = 2 * 1024 * 1024;
  // The headline store: an SQLite file (":memory:" keeps nothing across restarts), or a
  // postgresql:// URL for a store several instances share.
  std::filesystem::path store_path = "newsdesk.db";
  // PostgreSQL store: connections this instance opens at most, LISTEN included (see
  // store_options::max_connections, whose default this is).
  std::size_t store_max_connections = store_options{}.max_connections;
  // PostgreSQL store: the bound on each round trip (see store_options::call_timeout).
  std::chrono::milliseconds store_timeout = store_options{}.call_timeout;

  // The "sites" entries as given (strings or objects); absent: every registered scraper.
  std::shared_ptr<const nlohmann::json> sites;
  // The "alerts" entries as given (objects: name, q, site, enabled, webhook); absent: none.
  // resolve_alerts checks them against the sites.
  std::shared_ptr<const nlohmann::json> alerts;
  // The embedded broker ("broker": {...} in the file, or false to turn it off).
  broker::config broker;

  // Not settings: what load_config found out, for the first log lines.
  // The config file read (--config or NEWSDESK_CONFIG); empty: defaults, environment and flags.
  std::string source;
  // Problems that do not stop startup, one message each (an unknown NEWSDESK_ variable); the
  // caller logs them.
  std::vector<std::string> warnings;
  // --print-config was given (main prints effective_config() and exits).
  bool print_config = false;
};

// The process environment, name -> value; load_config's seam, so tests pass a fake one.
using environment = std::map<std::string, std::string, std::less<>>;
environment process_environment();

// allowed_hosts as a list: split at commas, spaces trimmed, empty entries left out.
std::vector<std::string> host_list(std::string_view allowed_hosts);

// Reads argv (after the program name and any subcommand), the environment, and the config file
// named by --config or NEWSDESK_CONFIG, in that order of strength: flags win over environment,
// which wins over the file. Every setting has NEWSDESK_<PATH> (refresh.retry_base ->
// NEWSDESK_REFRESH_RETRY_BASE) and aliases where the ecosystem has a name (a renderer's row
// declares it: SPLASH_URL); empty values count as unset. Throws config_error naming the file,
// variable or flag and the key (an unknown flag: "unknown option --prot (did you mean --port?)").
// Unknown NEWSDESK_ variables are warnings in cfg.warnings. Sets `help` when --help was given
// (the caller prints usage()).
config load_config(const std::vector<std::string>& args, const environment& env, bool& help);

// Every setting of the file, one row each (see settings.hpp).
const settings::table<config>& config_table();

// Parses a config file's JSON text over `base`. `origin` names the file in messages.
void apply_config_json(config& base, std::string_view text, std::string_view origin);

// The sites to show, in config order, each bound to a registered scraper. Throws config_error
// for unknown scrapers, duplicate names and bad values.
// Fits the descriptor budgets into `open_file_limit` (RLIMIT_NOFILE): the HTTP connections and
// streams, the connections being refused, the broker's connections, `body_descriptors` for the
// built views' bodies and `reserved_descriptors` for everything else (store, renderers, logs,
// listeners). http.max_connections and
// http.max_streams of 0 are derived from what is left (two thirds and one third, at most 10,000
// and 4,096); the rest are taken as given. Throws config_error naming every part when they do
// not fit.
inline constexpr std::size_t reserved_descriptors = 512;
// A built view's bodies are memfds, up to three (identity, gzip, brotli); the views cached and
// kept for the fast path fit in this many (routes sizes its cache by it), however many sites
// and filters there are.
inline constexpr std::size_t body_descriptors = 1024;
void fit_descriptor_budget(config& cfg, std::size_t open_file_limit);

std::vector<site_config> resolve_sites(const config& cfg,
                                       const std::shared_ptr<const scrapers::registry>& registry);

// The enabled alerts, in config order, each checked: a usable and unique name, words to search
// for or sites to watch (`sites`, as loaded), a webhook's URL, format and limits. Disabled
// entries are checked too, then left out. Throws config_error naming the entry and the field:
// "alerts[1].name: duplicate alert name 'cnn'".
std::vector<alerts::alert_config> resolve_alerts(const config& cfg,
                                                 const std::vector<site_config>& sites);

// What the renderers are made from (renderer_set).
const renderer_options& renderer_options_of(const config& cfg);

// The built-in scrapers plus the site files in cfg.site_files_dir (a missing folder is an error
// only when it was named), resolved as above. Throws config_error or scrapers::site_file_error.
std::vector<site_config> load_sites(const config& cfg);

// The effective configuration in the config file's format and units, every key present but
// "sites" when it was not given. Read back by apply_config_json, it gives the same configuration.
nlohmann::json config_to_json(const config& cfg);
// Resolved sites as "sites" entries with every field filled in (for --print-config).
nlohmann::json sites_to_json(const std::vector<site_config>& sites);
// The environment variable of a setting: "refresh.interval" -> NEWSDESK_REFRESH_INTERVAL.
std::string env_name(std::string_view path);

// The --help text, from the table: every setting grouped, with its flag, environment variable
// (and alias), default, unit, range and help.
std::string usage();

} // namespace newsdesk::server
