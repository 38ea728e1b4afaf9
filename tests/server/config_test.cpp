#include "server/config.hpp"

#include "scrapers/registry.hpp"

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
                       doctest::Contains("test.json.prot: unknown key"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": "80"})"),
                       doctest::Contains("test.json.port: expected a number"), config_error);
  CHECK_THROWS_WITH_AS(from_json(R"({"port": 99999})"),
                       doctest::Contains("test.json.port: out of range"), config_error);
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
                       doctest::Contains("test.json.broker"), config_error);
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
  fails(R"({"sites": [{"scraper": "cnn", "wait": 5, "timeout": 2}]})", "sites[0].wait");
  fails(R"({"sites": [{"scraper": "cnn", "renderer": "splash"}]})", "no splash_url or SPLASH_URL");
  fails(R"({"splash_url": "http://s:8050", "sites": [{"scraper": "cnn", "timeout": 120}]})",
        "max-timeout");
  fails(R"({"sites": [{"scraper": "cnn", "name": "CNN!"}]})", "sites[0].name");
  fails(R"({"sites": [{"scraper": "cnn", "frequency": 3}]})", "sites[0].frequency: unknown key");
  fails(R"({"sites": [42]})", "sites[0]: expected a scraper name or an object");
}

TEST_CASE("config.example.json loads, and its values are the defaults") {
  std::ifstream in(std::string(NEWSDESK_SOURCE_DIR) + "/config.example.json");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  config cfg;
  apply_config_json(cfg, text.str(), "config.example.json");
  config defaults;
  CHECK(cfg.address == defaults.address);
  CHECK(cfg.port == defaults.port);
  CHECK(cfg.threads == defaults.threads);
  CHECK(cfg.default_wait == defaults.default_wait);
  CHECK(cfg.default_timeout == defaults.default_timeout);
  CHECK(cfg.splash_max_timeout == defaults.splash_max_timeout);
  CHECK(cfg.http.max_header_bytes == defaults.http.max_header_bytes);
  CHECK(cfg.http.max_body_bytes == defaults.http.max_body_bytes);
  CHECK(cfg.http.read_timeout == defaults.http.read_timeout);
  CHECK(cfg.http.write_timeout == defaults.http.write_timeout);
  CHECK(cfg.http.max_connections == defaults.http.max_connections);
  CHECK(cfg.refresh.interval == defaults.refresh.interval);
  CHECK(cfg.refresh.jitter == defaults.refresh.jitter);
  CHECK(cfg.refresh.max_concurrent_renders == defaults.refresh.max_concurrent_renders);
  CHECK(cfg.refresh.retries == defaults.refresh.retries);
  CHECK(cfg.refresh.retry_base == defaults.refresh.retry_base);
  CHECK(cfg.refresh.retry_max == defaults.refresh.retry_max);
  CHECK(cfg.refresh.max_backoff_factor == defaults.refresh.max_backoff_factor);
  CHECK(cfg.refresh.cold_start_wait == defaults.refresh.cold_start_wait);
  CHECK(cfg.refresh.manual_min_interval == defaults.refresh.manual_min_interval);
  CHECK(cfg.refresh.retention == defaults.refresh.retention);
  CHECK(cfg.store_path == defaults.store_path);
  CHECK(cfg.access_log == defaults.access_log);
  CHECK(cfg.metrics == defaults.metrics);
  CHECK(cfg.log_to_stderr == defaults.log_to_stderr);
  CHECK(nlohmann::json(cfg.broker) == nlohmann::json(newsdesk::broker::config{}));
  CHECK(resolve_sites(cfg, builtins()).size() == 2);
}
