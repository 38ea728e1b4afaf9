// The headline store: every headline newsdesk has seen, kept so /news can answer from it at once
// (also right after a restart) while refreshes run in the background. One interface, two
// backends (server/store/): an SQLite file, the embedded default for one instance, and
// PostgreSQL, which several instances share (open_store picks by the location's form).
//
// What it keeps: one row per (site, url) with the latest title and the first-seen and last-seen
// times of that link, and one row per site with its last attempt, last success and last error.
// A row's id is assigned when the link is first seen, only grows (ids are never reused, even
// after pruning) and follows commit order (a row with a lower id is never committed after one
// with a higher id), so it doubles as the SSE event id: since(id) replays what came later, and a
// reader that remembers the last id it saw never skips a row.
//
// Stories (server/stories/story_assigner.hpp): every row belongs to one story, a story's id being
// the id of the headline that started it. The store owns the assignment: record_refresh assigns
// each new row's story inside the transaction that inserts it, in id order, and applies the
// merges that makes (rows of story `from` move to `into`, and the merge is appended to a log) in
// the same transaction. Known rows keep their story (until a merge moves it). On open, and after
// a write that failed half-way, the assignment's state is rebuilt from the rows first seen within
// its quiet period (the newest store_limits::max_replay_rows at most) and the merge log; in a
// shared store, a write first catches up, under the writer lock, on the rows and merges other
// instances committed since it last looked. Assignment thus happens once, by the writer, in
// commit order; readers only read the stored story.
//
// A shared store (cluster() is not null) also keeps the refresh schedule with its leases and a
// log of committed refreshes, so several instances render each site once per interval and
// every instance hears every change (see cluster_store).
//
// Threads: every method may be called from any thread at once. Calls block on disk or network
// I/O (and on other writers), so call them off the network threads.
//
// Errors: every failure (cannot open or connect, not a database, disk full, locked past the busy
// timeout, a schema newer than this program, the database gone) throws store_error, whose
// message names the store and says what failed. A failed write changes nothing (one
// transaction).
#pragma once

#include "scrapers/scraper.hpp"
#include "server/core/failure.hpp"
#include "server/stories/story_grouping.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server {

class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The database refused this instance's login (a changed password, a role without LOGIN, no
// pg_hba.conf entry): an outage that needs the operator, not time, so it is said as such.
class store_login_refused : public store_error {
 public:
  // `refusal`: the server's words for it ("password authentication failed for user "x"").
  store_login_refused(const std::string& message, std::string refusal)
      : store_error(message)
      , refusal_(std::move(refusal)) {}
  const std::string& refusal() const { return refusal_; }

 private:
  std::string refusal_;
};

// The refused login's words when `e` is a store_login_refused; empty otherwise.
inline std::string login_refusal_of(const std::exception& e) {
  const auto* refused = dynamic_cast<const store_login_refused*>(&e);
  return refused ? refused->refusal() : std::string();
}

// A write refused because the instance no longer holds the site's lease: another instance took
// the site over (this one stalled past its lease), so this result is stale and is dropped.
class lease_lost : public store_error {
 public:
  using store_error::store_error;
};

struct stored_headline {
  std::int64_t id = 0; // > 0, ascending in first-seen (and commit) order
  std::string site;
  std::string title; // the latest title seen for this link
  std::string url;
  std::int64_t first_seen_ms = 0; // Unix milliseconds of the refresh that first found it
  std::int64_t last_seen_ms = 0;  // Unix milliseconds of the latest refresh that found it
  std::int64_t story = 0;         // the story it belongs to now (the id of the row that started it)
  // When its source says it was published (Unix ms), as first found; unset when not given.
  std::optional<std::int64_t> published_ms;
  // Found by its site's first successful refresh: it was on the page before newsdesk looked.
  bool first_look = false;
  // The language it is written in (a code: words::headline_language, from what its source
  // declared and its title), decided when it is first stored; "" in rows stored before
  // languages were (their stories and searches read them as detected from the title).
  std::string language;
  // A line of summary its source gives (a feed item's description), as text; "" when none.
  // Follows the source as its title does.
  std::string summary;
  // The picture its source shows with it (scrapers::headline::image); "" when none. Follows the
  // source as its title does.
  std::string image;

