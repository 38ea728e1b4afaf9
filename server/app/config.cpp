#include "server/app/config.hpp"

#include "server/app/config_reading.hpp"

#include "scrapers/scraper.hpp"
#include "scrapers/text.hpp"
#include "scrapers/url.hpp"
#include "server/core/read_file.hpp"
#include "server/render/renderer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

extern char** environ;

namespace newsdesk::server {

using json = nlohmann::json;

std::vector<std::string> host_list(std::string_view allowed_hosts) {
  std::vector<std::string> hosts;
  while (!allowed_hosts.empty()) {
    auto comma = allowed_hosts.find(',');
    auto host = scrapers::trim_ascii_whitespace(allowed_hosts.substr(0, comma));
    allowed_hosts =
        comma == std::string_view::npos ? std::string_view() : allowed_hosts.substr(comma + 1);
    if (!host.empty())
      hosts.emplace_back(host);
  }
  return hosts;
}

namespace config_reading {

void fail(std::string_view where, std::string_view what) {
  throw config_error(std::string(where) + ": " + std::string(what));
}

const renderer_descriptor& checked_renderer(std::string_view where, const std::string& name) {
  if (const auto* r = find_renderer(name))
    return *r;
  std::string known;
  for (const auto* r : registered_renderers())
    known.append(known.empty() ? "" : ", ").append(r->name);
  fail(where, "unknown renderer '" + name + "' (known: " + known + ")");
}

} // namespace config_reading

using config_reading::checked_renderer;
using config_reading::fail;

namespace {

constexpr std::string_view env_prefix = "NEWSDESK";

using settings::field;
using settings::kind;
using settings::setting;

// Wraps a row's setter so applying it also runs `then` (a fact the config keeps about the value).
setting and_then(setting row, std::function<void(config&)> then) {
  row.set = [set = std::move(row.set), then = std::move(then)](void* c, const json& v) {
    set(c, v);
    then(*static_cast<config*>(c));
  };
  return row;
}

settings::table<http_server_limits> make_http_table() {
  using limits = http_server_limits;
  return settings::table<limits>({{
      "http",
      {
          field(&limits::max_header_bytes,
                {.path = "max_header_bytes",
                 .unit = "bytes",
                 .min = 1024,
                 .help = "request line and headers together, and any chunk line or trailer "
                         "block; larger requests get 431"}),
          field(&limits::max_body_bytes, {.path = "max_body_bytes",
                                          .unit = "bytes",
                                          .help = "request bodies as sent, chunk framing "
                                                  "included; larger ones get 413"}),
          field(&limits::read_timeout,
                {.path = "read_timeout",
                 .min = 0.001,
                 .max = 3600,
                 .help = "for a whole request to arrive, idle keep-alive time included"}),
          field(&limits::write_timeout, {.path = "write_timeout",
                                         .min = 0.001,
                                         .max = 3600,
                                         .help = "for writing one response"}),
          field(&limits::max_connections,
                {.path = "max_connections",
                 .min = 0,
                 .help = "plain connections at once (streams have their own budget); more get "
                         "503 with Retry-After; 0: derived from the open-file limit"}),
          field(&limits::max_connections_per_ip,
                {.path = "max_connections_per_ip",
                 .min = 0,
                 .help = "plain connections from one client address; 0: no limit (behind a "
                         "proxy every client has its address)"}),
          field(&limits::max_streams,
                {.path = "max_streams",
                 .min = 0,
                 .help = "open /events streams at once, apart from max_connections; 0: derived "
                         "from the open-file limit"}),
          field(&limits::max_streams_per_ip,
                {.path = "max_streams_per_ip",
                 .min = 0,
                 .help = "open /events streams from one client address; 0: no limit"}),
          field(&limits::max_streams_per_range,
                {.path = "max_streams_per_range",
                 .min = 0,
                 .help = "open /events streams from one address range (IPv4 /24, IPv6 /64); 0: an "
                         "eighth of max_streams, none when max_streams_per_ip is 0"}),
      },
  }});
}

settings::table<refresh_settings> make_refresh_table() {
  using r = refresh_settings;
  return settings::table<r>({{
      "refresh",
      {
          field(&r::interval, {.path = "interval",
                               .min = 1,
                               .max = 7 * 24 * 3600,
                               .help = "between refreshes of one site"}),
          field(&r::jitter, {.path = "jitter",
                             .unit = "fraction",
                             .min = 0,
                             .max = 0.99,
                             .help = "each wait is the interval +/- this fraction at random"}),
          field(&r::max_concurrent_renders, {.path = "max_concurrent_renders",
                                             .min = 1,
                                             .max = 1000,
                                             .help = "renders in flight at once, all sites"}),
          field(&r::retries, {.path = "retries",
                              .min = 0,
                              .max = 20,
                              .help = "retries of a refresh after a transient failure"}),
          field(&r::retry_base, {.path = "retry_base",
                                 .min = 0.01,
                                 .max = 3600,
                                 .help = "a retry waits up to this, doubled each attempt"}),
          field(&r::retry_max, {.path = "retry_max",
                                .min = 0.01,
                                .max = 24 * 3600,
                                .help = "the longest wait before a retry"}),
          field(
              &r::max_backoff_factor,
              {.path = "max_backoff_factor",
               .min = 1,
               .max = 1024,
               .help = "a failing site waits interval * 2^failures, at most this many intervals"}),
          field(&r::cold_start_wait, {.path = "cold_start_wait",
                                      .min = 0,
                                      .max = 600,
                                      .help = "with nothing stored, /news waits this long for the "
                                              "first refreshes"}),
          field(&r::manual_min_interval,
                {.path = "manual_min_interval",
                 .min = 0,
                 .max = 24 * 3600,
                 .help = "POST /api/refresh refreshes a site at most this often"}),
          field(&r::retention, {.path = "retention",
                                .min = 60,
                                .max = 3650.0 * 24 * 3600,
                                .help = "headlines not seen for this long are deleted"}),
          field(&r::parse_cpu_budget,
                {.path = "parse_cpu_budget",
                 .min = 0.001,
                 .max = 600,
                 .help = "CPU time one page may take to parse; over it the site gets a notice"}),
          field(&r::max_parse_queue_bytes,
                {.path = "max_parse_queue_bytes",
                 .unit = "bytes",
                 .min = 1,
                 .help = "rendered pages waiting to be parsed; no render starts beyond it"}),
          field(&r::lease, {.path = "lease",
                            .min = 1,
                            .max = 3600,
                            .help = "PostgreSQL store: a site's claim lasts this long unless "
                                    "renewed; a dead instance's sites are taken over after it"}),
      },
  }});
}

// The server's own rows: where it listens and what it serves, its store, its sites and alerts.
std::vector<setting> server_rows() {
  // Absent (null) means every registered scraper, which the printed file leaves out rather than
  // spell as an empty list (which would mean none).
  auto sites_row = settings::custom<config>(
      {.path = "sites",
       .help = "the sites to show: scraper names or objects (see config.example.json); unset: "
               "every registered scraper. In the environment: a JSON array or names separated by "
               "commas"},
      kind::list, [](const config& c) { return c.sites ? *c.sites : json(); },
      [](config& c, const json& v) { c.sites = std::make_shared<const json>(v); });
  auto alerts_row = settings::custom<config>(
      {.path = "alerts",
       .help = "saved searches, each told on MQTT newsdesk/alerts/NAME and to an optional "
               "webhook: objects {name, q, site, enabled, webhook: {url, format (json or ntfy), "
               "secret, timeout, attempts, retry_base, retry_max, queue}} (see "
               "config.example.json and README, Alerts). In the environment: a JSON array"},
      kind::list, [](const config& c) { return c.alerts ? *c.alerts : json::array(); },
      [](config& c, const json& v) { c.alerts = std::make_shared<const json>(v); });
  using c = config;
  return {
      field(&c::address, {.path = "address", .flag = "--address ADDR", .help = "listen address"}),
      field(&c::port,
            {.path = "port", .flag = "--port N", .help = "listen port (0: any free one)"}),
      field(&c::threads, {.path = "threads",
                          .flag = "--threads N",
                          .max = 256,
                          .help = "network threads (0: one per core the process may use)"}),
      field(&c::event_loops,
            {.path = "event_loops",
             .help = "HTTP connections each on one network thread's event loop: less CPU "
                     "per request, but a preempted thread's connections wait for it"}),
      field(
          &c::templates_dir,
          {.path = "templates_dir", .flag = "--templates DIR", .help = "folder holding news.html"}),
      field(&c::static_dir,
            {.path = "static_dir", .flag = "--static DIR", .help = "folder served under /static"}),
      and_then(field(&c::site_files_dir,
                     {.path = "site_files_dir",
                      .flag = "--sites-dir DIR",
                      .help = "folder of site files (*.json); must exist when named"}),
               [](config& cfg) { cfg.site_files_dir_given = true; }),
      field(&c::store_path,
            {.path = "store_path",
             .flag = "--store FILE|URL",
             .help = "the headline store: an SQLite file (:memory: keeps nothing), or a "
                     "postgresql://user@host:port/db URL that several instances share"}),
      field(&c::store_max_connections,
            {.path = "store_max_connections",
             .min = 2,
             .max = 1000,
             .help = "PostgreSQL store: connections this instance opens at most, its LISTEN "
                     "connection included (the rest serve queries); every instance's fit "
                     "in the server's max_connections. SQLite ignores it"}),
      field(&c::store_timeout,
            {.path = "store_timeout",
             .min = 0.1,
             .max = 600,
             .help = "PostgreSQL store: each query, connection start or wait for a free "
                     "connection may take this long; then it is cancelled and the store "
                     "reported unreachable (a frozen server is told as a stopped one). "
                     "SQLite ignores it"}),
      field(&c::public_url,
            {.path = "public_url",
             .flag = "--public-url URL",
             .help = "where readers reach newsdesk, e.g. https://news.example.org: feeds' "
                     "absolute links start with it (unset: the request's Host header)"}),
      field(&c::allowed_hosts,
            {.path = "allowed_hosts",
             .flag = "--allowed-hosts LIST",
             .help = "without public_url, the Host names readers use (comma-separated "
                     "host or host:port): another gets the first one in feeds' links"}),
      field(&c::reject_unknown_hosts,
            {.path = "reject_unknown_hosts",
             .help = "answer 400 to a request whose Host is not in allowed_hosts (health "
                     "checks and /metrics excepted)"}),
      field(&c::pictures,
            {.path = "pictures",
             .help = "a picture per Top stories card, from the image its source gives, "
                     "fetched once, made small and served by newsdesk (false: none fetched, "
                     "none shown)"}),
      field(&c::picture_bytes_per_site,
            {.path = "picture_bytes_per_site",
             .unit = "bytes",
             .min = 64 * 1024,
             .max = 1024.0 * 1024 * 1024,
             .help = "each site's stored pictures together at most (the oldest are "
                     "dropped first)"}),
      sites_row,
      alerts_row,
  };
}

std::vector<setting> logging_rows() {
  auto log_level_row = settings::custom<config>(
      {.path = "log_level",
       .flag = "--log-level LEVEL",
       .choices = {"debug", "info", "warn", "error"},
       .help = "the least severe lines logged"},
      kind::text, [](const config& c) { return json(std::string(to_string(c.level))); },
      [](config& c, const json& v) { c.level = parse_log_level(v.get<std::string>()); });
  auto log_target_row = settings::custom<config>(
      {.path = "log_target",
       .flag = "--log-target T",
       .choices = {"stdout", "stderr"},
       .help = "where log lines go"},
      kind::text, [](const config& c) { return json(c.log_to_stderr ? "stderr" : "stdout"); },
      [](config& c, const json& v) { c.log_to_stderr = v == "stderr"; });
  using c = config;
  return {
      log_level_row,
      log_target_row,
      field(&c::access_log, {.path = "access_log", .help = "one log line per HTTP request"}),
      field(&c::metrics, {.path = "metrics", .help = "GET /metrics and the counting behind it"}),
  };
}

// The renderer, the default wait and timeout, and each renderer's own options.
std::vector<setting> rendering_rows() {
  using c = config;
  const std::string renderer_help = renderer_choice_help();
  std::vector<setting> rendering{
      field(&c::renderer, {.path = "renderer", .flag = "--renderer NAME", .help = renderer_help}),
      field(&c::default_wait, {.path = "wait",
                               .flag = "--wait S",
                               .unit = "seconds",
                               .min = 0,
                               .max = 3600,
                               .help = "default wait after a page's load event"}),
      field(&c::default_timeout, {.path = "timeout",
                                  .flag = "--timeout S",
                                  .unit = "seconds",
                                  .min = 0.001,
                                  .max = 3600,
                                  .help = "default time for a whole render"}),
  };
  for (auto& row : renderer_settings())
    rendering.push_back(settings::project(std::move(row), &config::renderers));
  return rendering;
}

settings::table<config> make_table() {
  static const auto http_table = make_http_table();
  static const auto refresh_table = make_refresh_table();
  return settings::table<config>({
      {"server", server_rows()},
      {"logging and observability", logging_rows()},
      {"rendering", rendering_rows()},
      settings::embed("http", &config::http, http_table),
      settings::embed("refresh", &config::refresh, refresh_table),
      settings::embed("broker", &config::broker, broker::config_table()),
  });
}

// Site entries ("sites": [...]) are objects of their own, not settings: read field by field.
// "refresh" + "interval" -> "refresh.interval"; at the top level just the key.

// Checks that involve more than one setting's range: names, URLs, one value against another;
// each renderer checks its own options and finds what they point at.
void validate(config& cfg) {
  if (!cfg.renderer.empty())
    checked_renderer("renderer", cfg.renderer);
  if (!cfg.public_url.empty() && !scrapers::url::is_http_url(cfg.public_url))
    fail("public_url", "expected an http:// or https:// URL, got '" + cfg.public_url + "'");
  for (const auto& host : host_list(cfg.allowed_hosts))
    if (!scrapers::url::is_http_url("http://" + host + "/") ||
        host.find_first_of("/?#@") != std::string::npos)
      fail("allowed_hosts", "expected host or host:port names, got '" + host + "'");
  if (cfg.reject_unknown_hosts && host_list(cfg.allowed_hosts).empty())
    fail("reject_unknown_hosts", "needs allowed_hosts: with none, every request would be refused");
  try {
    resolve_renderer_options(cfg.renderers);
  } catch (const settings::error& e) {
    throw config_error(e.what());
  }
  if (cfg.default_wait >= cfg.default_timeout)
    fail("wait",
         "expected seconds below the timeout (" + format_seconds(cfg.default_timeout) + " s)");
}

// Flags that are not settings: where settings come from, and what to do instead of serving.
struct command_flag {
  const char* name;
  const char* metavar; // empty: takes no value
  const char* help;
};
constexpr command_flag command_flags[] = {
    {"config", "FILE", "the JSON config file (env NEWSDESK_CONFIG)"},
    {"broker-listen", "ADDR:PORT|off",
     "the broker's broker.address and broker.port together, or off (broker.enabled false)"},
    {"print-config", "",
     "print the effective configuration (a config file, sites resolved) and exit"},
    {"help", "", "this text"},
};

// Every flag, for "did you mean".
std::vector<std::string> known_flags() {
  std::vector<std::string> flags;
  for (const auto& f : command_flags)
    flags.push_back(std::string("--") + f.name);
  for (const setting* row : config_table().rows())
    if (!row->flag.empty())
      flags.push_back("--" + row->flag);
  return flags;
}

// Reads `path` over `cfg`; messages name the file.
void read_config_file(config& cfg, const std::string& path) {
  auto text = read_whole_file(path);
  if (!text)
    fail(path, "cannot open the config file");
  apply_config_json(cfg, *text, path);
}

} // namespace

const settings::table<config>& config_table() {
  static const settings::table<config> table = make_table();
  return table;
}

std::string env_name(std::string_view path) {
  return settings::env_name(env_prefix, path);
}

void apply_config_json(config& cfg, std::string_view text, std::string_view origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(origin, std::string("not valid JSON: ") + e.what());
  }
  try {
    config_table().apply_json(cfg, j);
  } catch (const settings::error& e) {
    fail(origin, e.what());
  }
}

