#include "server/app/config.hpp"
#include "server/render/browserless_renderer.hpp"
#include "server/render/splash_renderer.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"
#include "tests/support/test_paths.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace newsdesk::server;

namespace {
struct fake_env {
  environment vars;
  const environment& fn() const { return vars; }
};

config from_json(const std::string& text) {
  config cfg;
  apply_config_json(cfg, text, "test.json");
  return cfg;
}

const config& config_defaults() {
  static const config defaults;
  return defaults;
}

const std::shared_ptr<const newsdesk::scrapers::registry>& builtins() {
  static const std::shared_ptr<const newsdesk::scrapers::registry> r = [] {
    auto reg = std::make_shared<newsdesk::scrapers::registry>();
    newsdesk::scrapers::register_builtin_scrapers(*reg);
    return reg;
  }();
  return r;
}
} // namespace

TEST_CASE("defaults, then environment, then flags") {
  fake_env env;
  bool help = false;
  auto cfg = load_config({}, env.fn(), help);
  CHECK(cfg.port == 8080);
  CHECK(cfg.address == "127.0.0.1");

  env.vars = {{"NEWSDESK_PORT", "9000"}, {"SPLASH_URL", "http://splash:8050"}};
  cfg = load_config({}, env.fn(), help);
  CHECK(cfg.port == 9000);
  CHECK(cfg.renderers.of<splash_options>().url == "http://splash:8050");

  cfg = load_config({"--port", "9100", "--splash-url=http://other:8050"}, env.fn(), help);
  CHECK(cfg.port == 9100);
  CHECK(cfg.renderers.of<splash_options>().url == "http://other:8050");
  CHECK_FALSE(help);
  load_config({"--help"}, env.fn(), help);
  CHECK(help);
}

TEST_CASE("pictures are on by default, off with NEWSDESK_PICTURES=false; their bytes are bounded") {
  fake_env env;
  bool help = false;
  auto cfg = load_config({}, env.fn(), help);
  CHECK(cfg.pictures);
  CHECK(cfg.picture_bytes_per_site == 2 * 1024 * 1024);
  env.vars = {{"NEWSDESK_PICTURES", "false"}, {"NEWSDESK_PICTURE_BYTES_PER_SITE", "500000"}};
  cfg = load_config({}, env.fn(), help);
  CHECK_FALSE(cfg.pictures);
  CHECK(cfg.picture_bytes_per_site == 500'000);
  env.vars = {{"NEWSDESK_PICTURE_BYTES_PER_SITE", "1000"}};
  CHECK_THROWS_AS(load_config({}, env.fn(), help), std::exception);
}

TEST_CASE("bad flags and environment values name themselves") {
  fake_env env;
  bool help = false;
  CHECK_THROWS_WITH_AS(load_config({"--port", "70000"}, env.fn(), help),
                       doctest::Contains("--port"), config_error);
  CHECK_THROWS_WITH_AS(load_config({"--colour"}, env.fn(), help), doctest::Contains("--colour"),
                       config_error);
  CHECK_THROWS_WITH_AS(load_config({"--frobnicate", "1"}, env.fn(), help),
                       "unknown option --frobnicate (see --help)", config_error);
  CHECK_THROWS_WITH_AS(load_config({"stray"}, env.fn(), help), doctest::Contains("stray"),
                       config_error);
  env.vars = {{"NEWSDESK_PORT", "eighty"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help), doctest::Contains("NEWSDESK_PORT"),
                       config_error);
  env.vars = {{"NEWSDESK_RENDERER", "phantomjs"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help),
                       doctest::Contains("unknown renderer 'phantomjs'"), config_error);
  env.vars = {{"NEWSDESK_CONFIG", "/nonexistent/newsdesk.json"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help),
                       doctest::Contains("/nonexistent/newsdesk.json"), config_error);
}

TEST_CASE("the config file rejects unknown keys, wrong types and broken JSON, naming them") {
  CHECK_THROWS_WITH_AS(from_json(R"({"prot": 80})"),
                       doctest::Contains("test.json: prot: unknown key"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": "80"})"),
                       doctest::Contains("test.json: port: expected a whole number, got \"80\""),
                       config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": 99999})"),
                       "test.json: port: expected a whole number from 0 to 65535, got 99999",
                       config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": -1})"), doctest::Contains("from 0 to 65535"),
                       config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"http": {"max_body": 1}})"),
                       doctest::Contains("http.max_body: unknown key"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": 80,})"), doctest::Contains("not valid JSON"),
                       config_error);
  CHECK_THROWS_WITH_AS(from_json(R"([1,2])"), doctest::Contains("expected a JSON object"),
                       config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"sites": {"cnn": 1}})"),
                       doctest::Contains("sites: expected an array"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"log_level": "loud"})"),
                       "test.json: log_level: expected one of debug, info, warn, error, got 'loud'",
                       config_error);
  auto cfg = from_json(R"({"http": {"max_connections": 5, "read_timeout": 1.5}, "broker": false})");
  CHECK(cfg.http.max_connections == 5);
  CHECK(cfg.http.read_timeout == std::chrono::milliseconds(1500));
  CHECK_FALSE(cfg.broker.enabled);
  CHECK_THROWS_WITH_AS(from_json(R"({"broker": {"prot": 1}})"),
                       doctest::Contains("test.json: broker"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"broker": {"prot": 1}})"), doctest::Contains("prot"),
                       config_error);
}