  friend bool operator==(const stored_headline&, const stored_headline&) = default;
};

// One entry of the merge log: story merge.from became merge.into. `seq` grows in commit order.
struct logged_merge {
  std::int64_t seq = 0;
  stories::story_merge merge;

  friend bool operator==(const logged_merge&, const logged_merge&) = default;
};

struct site_state {
  std::string site;
  std::int64_t last_attempt_ms = 0; // latest record_refresh or record_failure; 0: none
  std::int64_t last_success_ms = 0; // latest record_refresh; 0: never succeeded
  std::string last_error;           // from the latest attempt; empty when it succeeded
  std::int64_t last_elapsed_ms = 0; // how long the latest attempt took
  // The latest attempt's kind of failure (none when it succeeded, or when it was written by a
  // version that did not record kinds).
  failure_kind last_failure = failure_kind::none;

  friend bool operator==(const site_state&, const site_state&) = default;
};

// One finished refresh, as record_refresh and record_failure write it.
struct refresh_record {
  std::int64_t now_ms = 0;     // when it finished (Unix milliseconds)
  std::int64_t elapsed_ms = 0; // how long it took
  // Shared stores only. A refresh that ran under a lease names its owner: the write is refused
  // with lease_lost unless that owner still holds the site's lease, and it ends the lease with
  // the site due again `due_again_in` from the database's clock. Empty: no lease (one instance).
  std::string lease_owner;
  std::chrono::milliseconds due_again_in{0};
  failure_kind failure = failure_kind::none; // record_failure: why it failed
};

// Limits on what one caller can put into the store. Scraped input comes from pages we do not
// control; these keep a hostile or broken page from bloating the store or a refresh's
// transaction. The defaults are far above what real front pages show.
struct store_limits {
  // Longer titles are cut at a UTF-8 character boundary: a headline is a line, not an article.
  static constexpr std::size_t max_title_bytes = 1000;
  // Longer URLs are skipped (a cut URL is a broken link); 2048 is what browsers and search
  // engines reliably handle.
  static constexpr std::size_t max_url_bytes = 2048;
  // Headlines beyond this in one refresh are ignored; CNN's front page has about 300.
  static constexpr std::size_t max_headlines_per_refresh = 2000;
  // Summaries are cut to this (scrapers keep less: a line under a story's lead).
  static constexpr std::size_t max_summary_bytes = 1000;
  // A picture's URL longer than this is not kept (scrapers keep at most 2,048 bytes too).
  static constexpr std::size_t max_image_url_bytes = 2048;
  // Error notices are cut to this; they are one-line summaries.
  static constexpr std::size_t max_error_bytes = 1000;
  // Site names come from the config ([a-z0-9_-]+); longer ones are refused (store_error).
  static constexpr std::size_t max_site_bytes = 100;
  // Distinct sites the store accepts; a new site beyond this is refused (store_error). A
  // reader's config lists tens to thousands of sites (one instance serves 3,000: bench/scale);
  // this only stops a runaway caller.
  static constexpr std::size_t max_sites = 10000;
  // since() returns at most this many rows, whatever `limit` asks.
  static constexpr std::size_t max_since_rows = 10000;
  // story_headlines() returns at most this many rows: a story's coverage on one page, far more
  // headlines than there are sites to tell it.
  static constexpr std::size_t max_story_rows = 1000;
  // Rebuilding the story assignment reads at most this many rows (the newest of its quiet
  // period): a day and a half of a few hundred busy sites, and a bounded start whatever the
  // history's size.
  static constexpr std::size_t max_replay_rows = 100000;
};

