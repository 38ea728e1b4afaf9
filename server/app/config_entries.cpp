// The configuration's sites and alerts entries: each checked against what it names (scrapers,
// renderers, sites) and resolved into what the service runs (site_config, alert_config).
#include "server/app/config.hpp"

#include "server/app/config_reading.hpp"
#include "server/core/settings.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/scraper.hpp"
#include "scrapers/site_file.hpp"
#include "scrapers/url.hpp"
#include "server/http/http_message.hpp"
#include "server/news/news_query.hpp"
#include "server/news/search.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

namespace newsdesk::server {

using json = nlohmann::json;
using config_reading::checked_renderer;
using config_reading::fail;

namespace {

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

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

bool is_hex_colour(std::string_view c) {
  if (c.size() != 4 && c.size() != 7)
    return false;
  return c[0] == '#' && std::all_of(c.begin() + 1, c.end(), [](char ch) {
           return std::isxdigit(static_cast<unsigned char>(ch));
         });
}

// The registered scraper `name`; fails at `where`, listing the registered ones, when none is.
const scrapers::scraper& scraper_named(const scrapers::registry& registry, const std::string& name,
                                       const std::string& where) {
  if (const auto* scraper = registry.find(name))
    return *scraper;
  std::string known;
  for (const auto* s : registry.all())
    known += (known.empty() ? "" : ", ") + s->site().name;
  fail(where, "no scraper named '" + name + "' (registered: " + known + ")");
}

// A site's name is its key everywhere (URLs, the store, topics): [a-z0-9_-]+ and unique.
void check_site_name(const std::string& name, const std::string& where,
                     std::set<std::string>& names) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      }))
    fail(where, "expected [a-z0-9_-]+, got '" + name + "'");
  if (!names.insert(name).second)
    fail(where, "duplicate site name '" + name + "'");
}

// An alert's webhook object: its keys, ranges and defaults as a settings table (the same
// machinery, messages and defaults as the service's settings: each key spelt once).
const settings::table<alerts::webhook_config>& webhook_table() {
  using w = alerts::webhook_config;
  using settings::field;
  static const settings::table<w> table({{
      "webhook",
      {
          field(&w::url, {.path = "url", .help = "where matches are POSTed (http or https)"}),
          settings::custom<w>(
              {.path = "format",
               .choices = {"json", "ntfy"},
               .help = "the body: newsdesk's JSON, or ntfy's headers and text"},
              settings::kind::text,
              [](const w& c) {
                return json(c.format == alerts::webhook_format::ntfy ? "ntfy" : "json");
              },
              [](w& c, const json& v) {
                c.format =
                    v == "ntfy" ? alerts::webhook_format::ntfy : alerts::webhook_format::json;
              }),
          field(&w::secret, {.path = "secret", .help = "signs every POST with HMAC-SHA256"}),
          field(&w::timeout, {.path = "timeout",
                              .unit = "seconds",
                              .min = 0.1,
                              .max = 300,
                              .help = "each attempt's deadline"}),
          field(&w::attempts, {.path = "attempts",
                               .min = 1,
                               .max = 100,
                               .help = "attempts per match, the first included"}),
          field(&w::retry_base, {.path = "retry_base",
                                 .unit = "seconds",
                                 .min = 0.01,
                                 .max = 3600,
                                 .help = "the first retry's wait; each one doubles it"}),
          field(&w::retry_max, {.path = "retry_max",
                                .unit = "seconds",
                                .min = 0.01,
                                .max = 86400,
                                .help = "the longest wait between attempts"}),
          field(&w::queue, {.path = "queue",
                            .min = 1,
                            .max = 1'000'000,
                            .help = "matches waiting at most; the oldest is dropped beyond"}),
      },
  }});
  return table;
}

} // namespace