TEST_CASE("without a sites list every registered scraper is shown with its own defaults") {
  config cfg;
  auto sites = resolve_sites(cfg, builtins());
  REQUIRE(sites.size() == builtins()->size());
  for (const auto& s : sites) {
    CHECK(s.renderer == "direct"); // no Splash configured
    CHECK(s.scraper != nullptr);
    CHECK(s.timeout == std::chrono::seconds(30));
  }
  cfg.renderers.of<splash_options>().url = "http://splash:8050";
  CHECK(resolve_sites(cfg, builtins()).front().renderer == "splash");
}

TEST_CASE("site entries override the scraper's defaults and are validated") {
  auto cfg = from_json(R"({"splash_url": "http://s:8050", "sites": [
      "cnn",
      {"scraper": "cnn", "name": "cnn-us", "url": "https://www.cnn.com/", "colour": "#123", "wait": 2, "timeout": 10},
      {"scraper": "aljazeera", "enabled": false}]})");
  auto sites = resolve_sites(cfg, builtins());
  REQUIRE(sites.size() == 2);
  CHECK(sites[0].name == "cnn");
  CHECK(sites[1].name == "cnn-us");
  CHECK(sites[1].url == "https://www.cnn.com/");
  CHECK(sites[1].wait == std::chrono::seconds(2));
  CHECK(sites[1].timeout == std::chrono::seconds(10));
  CHECK(sites[1].scraper == sites[0].scraper);

  auto fails = [](const std::string& text, const std::string& message) {
    auto c = from_json(text);
    CHECK_THROWS_WITH_AS(resolve_sites(c, builtins()), doctest::Contains(message.c_str()),
                         config_error);
  };
  fails(R"({"sites": ["nope"]})", "sites[0].scraper: no scraper named 'nope'");
  fails(R"({"sites": ["cnn", "cnn"]})", "sites[1].name: duplicate site name 'cnn'");
  fails(R"j({"sites": [{"scraper": "cnn", "colour": "red; background: url(x)"}]})j",
        "sites[0].colour");
  fails(R"j({"sites": [{"scraper": "cnn", "url": "javascript:alert(1)"}]})j", "sites[0].url");
  fails(R"({"sites": [{"scraper": "cnn", "wait": 5, "timeout": 2}]})",
        "sites[0].wait: expected seconds >= 0 and below the timeout (2 s)");
  fails(R"({"sites": [{"scraper": "cnn", "renderer": "splash"}]})", "no splash_url or SPLASH_URL");
  fails(R"({"splash_url": "http://s:8050", "sites": [{"scraper": "cnn", "timeout": 120}]})",
        "sites[0].timeout: Splash refuses timeouts above its --max-timeout (90 s, "
        "splash_max_timeout)");
  fails(R"({"sites": [{"scraper": "cnn", "name": "CNN!"}]})", "sites[0].name");
  fails(R"({"sites": [{"scraper": "cnn", "frequency": 3}]})", "sites[0].frequency: unknown key");
  fails(R"({"sites": [42]})", "sites[0]: expected a scraper name or an object");
}