nlohmann::json config_to_json(const config& cfg) {
  auto j = config_table().to_json(cfg);
  if (!cfg.sites)
    j.erase("sites");
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

environment process_environment() {
  environment env;
  for (char** entry = environ; *entry; ++entry) {
    std::string_view text = *entry;
    auto eq = text.find('=');
    if (eq != std::string_view::npos)
      env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

config load_config(const std::vector<std::string>& args, const environment& env, bool& help) {
  config cfg;
  help = false;
  const auto& table = config_table();

  // Flags first into a list, so the config file they name is read before anything else.
  struct flag_value {
    std::string name, value;
  };
  std::vector<flag_value> flags;
  std::string config_path;
  if (auto it = env.find("NEWSDESK_CONFIG"); it != env.end())
    config_path = it->second;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h") {
      help = true;
      continue;
    }
    if (!arg.starts_with("--"))
      fail(arg, "unexpected argument (see --help)");
    auto eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const command_flag* command = nullptr;
    for (const auto& f : command_flags)
      if (name == f.name)
        command = &f;
    const setting* row = table.find_flag(name);
    if (!command && !row) {
      auto near = settings::closest("--" + name, known_flags());
      throw config_error("unknown option --" + name +
                         (near ? " (did you mean " + *near + "?)" : std::string(" (see --help)")));
    }
    if (command && !*command->metavar) {
      if (eq != std::string::npos)
        fail("--" + name, "takes no value");
      help = help || name == "help";
      cfg.print_config = cfg.print_config || name == "print-config";
      continue;
    }
    std::string value;
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (i + 1 < args.size())
      value = args[++i];
    else
      fail(arg, "needs a value");
    if (name == "config")
      config_path = value;
    else
      flags.push_back({name, value});
  }

  if (!config_path.empty()) {
    read_config_file(cfg, config_path);
    cfg.source = config_path;
  }

  // The environment: NEWSDESK_ and each setting's path, in the file's units. An alias the
  // ecosystem uses (SPLASH_URL) is read first, so the NEWSDESK_ name wins when both are set.
  // Empty values count as unset (tests clear inherited settings that way).
  std::set<std::string, std::less<>> known{"NEWSDESK_CONFIG"};
  auto from_env = [&](const setting& row, const std::string& name) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty())
      return;
    try {
      table.apply_text(cfg, row, it->second);
    } catch (const settings::error& e) {
      fail(name, e.what());
    }
  };
  for (const setting* row : table.rows()) {
    const auto name = env_name(row->path);
    known.insert(name);
    if (!row->alias.empty())
      from_env(*row, row->alias);
    from_env(*row, name);
  }
  for (const auto& [name, value] : env)
    if (name.starts_with("NEWSDESK_") && !value.empty() && !known.contains(name)) {
      auto near = settings::closest(name, {known.begin(), known.end()});
      cfg.warnings.push_back("unknown environment variable " + name + " ignored" +
                             (near ? " (did you mean " + *near + "?)" : std::string()));
    }

  for (const auto& [name, value] : flags) {
    const std::string where = "--" + name;
    try {
      if (name == "broker-listen") {
        if (value == "off") {
          cfg.broker.enabled = false;
        } else {
          broker::apply_listen_spec(cfg.broker, value);
          cfg.broker.enabled = true;
        }
      } else {
        table.apply_text(cfg, *table.find_flag(name), value);
      }
    } catch (const std::invalid_argument& e) {
      fail(where, e.what());
    }
  }

  validate(cfg);
  return cfg;
}