// How a store is opened. The default is what production runs.
struct store_options {
  // Makes the story grouping the store assigns with (at open, and again after a write that
  // failed half-way). Null: story_assigner with its default limits. A seam for tests.
  stories::grouping_factory make_grouping;
  // PostgreSQL: the connections this instance opens at most, its LISTEN connection included
  // (the rest is the pool its queries share). Every instance's budget must fit in the server's
  // max_connections, less its superuser slots, beside every other client: 5 lets renders,
  // claims, renewals and page reads overlap on a small machine while 10 instances fit in
  // PostgreSQL's default of 100. The SQLite store ignores it.
  std::size_t max_connections = 5;
  // PostgreSQL: how long one round trip (a query, a connection's start, a wait for a free
  // connection) may take before it is given up (the query cancelled, its connection closed) and
  // the call fails with store_error. The server's statement timeout cannot bound a server that
  // is frozen (SIGSTOP, a full disk, a network that drops packets): this does. A few seconds:
  // far above what newsdesk's statements take (milliseconds), short enough that a hung
  // database is told within it. Statements the server bounds itself take longer (migrations,
  // pruning: its statement timeout plus this).
  std::chrono::milliseconds call_timeout{3000};
};

// What one record_refresh committed, so the caller never reads back what it just wrote: the
// site's headlines now current, in the site's order, each with its id, first-seen time and story,
// those of them that this write created (ids ascending), and the story merges it made, in the
// order made. `current`, `added` and the stored rows of every site already show the stories after
// the merges; what a reader holds of other sites' rows must follow them.
struct refresh_written {
  std::vector<stored_headline> current;
  std::vector<stored_headline> added;
  std::vector<stories::story_merge> merges;
};

// A site's icon (favicon) as newsdesk fetched it (server/news/site_icons.hpp), and when it last
// tried. A failed attempt is kept too (empty body, its error), so a restarted instance, or
// another instance of a cluster, does not try again before the day is out.
struct site_icon {
  std::string site;
  std::string content_type;    // of the body; empty when no icon was ever accepted
  std::string body;            // the image's bytes (at most site_icon_limits::max_bytes)
  std::string etag;            // a quoted strong ETag of the body; empty with the body
  std::int64_t checked_ms = 0; // the latest attempt (Unix milliseconds)
  std::string error;           // the latest attempt's failure; empty when it worked

  bool has_image() const { return !body.empty(); }
  friend bool operator==(const site_icon&, const site_icon&) = default;
};

// A picture as newsdesk fetched it for a headline (server/pictures/), by the URL its source
// gave: made smaller and stored once, served at /pictures/NAME. A refused or failed attempt is
// kept too (no body, its error), so the same URL is not fetched again; so is a picture dropped
// to keep its site within its bytes (error says so).
struct stored_picture {
  std::string source;        // the image URL its site gave (the key)
  std::string site;          // the site whose headline named it first
  std::string name;          // "<hash>.webp" (or .jpg): where it is served; empty without a body
  std::string content_type;  // of the body
  std::string body;          // the picture's bytes; empty when refused, failed or dropped
  int width = 0, height = 0; // of the body, in pixels
  std::int64_t tried_ms = 0; // when it was fetched (Unix milliseconds)
  std::string error;         // why there is no body; empty when there is one

  bool has_image() const { return !name.empty(); }
  friend bool operator==(const stored_picture&, const stored_picture&) = default;
};

class cluster_store;

class headline_store {
 public:
  virtual ~headline_store() = default;

  // Records one successful refresh of `site` that found `found` (each headline's own `site`
  // field is ignored; `site` is authoritative), in ONE transaction: links not seen before get
  // a new row with first_seen = last_seen = record.now_ms; known links get last_seen =
  // record.now_ms and the title just seen. The site's last success and attempt become
  // record.now_ms and its error clears. A URL listed twice counts once (the first listing).
  // New rows get their story (see "Stories" above). Limits: see store_limits. Returns what is
  // current now, which rows are new and the merges made.
  virtual refresh_written record_refresh(std::string_view site,
                                         const std::vector<scrapers::headline>& found,
                                         const refresh_record& record) = 0;

