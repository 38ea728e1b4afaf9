// The shared headline store: PostgreSQL through libpq, for several newsdesk instances (see
// server/news/headline_store.hpp for what a store keeps and cluster_store for the schedule and
// the event log; README "Scaling out" for how it is run).
//
// Connections: a small pool (store_options::max_connections less the one the change listener
// LISTENs on), opened on demand with application_name "newsdesk" and a statement timeout. Every
// round trip is bounded on this side too (store_options::call_timeout, server/store/
// postgres_call.hpp): a frozen server fails the call in that time, the query is cancelled and its
// connection closed. A connection found broken is replaced on its next use. While the database
// does not answer, calls fail at once with the outage's store_error, one at a time trying it
// (so a hung database holds one worker thread, not all of them), and the first call after it
// returns works again. A refused login throws store_login_refused, naming what to check. When
// PostgreSQL has no slot left for another connection, the pool makes do with the ones it has (one
// warn line, calls wait their turn; it tries to grow again after slot_retry); only with none open
// does a call fail, with a message naming the budget and what to change
// (server/store/postgres_refusals.hpp). open() fails the same way.
//
// Commit order: every write takes one transaction-level advisory lock first, so writes are
// serialised; inside it the new headlines' ids, the event's seq and the merge log's seq are taken
// from counters in one row (newsdesk_meta), so they follow commit order with no gaps. Stories are
// assigned under that lock too, after catching up on what other instances committed since.
//
// Schema: versioned migrations (newsdesk_schema) run by open() under a session advisory lock, so
// instances starting together wait for each other instead of racing; a newer schema is refused.
#pragma once

#include "server/news/headline_store.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace newsdesk::server {

class postgres_store final : public headline_store, public cluster_store {
 public:
  // The schema this program writes.
  static constexpr int schema_version = 9;
  // After PostgreSQL refused a connection for want of slots, how long the pool makes do with
  // those it has before it tries to open another: the slots come back when another client
  // leaves, and a try costs a connection attempt and the server a log line.
  static constexpr std::chrono::seconds slot_retry{30};

  // Connects to `url` (postgresql://user:password@host:port/db, or postgres://), migrates the
  // schema and rebuilds the story assignment. Throws store_error naming the database (never the
  // password) and the cause.
  static std::unique_ptr<postgres_store> open(const std::string& url, store_options options = {});

  ~postgres_store() override;

  // headline_store
  refresh_written record_refresh(std::string_view site,
                                 const std::vector<scrapers::headline>& found,
                                 const refresh_record& record) override;
  void record_failure(std::string_view site, std::string_view error,
                      const refresh_record& record) override;
  std::vector<stored_headline> current(std::string_view site) const override;
  std::vector<site_state> sites() const override;
  std::vector<stored_headline> since(std::int64_t after_id, std::size_t limit) const override;
  std::int64_t last_id() const override;
  std::vector<stored_headline> story_headlines(std::int64_t story,
                                               std::size_t limit) const override;
  std::vector<logged_merge> merges_after(std::int64_t after_seq, std::size_t limit) const override;
  std::int64_t last_merge_seq() const override;
  std::size_t prune(std::int64_t older_than_ms) override;
  std::int64_t pruned_through() const override;
  const std::string& epoch() const override;
  void record_icon(const site_icon& icon) override;
  std::optional<site_icon> icon(std::string_view site) const override;
  std::vector<site_icon> icons() const override;
  std::vector<std::string> record_picture(const stored_picture& picture,
                                          std::size_t site_bytes) override;
  std::optional<stored_picture> picture(std::string_view name) const override;
  std::vector<stored_picture> pictures() const override;
  const std::string& location() const override;
  cluster_store* cluster() override { return this; }

  // cluster_store
  claim_result claim(std::string_view site, std::string_view owner, std::chrono::milliseconds lease,
                     bool manual, std::chrono::milliseconds manual_min_interval) override;
  bool renew(std::string_view site, std::string_view owner,
             std::chrono::milliseconds lease) override;
  void release(std::string_view site, std::string_view owner) override;
  bool claim_prune(std::string_view owner, std::chrono::milliseconds period) override;
  void heartbeat(std::string_view owner, std::chrono::milliseconds alive_for) override;
  void leave(std::string_view owner) override;
  std::vector<scheduled_site> scheduled_sites() override;
  std::vector<std::string> release_dead_leases() override;
  std::vector<store_event> events_after(std::int64_t after, std::size_t limit) override;
  std::int64_t last_event_seq() override;
  const std::string& conninfo() const override;
  std::chrono::milliseconds call_timeout() const override;
  std::size_t close_dead_connections() override;
  std::size_t connection_budget() const override;
  void yield_connection() override;

 private:
  struct impl; // postgres_store_impl.hpp
  explicit postgres_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// `url` without its password (for messages and logs).
std::string without_password(const std::string& url);

// True for the locations open_store hands to PostgreSQL.
bool is_postgres_url(std::string_view location);

} // namespace newsdesk::server