void fit_descriptor_budget(config& cfg, std::size_t open_file_limit) {
  // The broker's share, sized here only when broker.max_connections is left at its default: that
  // default (16,384 MQTT clients) is what a broker alone would take, and on a common open-file
  // limit (20,000) it left HTTP 1,824 descriptors, 608 of them for /events streams, too few for
  // a page's readers. Left at its default, the broker takes at most a third of what the fixed
  // parts leave (6,069 of 20,000), the HTTP budgets the rest; a value set explicitly (file,
  // environment, flag) is taken as given, as before.
  std::size_t broker = cfg.broker.enabled ? cfg.broker.max_connections : 0;
  const std::size_t reserved = reserved_descriptors + body_descriptors + cfg.http.max_refusing;
  if (cfg.broker.enabled && cfg.broker.max_connections == broker::config{}.max_connections) {
    const std::size_t share = open_file_limit > reserved ? (open_file_limit - reserved) / 3 : 0;
    broker = cfg.broker.max_connections = std::min(broker, std::max<std::size_t>(share, 1));
  }
  const std::size_t fixed = reserved + broker;
  const std::size_t left = open_file_limit > fixed ? open_file_limit - fixed : 0;
  auto& http = cfg.http;
  const std::size_t given = http.max_connections + http.max_streams;
  // What the derived budgets share: what the given ones leave.
  const std::size_t free = left > given ? left - given : 0;
  const bool derive_plain = http.max_connections == 0, derive_streams = http.max_streams == 0;
  if (derive_plain)
    http.max_connections = std::min<std::size_t>(10'000, derive_streams ? free * 2 / 3 : free);
  if (derive_streams)
    http.max_streams = std::min<std::size_t>(4'096, derive_plain ? free / 3 : free);
  const std::size_t need = fixed + http.max_connections + http.max_streams;
  if (need <= open_file_limit && http.max_connections >= 16 && http.max_streams >= 8)
    return;
  throw config_error(
      "descriptor budgets: http.max_connections " + std::to_string(http.max_connections) +
      " + http.max_streams " + std::to_string(http.max_streams) + " + " +
      std::to_string(http.max_refusing) + " being refused + broker.max_connections " +
      std::to_string(broker) + " + " + std::to_string(body_descriptors) + " for built views + " +
      std::to_string(reserved_descriptors) + " for the store, renderers and logs need " +
      std::to_string(need) +
      " open files (and at least 16 connections and 8 streams), but this process may open " +
      std::to_string(open_file_limit) +
      " (RLIMIT_NOFILE); lower those settings or raise the limit (ulimit -n, LimitNOFILE= in "
      "systemd, ulimits: in compose)");
}

const renderer_options& renderer_options_of(const config& cfg) {
  return cfg.renderers;
}

std::string usage() {
  std::string text = R"(usage: newsdesk [options]

Serves /news: the current headlines of the configured sites on one page.

Every setting below can be given in the JSON config file (by its key; dots are nested objects),
as an environment variable, and some as a flag. Flags win over the environment, which wins
over the file. Values are in the file's units (durations in seconds unless the key ends in _ms).
See config.example.json for a file with every key at its default.

options that are not settings:
)";
  for (const auto& f : command_flags) {
    std::string flag =
        std::string("  --") + f.name + (*f.metavar ? std::string(" ") + f.metavar : "");
    text += flag + "\n      " + f.help + "\n";
  }
  text += config_table().help(env_prefix);
  text += R"(
commands (run instead of the server):
  newsdesk --check-scrapers [DIR]                   validate every site file in DIR (sites)
  newsdesk --try-site FILE|NAME [--html SAVED] [--url URL] [--json]
                                                    show what a site finds: in a saved page or
                                                    feed, or rendered live (no --html)
  newsdesk --import-opml FILE                       a site file per feed of an OPML list
  newsdesk --stories FILE.csv                       group headlines (ID,TITLE,URL,HOSTNAME,
                                                    TIMESTAMP) into stories: ID<TAB>STORY
  newsdesk broker [--listen ADDR:PORT] [--config FILE]   run only the pub/sub broker

signals: SIGHUP reloads the site files and templates (a broken one keeps the old ones);
SIGINT and SIGTERM shut down gracefully.
)";
  return text;
}

} // namespace newsdesk::server