TEST_CASE("alerts are read with /news's q= and site=, and a bad one is refused by entry and "
          "field") {
  auto with_alerts = [](const std::string& alerts) {
    auto cfg = from_json(R"({"sites": ["cnn", "aljazeera"], "alerts": )" + alerts + "}");
    return resolve_alerts(cfg, resolve_sites(cfg, builtins()));
  };
  auto found = with_alerts(R"([
      {"name": "storms", "q": "Élysée STORM"},
      {"name": "aj-all", "site": "aljazeera"},
      {"name": "off", "q": "x", "enabled": false},
      {"name": "phone", "q": "storm", "site": "cnn,aljazeera",
       "webhook": {"url": "https://ntfy.example/t", "format": "ntfy", "secret": "k",
                   "timeout": 2.5, "attempts": 3, "retry_base": 0.5, "retry_max": 10,
                   "queue": 50}}])");
  REQUIRE(found.size() == 3);
  CHECK(found[0].name == "storms");
  CHECK(found[0].words.words() == std::vector<std::string>{"elysee", "storm"});
  CHECK(found[0].sites.empty());
  CHECK_FALSE(found[0].webhook);
  CHECK(found[1].sites == std::vector<std::string>{"aljazeera"});
  CHECK(found[1].words.empty());
  REQUIRE(found[2].webhook);
  const auto& w = *found[2].webhook;
  CHECK(found[2].sites == std::vector<std::string>{"cnn", "aljazeera"});
  CHECK(w.url == "https://ntfy.example/t");
  CHECK(w.format == alerts::webhook_format::ntfy);
  CHECK(w.secret == "k");
  CHECK(w.timeout == std::chrono::milliseconds(2500));
  CHECK(w.attempts == 3);
  CHECK(w.retry_base == std::chrono::milliseconds(500));
  CHECK(w.retry_max == std::chrono::seconds(10));
  CHECK(w.queue == 50);
  const alerts::webhook_config defaults;
  auto plain = with_alerts(R"([{"name": "a", "q": "x", "webhook": {"url": "http://10.0.0.2/"}}])");
  CHECK(plain[0].webhook->format == alerts::webhook_format::json);
  CHECK(plain[0].webhook->attempts == defaults.attempts);
  CHECK(plain[0].webhook->queue == 1000);
  CHECK(with_alerts("[]").empty());

  auto fails = [&](const std::string& text, const std::string& message) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(with_alerts(text), doctest::Contains(message.c_str()), config_error);
  };
  fails(R"([{"q": "x"}])", "alerts[0]: missing \"name\"");
  fails(R"([{"name": "a", "q": "x"}, {"name": "a", "q": "y"}])",
        "alerts[1].name: duplicate alert name 'a'");
  for (const char* name : {"a/b", "a+", "#", "two words", ""})
    fails(std::string(R"([{"name": ")") + name + R"(", "q": "x"}])",
          "alerts[0].name: '" + std::string(name) + "' cannot be an MQTT topic level");
  fails(R"([{"name": "a"}])", "alerts[0]: give q, site or both");
  fails(R"([{"name": "a", "q": "!!!"}])", "alerts[0].q: no words to search for in '!!!'");
  fails(R"([{"name": "a", "q": "x", "site": "cnn,nope"}])",
        "alerts[0].site: no site named 'nope' (sites: cnn, aljazeera)");
  fails(R"([{"name": "a", "q": "x", "every": 1}])", "alerts[0].every: unknown key");
  fails(R"([{"name": "a", "q": 3}])", "alerts[0].q: expected a string, got 3");
  fails(R"([{"name": "a", "q": "x", "webhook": {}}])", "alerts[0].webhook: missing \"url\"");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "file:///etc/passwd"}}])",
        "alerts[0].webhook.url: expected an http:// or https:// URL, got 'file:///etc/passwd'");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "format": "slack"}}])",
        "alerts[0].webhook.format: expected one of json, ntfy, got 'slack'");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "attempts": 0}}])",
        "alerts[0].webhook.attempts: expected a whole number from 1 to 100");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "timeout": 0}}])",
        "alerts[0].webhook.timeout: expected seconds from 0.1 to 300");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "retry_max": 0.5}}])",
        "alerts[0].webhook.retry_max: expected at least retry_base");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "queue": 0}}])",
        "alerts[0].webhook.queue: expected a whole number from 1 to 1000000");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "retry": 3}}])",
        "alerts[0].webhook.retry: unknown key");
  fails(R"([{"name": "a", "q": "x", "webhook": {"url": "http://h/", "retry_base": "soon"}}])",
        "alerts[0].webhook.retry_base: expected");
  fails(R"([42])", "alerts[0]: expected an object");
  // A disabled entry is checked all the same.
  fails(R"([{"name": "a/b", "q": "x", "enabled": false}])", "alerts[0].name");
}

