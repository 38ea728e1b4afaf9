#include "server/app/readiness.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace newsdesk::server;

namespace {

site_config configured(std::string name, std::chrono::milliseconds interval,
                       std::chrono::milliseconds timeout) {
  site_config s;
  s.name = std::move(name);
  s.interval = interval;
  s.timeout = timeout;
  return s;
}

site_report succeeded(std::string name, std::int64_t at_ms) {
  site_report r;
  r.name = std::move(name);
  r.ok = true;
  r.last_success_ms = at_ms;
  return r;
}

constexpr std::int64_t now = 1'800'000'000'000;

// One site refreshed every 5 minutes with a 30 s render timeout: allowed 360 s at jitter 0.1.
std::vector<site_config> one_site(std::string name) {
  return {configured(std::move(name), std::chrono::minutes(5), std::chrono::seconds(30))};
}

} // namespace

TEST_CASE("readiness: one site refreshed within interval * (1 + jitter) + timeout is enough") {
  news_snapshot snap;
  snap.sites = {succeeded("a", now - 340'000), succeeded("b", now - 10'000'000)};
  std::vector<site_config> sites = {
      configured("a", std::chrono::minutes(5), std::chrono::seconds(30)),
      configured("b", std::chrono::minutes(5), std::chrono::seconds(30))};
  // a: allowed 300 s * 1.1 + 30 s = 360 s, it is 340 s old; b is hours old.
  auto verdict = decide_readiness(snap, sites, 0.1, now, store_check{}, true);
  CHECK(verdict.ready);
  CHECK(verdict.sites_fresh == 1);
  CHECK(verdict.sites == 2);
  CHECK(verdict.reasons.empty());

  // 21 s later a is past its allowance too.
  verdict = decide_readiness(snap, sites, 0.1, now + 21'000, store_check{}, true);
  CHECK_FALSE(verdict.ready);
  CHECK(verdict.sites_fresh == 0);
  CHECK(verdict.reasons ==
        std::vector<std::string>{"no site has refreshed within its interval yet"});
}

TEST_CASE("readiness: not ready until the page is built, whatever else is fine") {
  news_snapshot snap;
  snap.ready = true;
  snap.sites = {succeeded("a", now - 1'000)};
  auto verdict = decide_readiness(snap, one_site("a"), 0.1, now, store_check{}, false);
  CHECK_FALSE(verdict.ready);
  CHECK(verdict.reasons == std::vector<std::string>{"the page is being built"});
  CHECK(decide_readiness(snap, one_site("a"), 0.1, now, store_check{}, true).ready);
  // Degraded on a shared store that is down, but only with a page to answer from.
  CHECK_FALSE(
      decide_readiness(snap, one_site("a"), 0.1, now, store_check{"down", true}, false).ready);
}

TEST_CASE("readiness: a site that never succeeded is not fresh, and no site at all is ready") {
  news_snapshot snap;
  snap.sites = {succeeded("a", 0)};
  auto sites = one_site("a");
  CHECK_FALSE(decide_readiness(snap, sites, 0.1, now, store_check{}, true).ready);
  // Nothing configured: nothing can be late, so the instance serves (an empty page).
  CHECK(decide_readiness(news_snapshot{}, {}, 0.1, now, store_check{}, true).ready);
}

TEST_CASE("readiness: a failing store of its own makes it unready whatever the sites, naming the "
          "error") {
  news_snapshot snap;
  snap.sites = {succeeded("a", now)};
  auto verdict =
      decide_readiness(snap, one_site("a"), 0.1, now, store_check{"disk I/O error", false}, true);
  CHECK_FALSE(verdict.ready);
  CHECK(verdict.sites_fresh == 1);
  CHECK(verdict.reasons == std::vector<std::string>{"store: disk I/O error"});
}

TEST_CASE("readiness: a shared store that is down leaves an instance that can answer from memory "
          "ready but degraded, however late its sites grow") {
  news_snapshot snap;
  snap.ready = true;
  snap.sites = {succeeded("a", now - 10'000'000)}; // hours old: no one could write meanwhile
  const store_check down{"could not connect to server", true};
  auto verdict = decide_readiness(snap, one_site("a"), 0.1, now, down, true);
  CHECK(verdict.ready);
  CHECK(verdict.degraded);
  CHECK(verdict.reasons == std::vector<std::string>{"store: could not connect to server",
                                                    "no site has refreshed within its interval "
                                                    "yet"});
  CHECK(nlohmann::json::parse(verdict.to_json()).at("state") == "degraded");
  // With nothing in memory (it started during the outage) it has nothing to serve.
  snap.ready = false;
  verdict = decide_readiness(snap, one_site("a"), 0.1, now, down, true);
  CHECK_FALSE(verdict.ready);
  CHECK(nlohmann::json::parse(verdict.to_json()).at("state") == "unready");
  // The store back, late sites are this instance's own problem again.
  snap.ready = true;
  CHECK_FALSE(decide_readiness(snap, one_site("a"), 0.1, now, store_check{}, true).ready);
}

TEST_CASE("readiness: sites a reload removed do not count, even when fresh") {
  news_snapshot snap;
  snap.sites = {succeeded("gone", now)};
  auto sites = one_site("new");
  auto verdict = decide_readiness(snap, sites, 0.1, now, store_check{}, true);
  CHECK_FALSE(verdict.ready);
  CHECK(verdict.sites_fresh == 0);
  CHECK(verdict.sites == 1);
}

TEST_CASE("readiness: sites that look broken are listed with why, and leave the verdict alone") {
  news_snapshot snap;
  snap.sites = {succeeded("a", now), succeeded("b", now)};
  snap.sites[1].health = "found no headlines in its last 3 refreshes";
  std::vector<site_config> sites = {
      configured("a", std::chrono::minutes(5), std::chrono::seconds(30)),
      configured("b", std::chrono::minutes(5), std::chrono::seconds(30))};
  auto verdict = decide_readiness(snap, sites, 0.1, now, store_check{}, true);
  CHECK(verdict.ready);
  REQUIRE(verdict.sites_looking_broken.size() == 1);
  auto body = nlohmann::json::parse(verdict.to_json());
  CHECK(body.at("sites_looking_broken") ==
        nlohmann::json::array(
            {{{"site", "b"}, {"reason", "found no headlines in its last 3 refreshes"}}}));
}

TEST_CASE("readiness: the JSON body carries the verdict, the counts and the reasons") {
  readiness r;
  r.sites_fresh = 0;
  r.sites = 3;
  r.reasons = {"store: locked"};
  auto body = nlohmann::json::parse(r.to_json());
  CHECK(body.at("ready") == false);
  CHECK(body.at("state") == "unready");
  CHECK(body.at("sites_fresh") == 0);
  CHECK(body.at("sites") == 3);
  CHECK(body.at("reasons") == nlohmann::json::array({"store: locked"}));
}
