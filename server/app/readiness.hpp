// GET /readyz: whether this instance should get traffic. Decided in one pure function so the
// rules can be tested without a server; the route only gathers the inputs.
//
// Readiness answers "should the balancer send this instance requests?", so it fails only on what
// makes this instance unable to serve that the others can. A shared store (PostgreSQL) that is
// down is down for every instance alike: failing readiness then would take the whole cluster out
// of the balancer at once, though each instance can still answer from memory. Such an outage
// leaves the instance ready but *degraded*: it says so here, in /metrics, in its log and on the
// page.
#pragma once

#include "server/news/headline.hpp"
#include "server/news/site_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace newsdesk::server {

struct readiness {
  bool ready = false;
  bool degraded = false;            // ready, but serving from memory while the store is down
  std::size_t sites_fresh = 0;      // sites whose last success is within their allowed age
  std::size_t sites = 0;            // sites configured now
  std::vector<std::string> reasons; // why not ready, or why degraded; empty when neither
  // Sites that look broken (site_report::health), by name, with why. They do not make the
  // instance unready (every instance sees the same site), but an operator reads them here.
  std::vector<std::pair<std::string, std::string>> sites_looking_broken;

  // {"ready","state":"ready"|"degraded"|"unready","sites_fresh","sites","reasons",
  //  "sites_looking_broken":[{"site","reason"}]}
  std::string to_json() const;
};

// What the route found when it asked the store.
struct store_check {
  std::optional<std::string> error; // the store's problem; none when it answered
  // The store is shared by every instance (PostgreSQL), so its outage is every instance's alike,
  // and not a reason to take this one out. A store of this instance's own (SQLite: its file lost,
  // its disk full) is.
  bool shared = false;
};

// Ready when the instance can answer, and at once: its page is built (`views_built`: /news has
// bytes to send, so a request the balancer sends the moment this says 200 is answered from them,
// not after a first build); its store works or, for a shared store that is down, it has
// something in memory to serve (`snapshot.ready`); and, unless no site is configured or the
// shared store is down (no instance can refresh then), at least one configured site succeeded
// within interval * (1 + jitter) + its render timeout of `now_ms`. Sites in `snapshot` that are
// no longer configured (a reload removed them) are ignored.
readiness decide_readiness(const news_snapshot& snapshot,
                           const std::vector<site_config>& configured, double jitter,
                           std::int64_t now_ms, const store_check& store, bool views_built);

} // namespace newsdesk::server