TEST_CASE("a site file's bad render options are reported against the site file") {
  // Values the site file supplies fail checks only the service can make (Splash's
  // --max-timeout, the service's default timeout); the message names the file, not a
  // sites[N] the user never wrote.
  auto with_site = [](const std::string& extra) {
    auto r = std::make_shared<newsdesk::scrapers::registry>();
    r->add(newsdesk::scrapers::parse_site_file(
        R"({"name": "slow", "display_name": "Slow", "url": "https://slow.example/",
            "colour": "#123", "link": "a")" +
            extra + "}",
        "sites/slow.json"));
    return std::shared_ptr<const newsdesk::scrapers::registry>(std::move(r));
  };
  config cfg;
  cfg.renderers.of<splash_options>().url = "http://splash:8050";
  CHECK_THROWS_WITH_AS(resolve_sites(cfg, with_site(R"(, "timeout": 120)")),
                       "sites/slow.json: timeout: Splash refuses timeouts above its --max-timeout "
                       "(90 s, splash_max_timeout)",
                       config_error);
  CHECK_THROWS_WITH_AS(resolve_sites(cfg, with_site(R"(, "wait": 45)")),
                       "sites/slow.json: wait: expected seconds >= 0 and below the timeout (30 s)",
                       config_error);
  // The same site listed in the config with its own timeout: the entry is blamed.
  auto listed = from_json(R"({"splash_url": "http://s:8050",
                              "sites": [{"scraper": "slow", "timeout": 100}]})");
  CHECK_THROWS_WITH_AS(resolve_sites(listed, with_site("")),
                       doctest::Contains("sites[0].timeout: Splash refuses"), config_error);
  // A site file may ask for any renderer; one that is not set up falls back to the automatic
  // choice (Splash here), as a C++ scraper's hint does.
  for (const char* renderer : {"splash", "chromium", "browserless", "direct"}) {
    CAPTURE(renderer);
    auto sites = resolve_sites(cfg, with_site(std::string(R"(, "renderer": ")") + renderer + "\""));
    REQUIRE(sites.size() == 1);
    const bool available = std::string(renderer) == "splash" || std::string(renderer) == "direct";
    CHECK(sites[0].renderer == (available ? renderer : "splash"));
  }
}