  // Records a failed refresh of `site`: last attempt = record.now_ms, last error = `error`. The
  // site's current headlines are left as they were (the page keeps showing them).
  virtual void record_failure(std::string_view site, std::string_view error,
                              const refresh_record& record) = 0;

  // What `site` showed on its latest successful refresh, in the order the site listed them
  // then. Headlines that have since disappeared from the site are not current but stay in the
  // history (since()) until pruned. Empty for a site never refreshed.
  virtual std::vector<stored_headline> current(std::string_view site) const = 0;

  // Every site that has been recorded, by name.
  virtual std::vector<site_state> sites() const = 0;

  // Rows whose id is greater than `after_id`, ids ascending, at most min(limit,
  // max_since_rows): the headlines first seen after `after_id` (SSE replay after
  // Last-Event-ID). Pruned rows are gone.
  virtual std::vector<stored_headline> since(std::int64_t after_id, std::size_t limit) const = 0;

  // The largest id ever assigned (0 for a store that never had a row). Never decreases, even
  // when pruning deletes the newest rows.
  virtual std::int64_t last_id() const = 0;

  // The rows of story `story` (every site's), newest first (first seen; ties by id), at most
  // min(limit, max_story_rows). Empty: no such story (never, or pruned with its headlines).
  virtual std::vector<stored_headline> story_headlines(std::int64_t story,
                                                       std::size_t limit) const = 0;

  // Merge log entries with seq > `after_seq`, ascending, at most `limit`: what a reader holding
  // stories of earlier rows must apply. Entries older than the assignment's quiet period are
  // pruned (no later row can join their stories).
  virtual std::vector<logged_merge> merges_after(std::int64_t after_seq,
                                                 std::size_t limit) const = 0;

  // The newest merge log entry's seq (0: none). Never decreases.
  virtual std::int64_t last_merge_seq() const = 0;

  // Deletes history: rows whose last_seen_ms < older_than_ms, except rows that are current
  // for their site (what a site showed last stays servable however old, so a restart after a
  // long stop still has something to show). A story goes with its last row. Merge log entries
  // made longer than the quiet period before the newest row was first seen go too. Returns how
  // many rows were deleted.
  virtual std::size_t prune(std::int64_t older_than_ms) = 0;

  // The largest id prune() ever deleted (0: none). A reader that has seen every row up to id
  // N missed nothing when N >= pruned_through(); below it, rows it never saw may be gone.
  virtual std::int64_t pruned_through() const = 0;

  // The store's identity: a random name made when the store was created, so an id from
  // another store (or from this one before it was reset) is recognised as such.
  virtual const std::string& epoch() const = 0;

  // Where the store is, for messages: the file, or the PostgreSQL URL without its password.
  virtual const std::string& location() const = 0;

  // Not null when several instances share this store.
  virtual cluster_store* cluster() { return nullptr; }

  // Why the store is no longer what was opened (its file deleted, replaced or cut short while
  // the process runs: writes would go where no restart will find them); empty when it is.
  // Cheap enough for a timer and every /readyz.
  virtual std::string identity_problem() const { return {}; }

  // Records an attempt to fetch `icon.site`'s icon, in one statement: checked_ms and error
  // always; content_type, body and etag only when icon.has_image() (a failed attempt keeps the
  // icon fetched before). The stores here implement it; the default (test stores) keeps nothing.
  virtual void record_icon(const site_icon& icon) { (void)icon; }

  // `site`'s icon record, body included; nullopt when none was ever attempted.
  virtual std::optional<site_icon> icon(std::string_view site) const {
    (void)site;
    return std::nullopt;
  }

