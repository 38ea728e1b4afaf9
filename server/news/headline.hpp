// The headline and site-status types every output reads: the page, the JSON and feed
// representations, live events and metrics. Plain values, no behaviour beyond their JSON form.
#pragma once

#include "scrapers/scraper.hpp"
#include "server/core/failure.hpp"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace newsdesk::server {

// One headline as the outputs show it.
struct news_item {
  scrapers::headline headline;
  std::int64_t id = 0;            // the store's row id: stable, increasing
  std::int64_t first_seen_ms = 0; // unix ms
  bool is_new = false;            // first seen in the site's latest refresh (not its first)
  std::size_t rank = 0;           // its place on its site's page (0: the site's top story)
};

// How one site stands.
struct site_report {
  std::string name;
  std::string display_name;
  std::string colour;
  std::string url;
  std::string renderer;
  bool ok = false;    // the last refresh succeeded
  bool stale = false; // the last refresh failed, older headlines are shown
  std::string error;  // short notice when !ok, e.g. "Splash timed out after 30 s"
  failure_kind failure = failure_kind::none; // what kind of failure `error` tells of
  // Set when ok but the operator should act: "found by detection; the selectors matched nothing".
  std::string note;
  std::size_t headline_count = 0;
  std::chrono::milliseconds elapsed{0}; // the last refresh: render + parse
  std::int64_t last_success_ms = 0;     // 0: never
  std::int64_t last_attempt_ms = 0;     // 0: never
  // The snapshot version in which this site's headlines or state last changed: a view of this
  // site alone built for that version is still the right one in any later snapshot.
  std::uint64_t version = 0;
};

struct news_snapshot {
  std::vector<site_report> sites; // in config order
  // Newest first (first_seen_ms descending); headlines first seen together keep their site's
  // order (id ascending).
  std::vector<news_item> headlines;
  std::chrono::system_clock::time_point generated_at;
  std::uint64_t version = 0; // increases with every change (and only then)
  // Every site has been tried, or some site has headlines: views of this snapshot need not wait
  // for a cold start (news_service::when_ready).
  bool ready = false;
  // Set while the shared store cannot be reached: what is shown may be out of date.
  std::string notice;
  // A view cut to one page: the before= cursor of the next page ("" when this is the last).
  std::string next;
};

// RFC 3339 UTC time to the second, e.g. "2026-11-22T09:35:25Z"; iso8601_ms to the millisecond,
// "2026-11-22T09:35:25.042Z" (pages order live arrivals by it).
std::string iso8601(std::chrono::system_clock::time_point t);
std::string iso8601_ms(std::int64_t unix_ms);

// A headline's one JSON shape, shared by /news.json, the broker payload and /events:
// {"id","title","url","site","first_seen","rank","new"} (first_seen as iso8601_ms gives it).
void to_json(nlohmann::json& j, const news_item& item);

// A refresh's new headlines as the broker carries them to /events and other subscribers: a JSON
// array of the shape above. Invalid UTF-8 in scraped text is replaced, never thrown on.
std::string headlines_json(const std::vector<news_item>& items);

} // namespace newsdesk::server