TEST_CASE("a feed site file's url is the site's home page; its feed is what is fetched") {
  auto r = std::make_shared<newsdesk::scrapers::registry>();
  r->add(newsdesk::scrapers::parse_site_file(
      R"({"name": "blog", "feed": "https://feeds.example/blog.xml", "url": "https://blog.example/"})",
      "sites/blog.json"));
  r->add(newsdesk::scrapers::parse_site_file(
      R"({"name": "plain", "feed": "https://plain.example/rss"})", "sites/plain.json"));
  r->add(newsdesk::scrapers::parse_site_file(R"({"name": "page", "url": "https://page.example/"})",
                                             "sites/page.json"));
  const std::shared_ptr<const newsdesk::scrapers::registry> registry = std::move(r);
  auto sites = resolve_sites(config(), registry);
  REQUIRE(sites.size() == 3);
  std::map<std::string, site_config> by_name;
  for (const auto& s : sites)
    by_name[s.name] = s;
  CHECK(by_name["blog"].url == "https://feeds.example/blog.xml");
  CHECK(by_name["blog"].renderer == "feed");
  CHECK(by_name["blog"].home == "https://blog.example/");
  CHECK(by_name["plain"].home == "https://plain.example/rss"); // no home given: the feed
  CHECK(by_name["page"].home == "https://page.example/");
}

TEST_CASE("config.example.json lists every setting of the table, each at its default") {
  std::ifstream in(std::string(NEWSDESK_SOURCE_DIR) + "/config.example.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  config cfg;
  apply_config_json(cfg, text.str(), "config.example.json");
  const auto example = nlohmann::json::parse(text.str());
  for (const auto* row : config_table().rows()) {
    CAPTURE(row->path);
    std::string pointer = "/" + row->path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    REQUIRE_MESSAGE(example.contains(nlohmann::json::json_pointer(pointer)),
                    "config.example.json lacks " << row->path);
    // The example lists the shipped sites (unset means all of them) and shows an alert (disabled:
    // the default is none).
    if (row->path != "sites" && row->path != "alerts")
      CHECK(example.at(nlohmann::json::json_pointer(pointer)) ==
            row->get(static_cast<const void*>(&config_defaults())));
  }
  // And nothing else: every key it has is a setting (apply_config_json refused none above).
  auto loaded = config_to_json(cfg);
  loaded.erase("sites");
  loaded.erase("alerts");
  auto defaults = config_to_json(config_defaults());
  defaults.erase("alerts");
  CHECK(loaded == defaults);
  // The example shows every shipped site: the C++ scrapers and the site files in sites/.
  auto shipped = std::make_shared<newsdesk::scrapers::registry>();
  newsdesk::scrapers::register_builtin_scrapers(*shipped);
  newsdesk::scrapers::load_site_folder(std::string(NEWSDESK_SOURCE_DIR) + "/sites", *shipped);
  const auto sites = resolve_sites(cfg, shipped);
  CHECK(sites.size() == shipped->size());
  // Its alert is valid, and disabled.
  CHECK(resolve_alerts(cfg, sites).empty());
}

TEST_CASE("every config key has an environment variable, in the file's units") {
  fake_env env;
  bool help = false;
  env.vars = {{"NEWSDESK_REFRESH_INTERVAL", "600"},
              {"NEWSDESK_REFRESH_JITTER", "0.25"},
              {"NEWSDESK_HTTP_READ_TIMEOUT", "2.5"},
              {"NEWSDESK_HTTP_MAX_CONNECTIONS", "50"},
              {"NEWSDESK_BROKER_PORT", "25001"},
              {"NEWSDESK_BROKER_SLOW_CONSUMER", "disconnect"},
              {"NEWSDESK_BROKER_WRITE_DEADLINE_MS", "2500"},
              {"NEWSDESK_ACCESS_LOG", "off"},
              {"NEWSDESK_METRICS", "false"},
              {"NEWSDESK_STORE_PATH", ":memory:"},
              {"NEWSDESK_SITES", "cnn, aljazeera"}};
  auto cfg = load_config({}, env.fn(), help);
  CHECK(cfg.refresh.interval == std::chrono::seconds(600));
  CHECK(cfg.refresh.jitter == 0.25);
  CHECK(cfg.http.read_timeout == std::chrono::milliseconds(2500));
  CHECK(cfg.http.max_connections == 50);
  CHECK(cfg.broker.port == 25001);
  CHECK(cfg.broker.slow_consumer == newsdesk::broker::slow_consumer_policy::disconnect);
  CHECK(cfg.broker.write_deadline == std::chrono::milliseconds(2500));
  CHECK_FALSE(cfg.access_log);
  CHECK_FALSE(cfg.metrics);
  CHECK(cfg.store_path == ":memory:");
  REQUIRE(cfg.sites);
  CHECK(*cfg.sites == nlohmann::json{"cnn", "aljazeera"});

  // Each setting can be set this way: the variable changes the value.
  for (const auto* row : config_table().rows()) {
    const auto value = row->get(static_cast<const void*>(&config_defaults()));
    CAPTURE(row->path);
    if (row->path == "log_level" || row->path == "log_target" ||
        row->path == "broker.slow_consumer" || row->path == "renderer" ||
        row->path.ends_with("address") || row->path == "sites")
      continue; // enumerations, addresses and the list: covered above and by the next test case
    env.vars = {{env_name(row->path), value.is_string() ? value.get<std::string>() + "x" : "1"}};
    if (value.is_boolean())
      env.vars.begin()->second = value.get<bool>() ? "false" : "true";
    try {
      auto changed = config_table().to_json(load_config({}, env.fn(), help));
      CHECK(changed.flatten() != config_to_json(config_defaults()).flatten());
    } catch (const config_error& e) {
      // A value out of range still proves the variable is read: the message names it (or the
      // key, for URLs checked after every source is read).
      std::string message = e.what();
      CHECK((message.find(env_name(row->path)) == 0 || message.find(row->path) == 0));
    }
  }

  env.vars = {{"NEWSDESK_REFRESH_INTERVAL", "soon"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help),
                       doctest::Contains("NEWSDESK_REFRESH_INTERVAL: expected a number"),
                       config_error);
  env.vars = {{"NEWSDESK_REFRESH_INTERVAL", "0.1"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help),
                       doctest::Contains("NEWSDESK_REFRESH_INTERVAL: refresh.interval: expected "
                                         "seconds"),
                       config_error);
  env.vars = {{"NEWSDESK_TLS_VERIFY", "maybe"}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help),
                       doctest::Contains("NEWSDESK_TLS_VERIFY: expected true or false"),
                       config_error);
  env.vars = {{"NEWSDESK_SITES", "[\"cnn\""}};
  CHECK_THROWS_WITH_AS(load_config({}, env.fn(), help), doctest::Contains("NEWSDESK_SITES"),
                       config_error);
  // Flags come after the variables.
  env.vars = {{"NEWSDESK_STORE_PATH", "a.db"}};
  CHECK(load_config({}, env.fn(), help).store_path == "a.db");
  CHECK(load_config({"--store", "c.db"}, env.fn(), help).store_path == "c.db");
}

TEST_CASE("config_to_json reads back as the same configuration") {
  auto cfg = from_json(R"({"port": 9001, "refresh": {"interval": 42.5, "retries": 1},
                           "http": {"read_timeout": 1.25}, "broker": {"port": 25009},
                           "log_level": "warn", "log_target": "stderr", "renderer": "direct",
                           "sites": ["cnn"]})");
  auto printed = config_to_json(cfg);
  CHECK(printed.at("refresh").at("interval") == 42.5);
  CHECK(printed.at("log_level") == "warn");
  config again;
  apply_config_json(again, printed.dump(), "printed.json");
  CHECK(config_to_json(again) == printed);
  auto sites = sites_to_json(resolve_sites(cfg, builtins()));
  REQUIRE(sites.size() == 1);
  CHECK(sites[0].at("scraper") == "cnn");
  CHECK(sites[0].at("interval") == 42.5);
  printed["sites"] = sites;
  apply_config_json(again, printed.dump(), "printed.json");
  CHECK(sites_to_json(resolve_sites(again, builtins())) == sites);
}

TEST_CASE("an unknown flag is refused with the nearest known flag") {
  bool help = false;
  CHECK_THROWS_WITH_AS(load_config({"--prot", "80"}, {}, help),
                       "unknown option --prot (did you mean --port?)", config_error);
  CHECK_THROWS_WITH_AS(load_config({"--splash_url=http://s:8050"}, {}, help),
                       "unknown option --splash_url (did you mean --splash-url?)", config_error);
  CHECK_THROWS_WITH_AS(load_config({"--print-config=yes"}, {}, help),
                       doctest::Contains("--print-config: takes no value"), config_error);
  CHECK(load_config({"--print-config"}, {}, help).print_config);
}

TEST_CASE("an unknown NEWSDESK_ variable is a warning naming it, not an error") {
  bool help = false;
  environment env{{"NEWSDESK_STORE", "old.db"},
                  {"NEWSDESK_PORT", "9000"},
                  {"NEWSDESK_EMPTY", ""}, // cleared: not set at all
                  {"HOME", "/root"}};
  auto cfg = load_config({}, env, help);
  CHECK(cfg.port == 9000);
  CHECK(cfg.store_path == config_defaults().store_path);
  REQUIRE(cfg.warnings.size() == 1);
  CHECK(cfg.warnings[0] ==
        "unknown environment variable NEWSDESK_STORE ignored (did you mean NEWSDESK_STORE_PATH?)");
  CHECK(load_config({}, {{"NEWSDESK_CONFIG", ""}}, help).warnings.empty());
}

TEST_CASE("every setting has an environment name, a help line and, in --help, its default") {
  const auto text = usage();
  std::set<std::string> names;
  for (const auto* row : config_table().rows()) {
    CAPTURE(row->path);
    CHECK_FALSE(row->help.empty());
    const auto name = env_name(row->path);
    CHECK(name.starts_with("NEWSDESK_"));
    CHECK(names.insert(name).second); // one name per setting
    CHECK(text.find(name) != std::string::npos);
    if (!row->flag.empty())
      CHECK(text.find("--" + row->flag) != std::string::npos);
  }
  CHECK(env_name("refresh.retry_base") == "NEWSDESK_REFRESH_RETRY_BASE");
  CHECK(env_name("broker.port") == "NEWSDESK_BROKER_PORT");
  CHECK(text.find("NEWSDESK_SPLASH_URL or SPLASH_URL") != std::string::npos);
  CHECK(text.find("--broker-listen") != std::string::npos);
  CHECK(text.find("[default 2 seconds; from 0.01 to 3600]") != std::string::npos);
}

TEST_CASE("a value out of range is refused with its key path and the range") {
  CHECK_THROWS_WITH_AS(
      from_json(R"({"refresh": {"retry_base": 5000}})"),
      "test.json: refresh.retry_base: expected seconds from 0.01 to 3600, got 5000", config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"broker": {"read_chunk_bytes": 10}})"),
                       "test.json: broker.read_chunk_bytes: expected bytes at least 4096, got 10",
                       config_error);
  bool help = false;
  CHECK_THROWS_WITH_AS(load_config({"--threads", "1000"}, {}, help),
                       "--threads: threads: expected a whole number at most 256, got 1000",
                       config_error);
  CHECK_THROWS_WITH_AS(load_config({}, {{"NEWSDESK_REFRESH_MAX_BACKOFF_FACTOR", "0"}}, help),
                       "NEWSDESK_REFRESH_MAX_BACKOFF_FACTOR: refresh.max_backoff_factor: expected "
                       "a whole number from 1 to 1024, got 0",
                       config_error);
}

