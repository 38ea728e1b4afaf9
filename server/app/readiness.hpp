// GET /readyz: whether this instance should get traffic. Decided in one pure function so the
// rules can be tested without a server; the route only gathers the inputs.
#pragma once

#include "server/news/headline.hpp"
#include "server/news/site_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace newsdesk::server {

struct readiness {
  bool ready = false;
  std::size_t sites_fresh = 0;      // sites whose last success is within their allowed age
  std::size_t sites = 0;            // sites configured now
  std::vector<std::string> reasons; // why not ready; empty when ready

  // {"ready","sites_fresh","sites","reasons"}
  std::string to_json() const;
};

// Ready when the store answers (`store_error` empty) and, unless no site is configured, at
// least one configured site succeeded within interval * (1 + jitter) + its render timeout of
// `now_ms`. Sites in `snapshot` that are no longer configured (a reload removed them) are
// ignored.
readiness decide_readiness(const news_snapshot& snapshot,
                           const std::vector<site_config>& configured, double jitter,
                           std::int64_t now_ms, const std::optional<std::string>& store_error);

} // namespace newsdesk::server
