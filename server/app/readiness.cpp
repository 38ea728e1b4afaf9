#include "server/app/readiness.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace newsdesk::server {

std::string readiness::to_json() const {
  nlohmann::json body = {{"ready", ready},
                         {"state", !ready     ? "unready"
                                   : degraded ? "degraded"
                                              : "ready"},
                         {"sites_fresh", sites_fresh},
                         {"sites", sites},
                         {"reasons", reasons},
                         {"sites_looking_broken", nlohmann::json::array()}};
  for (const auto& [site, reason] : sites_looking_broken)
    body["sites_looking_broken"].push_back({{"site", site}, {"reason", reason}});
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

readiness decide_readiness(const news_snapshot& snapshot,
                           const std::vector<site_config>& configured, double jitter,
                           std::int64_t now_ms, const store_check& store, bool views_built) {
  readiness out;
  out.sites = configured.size();
  bool unready = false;
  const bool shared_outage = store.error && store.shared;
  if (store.error) {
    out.reasons.push_back("store: " + *store.error);
    if (shared_outage)
      out.degraded = true;
    else
      unready = true;
  }
  if (shared_outage && !snapshot.ready) {
    out.reasons.push_back("nothing in memory to serve until the store answers");
    unready = true;
  }
  for (const auto& report : snapshot.sites) {
    auto site = std::find_if(configured.begin(), configured.end(),
                             [&](const site_config& s) { return s.name == report.name; });
    if (site == configured.end())
      continue;
    if (!report.health.empty())
      out.sites_looking_broken.emplace_back(report.name, report.health);
    // A refresh may start up to interval * (1 + jitter) after the last one and take up to the
    // render timeout: only older than that is the site late.
    auto allowed =
        static_cast<std::int64_t>(static_cast<double>(site->interval.count()) * (1 + jitter)) +
        site->timeout.count();
    if (report.last_success_ms && now_ms - report.last_success_ms <= allowed)
      ++out.sites_fresh;
  }
  // Late sites are this instance's fault only while the store takes writes: with a shared store
  // down, every instance's sites grow late together.
  if (!configured.empty() && out.sites_fresh == 0) {
    out.reasons.push_back("no site has refreshed within its interval yet");
    if (!shared_outage)
      unready = true;
  }
  if (!views_built) {
    out.reasons.push_back("the page is being built");
    unready = true;
  }
  out.ready = !unready;
  return out;
}

} // namespace newsdesk::server