TEST_CASE("SPLASH_URL is an alias of NEWSDESK_SPLASH_URL, which wins when both are set") {
  bool help = false;
  CHECK(
      load_config({}, {{"SPLASH_URL", "http://a:8050"}}, help).renderers.of<splash_options>().url ==
      "http://a:8050");
  CHECK(load_config({}, {{"SPLASH_URL", "http://a:8050"}, {"NEWSDESK_SPLASH_URL", "http://b:8050"}},
                    help)
            .renderers.of<splash_options>()
            .url == "http://b:8050");
  CHECK(load_config({"--splash-url", "http://c:8050"}, {{"SPLASH_URL", "http://a:8050"}}, help)
            .renderers.of<splash_options>()
            .url == "http://c:8050");
  CHECK(load_config({}, {{"BROWSERLESS_URL", "http://b:3000"}}, help)
            .renderers.of<browserless_options>()
            .url == "http://b:3000");
  CHECK(load_config({}, {{"SPLASH_URL", "http://a:8050"}}, help).warnings.empty());
}

TEST_CASE("--broker-listen sets the broker's address and port, or turns it off") {
  bool help = false;
  auto cfg = load_config({"--broker-listen", "127.0.0.2:0"}, {}, help);
  CHECK(cfg.broker.address == "127.0.0.2");
  CHECK(cfg.broker.port == 0);
  CHECK(cfg.broker.enabled);
  CHECK_FALSE(load_config({"--broker-listen=off"}, {}, help).broker.enabled);
  CHECK_THROWS_WITH_AS(load_config({"--broker-listen", "nowhere"}, {}, help),
                       doctest::Contains("--broker-listen: "), config_error);
}