  // Every site's icon record without its body (what the page needs to know: which sites have
  // one, and when each was tried).
  virtual std::vector<site_icon> icons() const { return {}; }

  // Records one attempt at `picture.source`, in one transaction, and keeps its site within
  // `site_bytes`: while the site's pictures' bodies add up to more, the oldest lose their body
  // (their record stays, saying so, so they are not fetched again). Returns the sources whose
  // bodies were dropped. The stores here implement it; the default (test stores) keeps nothing.
  virtual std::vector<std::string> record_picture(const stored_picture& picture,
                                                  std::size_t site_bytes) {
    (void)picture;
    (void)site_bytes;
    return {};
  }

  // The picture served as `name`, body included; nullopt when there is none.
  virtual std::optional<stored_picture> picture(std::string_view name) const {
    (void)name;
    return std::nullopt;
  }

  // Every picture record without its body: what was tried, what can be shown.
  virtual std::vector<stored_picture> pictures() const { return {}; }
};

// What a store shared by several instances adds: the refresh schedule and the log of committed
// refreshes. Times are the database's: instances' clocks never need to agree.
//
// The schedule holds, per site, when it is next due and who holds its lease until when. An
// instance claims a due site in a short transaction (FOR UPDATE SKIP LOCKED: instances never
// wait on each other's claims), renders without holding any transaction, renews the lease while
// the render runs, and ends the lease with its write (refresh_record::lease_owner). A lease that
// is not renewed expires, and the site is claimable again: an instance that died is taken over
// within one lease time.
//
// A lease holds while its holder's heartbeat does: an instance that stopped beating loses its
// leases when its heartbeat runs out (seconds), not when the leases do.
//
// Claims spread over the instances: each instance says it is alive (heartbeat) while it runs,
// and a scheduled claim by an instance that has rendered more than its share of the sites lately
// is deferred for share_wait, leaving the due site to an instance with fewer (see claim()).
//
// Every record_refresh and record_failure appends one event (seq, site) in the same
// transaction. Writers are serialised, so seq follows commit order and a reader doing
// "seq > last" never skips one; each commit sends one notification carrying only its seq on
// channel `notify_channel`, for listeners (server/store/change_listener.hpp) to wake up on.
struct store_event {
  std::int64_t seq = 0;
  std::string site;

  friend bool operator==(const store_event&, const store_event&) = default;
};

enum class claim_status {
  claimed,      // this owner holds the lease now
  not_due,      // the site's next refresh is later
  leased,       // another owner holds a live lease (a render is running somewhere)
  rate_limited, // a manual claim too soon after the last manual one
  deferred      // due, but left to an instance that has rendered fewer sites, for a moment
};

// A site in the shared schedule, as scheduled_sites() reads it.
struct scheduled_site {
  std::string site;
  std::chrono::milliseconds overdue{0}; // how long ago it came due (negative: due later)
  bool held = false;                    // a live instance holds its lease (renders it now)
};

struct claim_result {
  claim_status status = claim_status::not_due;
  // Not claimed: how long until the site is due or its lease expires, whichever is later, or
  // (deferred) until the site is no longer left to others (0: try again whenever). Claimed: 0.
  std::chrono::milliseconds retry_in{0};
};

class cluster_store {
 public:
  virtual ~cluster_store() = default;

  // The notification channel every committed write notifies on, payload the event's seq.
  static constexpr const char* notify_channel = "newsdesk_events";

