// The headline store: every headline newsdesk has seen, kept in an SQLite file so /news can
// answer from it at once (also right after a restart) while refreshes run in the background.
//
// What it keeps: one row per (site, url) with the latest title and the first-seen and last-seen
// times of that link, and one row per site with its last attempt, last success and last error.
// A row's id is assigned when the link is first seen, only grows (ids are never reused, even
// after pruning), and so doubles as the SSE event id: since(id) replays what came later.
//
// Threads: every method may be called from any thread at once; calls are serialised by one
// mutex around one connection and block on disk I/O (and on another process holding the file's
// write lock, up to busy_timeout), so call them off the network threads.
//
// Errors: every SQLite failure (cannot open, not a database, disk full, locked past the busy
// timeout, a schema newer than this program) throws store_error, whose message names the file
// and says what failed. A failed record_refresh changes nothing (one transaction).
#pragma once

#include "scrapers/scraper.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct stored_headline {
  std::int64_t id = 0; // > 0, ascending in first-seen order
  std::string site;
  std::string title; // the latest title seen for this link
  std::string url;
  std::int64_t first_seen_ms = 0; // Unix milliseconds of the refresh that first found it
  std::int64_t last_seen_ms = 0;  // Unix milliseconds of the latest refresh that found it

  friend bool operator==(const stored_headline&, const stored_headline&) = default;
};

struct site_state {
  std::string site;
  std::int64_t last_attempt_ms = 0; // latest record_refresh or record_failure; 0: none
  std::int64_t last_success_ms = 0; // latest record_refresh; 0: never succeeded
  std::string last_error;           // from the latest attempt; empty when it succeeded

  friend bool operator==(const site_state&, const site_state&) = default;
};

// Limits on what one caller can put into the store. Scraped input comes from pages we do not
// control; these keep a hostile or broken page from bloating the file or a refresh's
// transaction. The defaults are far above what real front pages show.
struct store_limits {
  // Longer titles are cut at a UTF-8 character boundary: a headline is a line, not an article.
  static constexpr std::size_t max_title_bytes = 1000;
  // Longer URLs are skipped (a cut URL is a broken link); 2048 is what browsers and search
  // engines reliably handle.
  static constexpr std::size_t max_url_bytes = 2048;
  // Headlines beyond this in one refresh are ignored; CNN's front page has about 300.
  static constexpr std::size_t max_headlines_per_refresh = 2000;
  // Error notices are cut to this; they are one-line summaries.
  static constexpr std::size_t max_error_bytes = 1000;
  // Site names come from the config ([a-z0-9_-]+); longer ones are refused (store_error).
  static constexpr std::size_t max_site_bytes = 100;
  // Distinct sites the store accepts; a new site beyond this is refused (store_error). A
  // config lists tens of sites; this only stops a runaway caller.
  static constexpr std::size_t max_sites = 1000;
  // since() returns at most this many rows, whatever `limit` asks.
  static constexpr std::size_t max_since_rows = 10000;
};

class headline_store {
 public:
  // The schema this program writes (PRAGMA user_version). Files at a lower version are
  // migrated on open; files at a higher one are refused.
  static constexpr int schema_version = 1;

  // Opens or creates the store at `file` (":memory:" for a private in-memory store) and brings
  // its schema to schema_version in one transaction. Sets WAL mode (files only), a 5 s busy
  // timeout and synchronous=NORMAL (a power cut may lose the last refresh, never corrupt).
  // Throws store_error naming the file when it cannot be opened or created, is not an SQLite
  // database, holds tables this program did not create, or has a newer schema version.
  static headline_store open(const std::filesystem::path& file);

  // Movable, not copyable; a moved-from store may only be destroyed or assigned to.
  headline_store(headline_store&&) noexcept;
  headline_store& operator=(headline_store&&) noexcept;
  ~headline_store();

  // Records one successful refresh of `site` that found `found` (each headline's own `site`
  // field is ignored; `site` is authoritative), in ONE transaction: links not seen before get
  // a new row with first_seen = last_seen = now_ms; known links get last_seen = now_ms and the
  // title just seen. The site's last success and attempt become now_ms and its error clears.
  // A URL listed twice counts once (the first listing). Limits: see store_limits.
  // Returns the new rows, ids ascending. O(n log N) for n headlines, N rows stored.
  std::vector<stored_headline> record_refresh(std::string_view site,
                                              const std::vector<scrapers::headline>& found,
                                              std::int64_t now_ms);

  // Records a failed refresh of `site`: last attempt = now_ms, last error = `error`. The
  // site's current headlines are left as they were (the page keeps showing them).
  void record_failure(std::string_view site, std::string_view error, std::int64_t now_ms);

  // What `site` showed on its latest successful refresh, in the order the site listed them
  // then. Headlines that have since disappeared from the site are not current but stay in the
  // history (since()) until pruned. Empty for a site never refreshed. O(k log N).
  std::vector<stored_headline> current(std::string_view site) const;

  // Every site that has been recorded, by name.
  std::vector<site_state> sites() const;

  // Rows whose id is greater than `after_id`, ids ascending, at most min(limit,
  // max_since_rows): the headlines first seen after `after_id` (SSE replay after
  // Last-Event-ID). Pruned rows are gone. O(limit log N).
  std::vector<stored_headline> since(std::int64_t after_id, std::size_t limit) const;

  // The largest id ever assigned (0 for a store that never had a row). Never decreases, even
  // when pruning deletes the newest rows.
  std::int64_t last_id() const;

  // Deletes history: rows whose last_seen_ms < older_than_ms, except rows that are current
  // for their site (what a site showed last stays servable however old, so a restart after a
  // long stop still has something to show). Returns how many rows were deleted.
  std::size_t prune(std::int64_t older_than_ms);

  // The file this store was opened from, as given to open().
  const std::filesystem::path& file() const;

 private:
  struct impl;
  explicit headline_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace newsdesk::server