TEST_CASE("the config file named by --config is where the configuration came from") {
  bool help = false;
  CHECK(load_config({}, {}, help).source.empty());
  const std::string path = "config_source_test.json";
  std::ofstream(path) << R"({"port": 9300})";
  auto cfg = load_config({"--config", path}, {}, help);
  CHECK(cfg.source == path);
  CHECK(cfg.port == 9300);
  std::remove(path.c_str());
}

TEST_CASE("descriptor budgets are derived from the open-file limit, and refused when they cannot "
          "fit") {
  config cfg; // http.max_connections and http.max_streams 0: derived
  cfg.broker.enabled = true;
  cfg.broker.max_connections = 16000; // given: taken as it is
  fit_descriptor_budget(cfg, 20000);
  const std::size_t left =
      20000 - reserved_descriptors - body_descriptors - cfg.http.max_refusing - 16000;
  CHECK(cfg.broker.max_connections == 16000);
  CHECK(cfg.http.max_connections == left * 2 / 3);
  CHECK(cfg.http.max_streams == left / 3);
  CHECK(cfg.http.max_connections + cfg.http.max_streams + cfg.http.max_refusing + 16000 +
            reserved_descriptors + body_descriptors <=
        20000);

  // The broker's default (16,384) is cut to a third of what is left, so /events has room for a
  // page's readers: 2,000 readers on three instances fit with the defaults.
  config defaults;
  defaults.broker.enabled = true;
  fit_descriptor_budget(defaults, 20000);
  const std::size_t rest = 20000 - reserved_descriptors - body_descriptors - 256;
  CHECK(defaults.broker.max_connections == rest / 3);
  CHECK(defaults.http.max_streams >= 2000);
  CHECK(defaults.http.max_connections + defaults.http.max_streams + 256 +
            defaults.broker.max_connections + reserved_descriptors + body_descriptors <=
        20000);

  config roomy;
  fit_descriptor_budget(roomy, 1 << 20); // derived budgets stop at their own caps
  CHECK(roomy.http.max_connections == 10'000);
  CHECK(roomy.http.max_streams == 4'096);

  config given;
  given.http.max_connections = 30'000;
  given.broker.enabled = false;
  CHECK_THROWS_WITH_AS(fit_descriptor_budget(given, 20000),
                       doctest::Contains("may open 20000 (RLIMIT_NOFILE)"), config_error);
  given.http.max_connections = 5'000;
  fit_descriptor_budget(given, 20000);
  CHECK(given.http.max_connections == 5'000);
  CHECK(given.http.max_streams == 4'096);

  config tiny; // a limit of 1,024 with the broker's default cannot fit
  tiny.broker.enabled = true;
  CHECK_THROWS_WITH_AS(fit_descriptor_budget(tiny, 1024),
                       doctest::Contains("broker.max_connections"), config_error);
}
