#include "server/app/config.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/site_file.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

using namespace newsdesk::server;

namespace {
struct fake_env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

config from_json(const std::string& text) {
  config cfg;
  apply_config_json(cfg, text, "test.json");
  return cfg;
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
  CHECK(cfg.splash_url == "http://splash:8050");

  cfg = load_config({"--port", "9100", "--splash-url=http://other:8050"}, env.fn(), help);
  CHECK(cfg.port == 9100);
  CHECK(cfg.splash_url == "http://other:8050");
  CHECK_FALSE(help);
  load_config({"--help"}, env.fn(), help);
  CHECK(help);
}

TEST_CASE("bad flags and environment values name themselves") {
  fake_env env;
  bool help = false;
  CHECK_THROWS_WITH_AS(load_config({"--port", "70000"}, env.fn(), help),
                       doctest::Contains("--port"), config_error);
  CHECK_THROWS_WITH_AS(load_config({"--colour"}, env.fn(), help), doctest::Contains("--colour"),
                       config_error);
  CHECK_THROWS_WITH_AS(load_config({"--frobnicate", "1"}, env.fn(), help),
                       doctest::Contains("--frobnicate: unknown option"), config_error);
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
                       doctest::Contains("test.json: port: expected a number"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": 99999})"),
                       doctest::Contains("test.json: port: out of range"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": -1})"), doctest::Contains("out of range"),
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
                       doctest::Contains("unknown log level 'loud'"), config_error);
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
  cfg.splash_url = "http://splash:8050";
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
  cfg.splash_url = "http://splash:8050";
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

TEST_CASE("config.example.json has every key, each at its default") {
  std::ifstream in(std::string(NEWSDESK_SOURCE_DIR) + "/config.example.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  config cfg;
  apply_config_json(cfg, text.str(), "config.example.json");
  auto example = nlohmann::json::parse(text.str()).flatten();
  auto defaults = config_to_json(config{}).flatten();
  for (const auto& [key, value] : defaults.items())
    CHECK_MESSAGE(example.contains(key), "config.example.json lacks " << key);
  auto loaded = config_to_json(cfg);
  loaded.erase("sites");
  CHECK(loaded.flatten() == defaults);
  // The example shows every shipped site: the C++ scrapers and the site files in sites/.
  auto shipped = std::make_shared<newsdesk::scrapers::registry>();
  newsdesk::scrapers::register_builtin_scrapers(*shipped);
  newsdesk::scrapers::load_site_folder(std::string(NEWSDESK_SOURCE_DIR) + "/sites", *shipped);
  CHECK(resolve_sites(cfg, shipped).size() == shipped->size());
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

  // Each key the file has can be set this way: the variable changes the value.
  auto defaults = config_to_json(config{}).flatten();
  for (const auto& [pointer, value] : defaults.items()) {
    std::vector<std::string> path;
    for (std::size_t at = 1; at < pointer.size();) {
      auto next = pointer.find('/', at);
      path.push_back(pointer.substr(at, next == std::string::npos ? next : next - at));
      at = next == std::string::npos ? pointer.size() : next + 1;
    }
    CAPTURE(pointer);
    env.vars = {{env_name(path), value.is_string() ? value.get<std::string>() + "x" : "1"}};
    if (value.is_boolean())
      env.vars.begin()->second = value.get<bool>() ? "false" : "true";
    if (path.back() == "log_level" || path.back() == "log_target" ||
        path.back() == "slow_consumer" || path.back() == "renderer" || path.back() == "address")
      continue; // enumerations and addresses: covered above and by the next test case
    try {
      auto changed = config_to_json(load_config({}, env.fn(), help)).flatten();
      CHECK(changed[pointer] != value);
    } catch (const config_error& e) {
      // A value out of range still proves the variable is read: the message names it (or the
      // key, for URLs checked after every source is read).
      std::string message = e.what();
      CHECK((message.find(env_name(path)) == 0 || message.find(path.back()) == 0));
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
  // Short names and flags still come after the variables of the keys.
  env.vars = {{"NEWSDESK_STORE_PATH", "a.db"}, {"NEWSDESK_STORE", "b.db"}};
  CHECK(load_config({}, env.fn(), help).store_path == "b.db");
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