  // Claims `site` for `owner` for `lease` when it is due and no other owner holds a live
  // lease. A site never scheduled before is due at once. A manual claim makes the site due now,
  // unless the last manual claim of it was less than `manual_min_interval` ago (rate_limited).
  //
  // Fair share: a scheduled claim is deferred, for at most share_wait after the site came due,
  // when taking the site would leave `owner` the last claimer of more sites than its share (the
  // sites divided among the live instances, rounded up) or of two more than the live instance with
  // fewest. Why: the instance that wrote a site's due time is the one awake at that moment, so
  // without it whoever rendered first keeps every site. After share_wait anyone takes the site,
  // so a share never delays a render by more than that, and a manual claim is never deferred.
  // Live: heartbeat() within its `alive_for`, and `owner` itself.
  virtual claim_result claim(std::string_view site, std::string_view owner,
                             std::chrono::milliseconds lease, bool manual,
                             std::chrono::milliseconds manual_min_interval) = 0;

  // How long a due site is left to instances with fewer sites. Their timers wake them within a
  // quarter second of the due time (site_schedule spreads retries that much), so a second covers
  // it even on a loaded machine, and is small beside any refresh interval (1 s at least).
  static constexpr std::chrono::milliseconds share_wait{1000};

  // `owner` is alive for `alive_for` from now (it counts towards the shares). Called by each
  // running instance every third of its lease; forgets instances gone for long.
  virtual void heartbeat(std::string_view owner, std::chrono::milliseconds alive_for) = 0;
  // `owner` is stopping: it no longer counts towards the shares.
  virtual void leave(std::string_view owner) = 0;

  // Every site the schedule holds (any instance's), by name: what an instance compares with its
  // own sites to tell which ones only other instances know, and which no running one renders.
  virtual std::vector<scheduled_site> scheduled_sites() = 0;
  // Ends every lease whose holder's heartbeat has run out (a claim does that too, for its own
  // site; this frees sites no live instance claims). Returns their names.
  virtual std::vector<std::string> release_dead_leases() = 0;

  // Extends `owner`'s lease on `site` to `lease` from now. False when `owner` no longer holds it.
  virtual bool renew(std::string_view site, std::string_view owner,
                     std::chrono::milliseconds lease) = 0;

  // Ends `owner`'s lease on `site` without a write (shutdown, a refresh abandoned), leaving
  // the site due when it was, so another instance claims it at once if it is due.
  virtual void release(std::string_view site, std::string_view owner) = 0;

  // Retention pruning, claimed like a site: true when `owner` should prune now (then the next
  // prune is due `period` later, whoever does it); false when another instance pruned or is
  // pruning within the period.
  virtual bool claim_prune(std::string_view owner, std::chrono::milliseconds period) = 0;

  // Events with seq > `after`, ascending, at most `limit`.
  virtual std::vector<store_event> events_after(std::int64_t after, std::size_t limit) = 0;

  // The newest event's seq (0: none).
  virtual std::int64_t last_event_seq() = 0;

  // The connection string, for a listener's own connection.
  virtual const std::string& conninfo() const = 0;
  // Each round trip's bound (store_options::call_timeout), which a listener's own connection
  // keeps too.
  virtual std::chrono::milliseconds call_timeout() const = 0;
  // Closes idle connections the server has closed meanwhile (a restart, pg_terminate_backend),
  // so they do not linger (CLOSE-WAIT) until a call finds them broken; returns how many. Never
  // waits: a look at each idle connection's socket. Any thread.
  virtual std::size_t close_dead_connections() = 0;

  // The connections this instance may open (store_options::max_connections), its listener's
  // included: what a message about running out of them names.
  virtual std::size_t connection_budget() const = 0;
  // The listener's connection was refused for want of slots: the store closes one idle
  // connection of its own, and opens no more for a while, so the listener gets a slot on its
  // next try (live updates matter more than a query connection that waits unused).
  virtual void yield_connection() = 0;
};

// Opens the store at `location`: a postgresql:// or postgres:// URL opens the shared
// PostgreSQL store, anything else is an SQLite file (":memory:" keeps nothing). Runs the
// schema migrations and rebuilds the story assignment. Throws store_error naming the store and
// the cause.
std::unique_ptr<headline_store> open_store(const std::string& location, store_options options = {});

} // namespace newsdesk::server
