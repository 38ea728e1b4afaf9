#include "server/app/readiness.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace newsdesk::server {

std::string readiness::to_json() const {
  nlohmann::json body = {
      {"ready", ready}, {"sites_fresh", sites_fresh}, {"sites", sites}, {"reasons", reasons}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

readiness decide_readiness(const news_snapshot& snapshot,
                           const std::vector<site_config>& configured, double jitter,
                           std::int64_t now_ms, const std::optional<std::string>& store_error) {
  readiness out;
  out.sites = configured.size();
  if (store_error)
    out.reasons.push_back("store: " + *store_error);
  for (const auto& report : snapshot.sites) {
    auto site = std::find_if(configured.begin(), configured.end(),
                             [&](const site_config& s) { return s.name == report.name; });
    if (site == configured.end())
      continue;
    // A refresh may start up to interval * (1 + jitter) after the last one and take up to the
    // render timeout: only older than that is the site late.
    auto allowed =
        static_cast<std::int64_t>(static_cast<double>(site->interval.count()) * (1 + jitter)) +
        site->timeout.count();
    if (report.last_success_ms && now_ms - report.last_success_ms <= allowed)
      ++out.sites_fresh;
  }
  if (!configured.empty() && out.sites_fresh == 0)
    out.reasons.push_back("no site has refreshed within its interval yet");
  out.ready = out.reasons.empty();
  return out;
}

} // namespace newsdesk::server