std::vector<site_config> resolve_sites(const config& cfg,
                                       const std::shared_ptr<const scrapers::registry>& registry) {
  // Which renderer a site uses, strongest first: its config entry; the operator's global
  // "renderer"; the scraper's own hint when that renderer is available; Splash when configured,
  // else a local Chromium when one is installed, else direct (automatic_renderer).
  auto available = [&](const std::string& name) {
    const auto* r = find_renderer(name);
    return !r || r->available(cfg.renderers); // an unknown name is refused below, by name
  };
  const std::string automatic(automatic_renderer(cfg.renderers).name);
  auto default_renderer_for = [&](const scrapers::site_info& info) {
    if (info.renderer == "feed") // a feed is read, never rendered
      return std::string("feed");
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
                         "timeout", "interval", "enabled", "section"});
    std::string scraper_name;
    if (!read(entry, "scraper", scraper_name, where))
      fail(where, "missing \"scraper\"");
    bool enabled = true;
    read(entry, "enabled", enabled, where);
    const auto& scraper = scraper_named(*registry, scraper_name, where + ".scraper");
    if (!enabled)
      continue;
    const auto& info = scraper.site();
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
    site.scraper = std::shared_ptr<const scrapers::scraper>(registry, &scraper);
    site.name = info.name;
    site.display_name = info.display_name;
    site.url = info.url;
    site.colour = info.colour;
    site.section = info.section;
    site.renderer = default_renderer_for(info);
    double wait = info.wait_seconds.value_or(cfg.default_wait);
    double timeout = info.timeout_seconds.value_or(cfg.default_timeout);
    read(entry, "name", site.name, where);
    read(entry, "display_name", site.display_name, where);
    read(entry, "url", site.url, where);
    // A page's home is the page; a feed site file may name its home beside its feed.
    site.home = info.home_url.empty() || entry.contains("url") ? site.url : info.home_url;
    read(entry, "colour", site.colour, where);
    if (read(entry, "section", site.section, where) &&
        (site.section.empty() || site.section.size() > scrapers::max_section_bytes ||
         site.section != scrapers::collapse_whitespace(site.section)))
      fail(where + ".section", "expected 1-" + std::to_string(scrapers::max_section_bytes) +
                                   " bytes of text on one line");
    read(entry, "renderer", site.renderer, where);
    read(entry, "wait", wait, where);
    read(entry, "timeout", timeout, where);
    double interval = static_cast<double>(cfg.refresh.interval.count()) / 1000.0;
    if (read(entry, "interval", interval, where) && !(interval >= 1 && interval <= 7 * 24 * 3600.0))
      fail(where + ".interval", "expected seconds from 1 to 604800");

    check_site_name(site.name, where + ".name", names);
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
    const auto& used = checked_renderer(renderer_source, site.renderer);
    if (!(timeout > 0) || timeout > 3600)
      fail(timeout_source, "expected seconds in (0, 3600]");
    if (!(wait >= 0) || wait >= timeout)
      fail(source("wait", info.wait_seconds.has_value(), "wait"),
           "expected seconds >= 0 and below the timeout (" + format_seconds(timeout) + " s)");
    if (!used.available(cfg.renderers))
      fail(renderer_source, "site '" + site.name + "' uses " + std::string(used.display_name()) +
                                " but " + used.missing(cfg.renderers));
    if (used.refuse_timeout)
      if (auto refused = used.refuse_timeout(cfg.renderers, timeout); !refused.empty())
        fail(timeout_source, refused);
    site.wait = std::chrono::milliseconds(static_cast<long long>(wait * 1000));
    site.timeout = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
    site.interval = seconds_to_ms(interval);
    sites.push_back(std::move(site));
  }
  return sites;
}

std::vector<alerts::alert_config> resolve_alerts(const config& cfg,
                                                 const std::vector<site_config>& sites) {
  std::vector<alerts::alert_config> out;
  if (!cfg.alerts)
    return out;
  if (!cfg.alerts->is_array())
    fail("alerts", "expected an array of objects");
  std::set<std::string> names;
  for (std::size_t i = 0; i < cfg.alerts->size(); ++i) {
    const std::string where = "alerts[" + std::to_string(i) + "]";
    const json& entry = (*cfg.alerts)[i];
    if (!entry.is_object())
      fail(where, "expected an object with a name and q, site or both");
    reject_unknown_keys(entry, where, {"name", "q", "site", "enabled", "webhook"});
    alerts::alert_config alert;
    if (!read(entry, "name", alert.name, where))
      fail(where, "missing \"name\"");
    if (!alerts::usable_name(alert.name))
      fail(where + ".name", "'" + alert.name.substr(0, 80) +
                                "' cannot be an MQTT topic level: expected letters, digits, '-', "
                                "'_' or '.' (no '/', '+', '#' or spaces), at most " +
                                std::to_string(alerts::max_name_bytes) + " bytes");
    if (!names.insert(alert.name).second)
      fail(where + ".name", "duplicate alert name '" + alert.name + "'");
    bool enabled = true;
    read(entry, "enabled", enabled, where);
    // q= and site= as /news reads them: the same words, the same matcher.
    if (read(entry, "q", alert.q, where)) {
      if (alert.q.size() > max_q_bytes)
        fail(where + ".q", "longer than " + std::to_string(max_q_bytes) + " bytes");
      alert.words = search_query(alert.q);
      if (alert.words.empty())
        fail(where + ".q", "no words to search for in '" + alert.q + "'");
    }
    if (read(entry, "site", alert.site, where)) {
      auto parsed = parse_news_query("site=" + form_encode(alert.site), [&](std::string_view s) {
        return std::any_of(sites.begin(), sites.end(),
                           [&](const site_config& c) { return c.name == s; });
      });
      if (auto* problem = std::get_if<std::string>(&parsed)) {
        std::string known;
        for (const auto& s : sites)
          known += (known.empty() ? "" : ", ") + s.name;
        fail(where + ".site", problem->substr(problem->find(':') + 2) + " (sites: " + known + ")");
      }
      alert.sites = std::get<news_query>(parsed).sites;
    }
    if (alert.words.empty() && alert.sites.empty())
      fail(where, "give q, site or both (with neither, every headline would match)");
    if (auto hook = entry.find("webhook"); hook != entry.end()) {
      const std::string at = where + ".webhook";
      if (!hook->is_object())
        fail(at, "expected an object with a url");
      alerts::webhook_config w;
      try {
        webhook_table().apply_json(w, *hook);
      } catch (const settings::error& e) {
        throw config_error(at + "." + e.what()); // the message starts with the key
      }
      if (w.url.empty())
        fail(at, "missing \"url\"");
      if (!scrapers::url::is_http_url(w.url))
        fail(at + ".url", "expected an http:// or https:// URL, got '" + w.url + "'");
      if (w.retry_max < w.retry_base)
        fail(at + ".retry_max", "expected at least retry_base");
      alert.webhook = std::move(w);
    }
    if (enabled)
      out.push_back(std::move(alert));
  }
  return out;
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

} // namespace newsdesk::server
