// A site as the news service refreshes it, and the refresh policy shared by every site.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace newsdesk::scrapers {
class scraper;
} // namespace newsdesk::scrapers

namespace newsdesk::server {

// One site as configured: a scraper plus how and where to fetch it.
struct site_config {
  std::string name; // unique on the page; defaults to the scraper's name
  // Shares ownership of the registry it came from, so a reload can replace the registry while
  // a refresh with the old scraper is still parsing.
  std::shared_ptr<const scrapers::scraper> scraper;
  std::string display_name;
  std::string url;    // what is fetched: the page, or a feed site's feed
  std::string colour; // "#rgb" or "#rrggbb"
  std::string renderer;
  std::chrono::milliseconds wait{};
  std::chrono::milliseconds timeout{};
  std::chrono::milliseconds interval{}; // between background refreshes
  std::string home;    // the site's home page for people: `url`, or a feed site file's "url"
  std::string section; // the page's section it is listed in (a chip); empty: none
};

// The background refresh ("refresh": {...} in the config file; durations in seconds there).
struct refresh_settings {
  // Between refreshes of one site. News front pages change every few minutes; 5 minutes keeps
  // the page fresh at 12 renders per site an hour.
  std::chrono::milliseconds interval{300'000};
  // Each wait is the interval +/- this fraction at random, so sites do not refresh in lockstep.
  double jitter = 0.1;
  // Renders in flight at once, across all sites. Match Splash's --slots (5 in our compose
  // file): more would only queue inside Splash, where queueing time counts against timeouts.
  std::size_t max_concurrent_renders = 5;
  // Retries of one refresh after a transient failure, waiting a random time in
  // [0, min(retry_max, retry_base * 2^attempt)] ("full jitter").
  int retries = 3;
  std::chrono::milliseconds retry_base{2'000};
  std::chrono::milliseconds retry_max{60'000};
  // After a refresh fails for good, a site waits interval * 2^(failures in a row), at most this
  // factor, so a site that is down costs few renders.
  int max_backoff_factor = 8;
  // On a cold start (nothing stored yet) /news waits this long for the first refreshes.
  std::chrono::milliseconds cold_start_wait{15'000};
  // POST /api/refresh starts a site's refresh at most this often.
  std::chrono::milliseconds manual_min_interval{10'000};
  // Headlines not seen for this long are deleted from the store.
  std::chrono::milliseconds retention{30LL * 24 * 3600 * 1000};
  // Shared stores (several instances): how long a claim on a site's refresh lasts without
  // renewal. The render renews it every third of this; an instance that dies mid-render is
  // taken over when it runs out.
  std::chrono::milliseconds lease{15'000};
  // CPU time one page may take to parse and scrape. Gumbo cannot be stopped part-way, so this
  // is checked when the parse ends (the input bounds in scrapers/dom.hpp cap how long that can
  // be): a page over it gives its site a notice instead of headlines.
  std::chrono::milliseconds parse_cpu_budget{2'000};
  // Bytes of rendered pages waiting for a parse thread (or being parsed) beyond which no render
  // starts: pages are fetched when there is room to parse them. 32 MiB holds about 60 average
  // front pages (0.5 MB), seconds of work for the parse threads, so they never starve while the
  // next renders run; with the render slots' pages in flight on top, this bounds a refresh
  // cycle's memory whatever the number of sites (3,000 heavy pages held at once were 1.5 GB).
  std::size_t max_parse_queue_bytes = 32 * 1024 * 1024;
};

} // namespace newsdesk::server
