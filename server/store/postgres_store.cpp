#include "server/store/postgres_store.hpp"

#include "server/store/postgres_store_impl.hpp"
#include "server/store/store_input.hpp"

#include <unordered_map>
#include <utility>

namespace newsdesk::server {

using namespace detail;

namespace {

// The advisory lock migrations run under (any constant other programs on the database are
// unlikely to use; the writer lock is the next one).
constexpr long long migration_lock = 7'242'001;

// Schema migrations: migrations[i] brings a database from version i to i + 1, in one
// transaction. Appending a step (never editing a shipped one) is how the schema changes.
//
// Why these columns: as in the SQLite store, `seen_seq` is the site's refresh counter when the
// row was last seen ("current" = seen by the latest successful refresh) and `position` keeps the
// site's order. Ids and event seqs come from newsdesk_meta's counters, advanced under the writer
// lock, so they follow commit order and last_id is never an id that is not committed.
constexpr const char* migrations[] = {
    R"sql(
CREATE TABLE newsdesk_meta (
  epoch text NOT NULL,
  last_id bigint NOT NULL DEFAULT 0,
  last_event bigint NOT NULL DEFAULT 0,
  pruned_through bigint NOT NULL DEFAULT 0
);
INSERT INTO newsdesk_meta (epoch) VALUES (md5(random()::text || clock_timestamp()::text));
CREATE TABLE sites (
  site text PRIMARY KEY,
  last_attempt_ms bigint NOT NULL DEFAULT 0,
  last_success_ms bigint NOT NULL DEFAULT 0,
  last_error text NOT NULL DEFAULT '',
  last_elapsed_ms bigint NOT NULL DEFAULT 0,
  refresh_seq bigint NOT NULL DEFAULT 0
);
CREATE TABLE headlines (
  id bigint PRIMARY KEY,
  site text NOT NULL,
  url text NOT NULL,
  title text NOT NULL,
  first_seen_ms bigint NOT NULL,
  last_seen_ms bigint NOT NULL,
  seen_seq bigint NOT NULL,
  position integer NOT NULL,
  UNIQUE (site, url)
);
CREATE INDEX headlines_current ON headlines (site, seen_seq, position);
CREATE INDEX headlines_last_seen ON headlines (last_seen_ms);
CREATE TABLE schedule (
  site text PRIMARY KEY,
  due_at timestamptz NOT NULL DEFAULT now(),
  owner text,
  lease_until timestamptz,
  last_manual_at timestamptz
);
CREATE TABLE events (
  seq bigint PRIMARY KEY,
  site text NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now()
);
)sql",
    // 1 -> 2: the kind of the latest failure (server/core/failure.hpp), by its label.
    R"sql(
ALTER TABLE sites ADD COLUMN last_failure text NOT NULL DEFAULT '';
)sql",
    // 2 -> 3: stories. Each row's story (a row stored before is a story of its own), found by
    // story for a story's view and for merges; rows by first-seen time for the catch-up of the
    // story assignment; and the log of merges, its seq from a counter advanced under the writer
    // lock (so it follows commit order and is never reused after pruning).
    R"sql(
ALTER TABLE headlines ADD COLUMN story bigint;
UPDATE headlines SET story = id;
ALTER TABLE headlines ALTER COLUMN story SET NOT NULL;
CREATE INDEX headlines_story ON headlines (story);
CREATE INDEX headlines_first_seen ON headlines (first_seen_ms);
ALTER TABLE newsdesk_meta ADD COLUMN last_merge bigint NOT NULL DEFAULT 0;
CREATE TABLE story_merges (
  seq bigint PRIMARY KEY,
  from_story bigint NOT NULL,
  into_story bigint NOT NULL,
  made_ms bigint NOT NULL
);
)sql",
    // 3 -> 4: each site's icon (favicon), and when it was last tried (server/news/site_icons).
    R"sql(
CREATE TABLE site_icons (
  site text PRIMARY KEY,
  content_type text NOT NULL DEFAULT '',
  body bytea NOT NULL DEFAULT '',
  etag text NOT NULL DEFAULT '',
  checked_ms bigint NOT NULL DEFAULT 0,
  error text NOT NULL DEFAULT ''
);
)sql",
    // 4 -> 5: true times. When a headline's source says it was published (NULL: not said), and
    // whether its site's first successful refresh found it (then it has no "seen" age to show).
    R"sql(
ALTER TABLE headlines ADD COLUMN published_ms bigint;
ALTER TABLE headlines ADD COLUMN first_look boolean NOT NULL DEFAULT false;
)sql",
    // 5 -> 6: fair shares of the claims (cluster_store::claim). Who claimed each site last, and
    // which instances are alive (each instance's heartbeat says until when).
    R"sql(
ALTER TABLE schedule ADD COLUMN last_owner text;
CREATE TABLE instances (
  owner text PRIMARY KEY,
  alive_until timestamptz NOT NULL
);
)sql",
    // 6 -> 7: the language each headline is written in ('' in older rows), which its story's
    // assignment reads again after a restart.
    R"sql(
ALTER TABLE headlines ADD COLUMN language text NOT NULL DEFAULT '';
)sql",
    // 7 -> 8: a line of summary per headline (a feed item's description), shown under a
    // story's lead.
    R"sql(
ALTER TABLE headlines ADD COLUMN summary text NOT NULL DEFAULT '';
)sql",
    // 8 -> 9: pictures. Each headline's picture URL, and the pictures fetched (server/pictures/):
    // by source URL (fetched once), served by name, dropped oldest first per site.
    R"sql(
ALTER TABLE headlines ADD COLUMN image text NOT NULL DEFAULT '';
CREATE TABLE pictures (
  source text PRIMARY KEY,
  site text NOT NULL,
  name text NOT NULL DEFAULT '',
  content_type text NOT NULL DEFAULT '',
  body bytea NOT NULL DEFAULT '',
  width integer NOT NULL DEFAULT 0,
  height integer NOT NULL DEFAULT 0,
  tried_ms bigint NOT NULL DEFAULT 0,
  error text NOT NULL DEFAULT ''
);
CREATE INDEX pictures_name ON pictures (name);
CREATE INDEX pictures_site ON pictures (site, tried_ms);
)sql",
};
static_assert(std::size(migrations) == postgres_store::schema_version);

} // namespace

bool is_postgres_url(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string without_password(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos)
    return url;
  auto authority = scheme + 3;
  auto at = url.find('@', authority);
  auto slash = url.find('/', authority);
  std::string out = url;
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    auto colon = url.find(':', authority);
    if (colon != std::string::npos && colon < at)
      out = url.substr(0, colon) + url.substr(at);
  }
  // A password may also come as a query parameter.
  if (auto p = out.find("password="); p != std::string::npos) {
    auto end = out.find('&', p);
    out.erase(p, end == std::string::npos ? std::string::npos : end - p + 1);
    if (!out.empty() && (out.back() == '&' || out.back() == '?'))
      out.pop_back();
  }
  return out;
}

void postgres_store::impl::migrate() {
  lease l(*this);
  auto* c = l.conn;
  // Migrations may rewrite whole tables: the server's statement timeout bounds them.
  const auto lock_sql = "SELECT pg_advisory_lock(" + std::to_string(migration_lock) + ")";
  const auto unlock_sql = "SELECT pg_advisory_unlock(" + std::to_string(migration_lock) + ")";
  run(c, lock_sql.c_str(), "cannot take the migration lock", long_timeout);
  try {
    run(c, "CREATE TABLE IF NOT EXISTS newsdesk_schema (version integer NOT NULL)",
        "cannot create the schema version table");
    auto r = run(c, "SELECT version FROM newsdesk_schema", "cannot read the schema version");
    int version = PQntuples(r.get()) ? static_cast<int>(int_at(r, 0, 0)) : 0;
    if (PQntuples(r.get()) == 0)
      run(c, "INSERT INTO newsdesk_schema VALUES (0)", "cannot write the schema version");
    if (version > schema_version)
      throw store_error("headline store " + location + " has schema version " +
                        std::to_string(version) + ", newer than this newsdesk understands (" +
                        std::to_string(schema_version) +
                        "); run a newer newsdesk or point it at another database");
    for (int v = version; v < schema_version; ++v) {
      run(c, "BEGIN", "cannot begin the schema migration");
      try {
        run(c, migrations[v], "cannot migrate the schema", long_timeout);
        run(c, "UPDATE newsdesk_schema SET version = $1", {std::to_string(v + 1)},
            "cannot write the schema version");
        run(c, "COMMIT", "cannot commit the schema migration");
      } catch (...) {
        roll_back(c);
        throw;
      }
    }
    run(c, unlock_sql.c_str(), "cannot release the migration lock");
  } catch (...) {
    // Closing the session would release it too; a connection that is whole goes back to the pool.
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE)
      (void)pg::exec_within(c, unlock_sql.c_str(), nullptr, timeout);
    throw;
  }
  epoch = text_at(run(c, "SELECT epoch FROM newsdesk_meta", "cannot read the store's epoch"), 0, 0);
}

void postgres_store::impl::begin_write(PGconn* c, std::string_view site,
                                       const refresh_record& record) {
  if (site.empty() || site.size() > store_limits::max_site_bytes)
    throw store_error("headline store " + location + ": site name must be 1 to " +
                      std::to_string(store_limits::max_site_bytes) + " bytes");
  run(c, ("SELECT pg_advisory_xact_lock(" + std::to_string(writer_lock) + ")").c_str(),
      "cannot take the writer lock");
  if (record.lease_owner.empty())
    return;
  auto r = run(c,
               "SELECT owner = $2 AND lease_until > now() FROM schedule WHERE site = $1 "
               "FOR UPDATE",
               {std::string(site), record.lease_owner}, "cannot check the lease");
  if (PQntuples(r.get()) == 0 || !bool_at(r, 0, 0))
    throw lease_lost("headline store " + location + ": " + record.lease_owner +
                     " no longer holds the lease on " + std::string(site));
}

std::int64_t postgres_store::impl::ensure_site(PGconn* c, std::string_view site) {
  const std::string name(site);
  auto r = run(c, "SELECT refresh_seq FROM sites WHERE site = $1", {name}, "cannot read sites");
  if (PQntuples(r.get()))
    return int_at(r, 0, 0);
  auto count = run(c, "SELECT count(*) FROM sites", "cannot count sites");
  if (static_cast<std::size_t>(int_at(count, 0, 0)) >= store_limits::max_sites)
    throw store_error("headline store " + location + ": refusing site \"" + name +
                      "\": the store already holds " + std::to_string(store_limits::max_sites) +
                      " sites");
  run(c, "INSERT INTO sites (site) VALUES ($1)", {name}, "cannot add a site");
  return 0;
}

void postgres_store::impl::end_write(PGconn* c, std::string_view site, const refresh_record& record,
                                     std::int64_t new_last_id) {
  auto r = run(c,
               "UPDATE newsdesk_meta SET last_id = greatest(last_id, $1), last_event = "
               "last_event + 1 RETURNING last_event",
               {std::to_string(new_last_id)}, "cannot advance the event counter");
  auto seq = text_at(r, 0, 0);
  run(c, "INSERT INTO events (seq, site) VALUES ($1, $2)", {seq, std::string(site)},
      "cannot record the event");
  if (!record.lease_owner.empty())
    run(c,
        "UPDATE schedule SET owner = NULL, lease_until = NULL, due_at = now() + $2 * "
        "interval '1 millisecond' WHERE site = $1",
        {std::string(site), std::to_string(record.due_again_in.count())},
        "cannot schedule the next refresh");
  run(c, "SELECT pg_notify($1, $2)", {cluster_store::notify_channel, seq}, "cannot notify");
}

postgres_store::postgres_store(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
postgres_store::~postgres_store() = default;

std::unique_ptr<postgres_store> postgres_store::open(const std::string& url,
                                                     store_options options) {
  auto p = std::make_unique<impl>(url, std::move(options));
  p->migrate();
  p->with_connection([&](PGconn* c) { p->catch_up_stories(c); });
  return std::unique_ptr<postgres_store>(new postgres_store(std::move(p)));
}

const std::string& postgres_store::location() const {
  return impl_->location;
}
const std::string& postgres_store::conninfo() const {
  return impl_->url;
}
std::chrono::milliseconds postgres_store::call_timeout() const {
  return impl_->timeout;
}
std::size_t postgres_store::close_dead_connections() {
  return impl_->close_dead_idle();
}
std::size_t postgres_store::connection_budget() const {
  return impl_->budget;
}
void postgres_store::yield_connection() {
  impl_->yield_connection();
}
const std::string& postgres_store::epoch() const {
  return impl_->epoch;
}

refresh_written postgres_store::record_refresh(std::string_view site,
                                               const std::vector<scrapers::headline>& found,
                                               const refresh_record& record) {
  auto& d = *impl_;
  const auto rows = store_input::rows_of(found);
  std::lock_guard lock(d.write_mutex);
  return d.keeper.write([&] {
    return d.transaction([&](PGconn* c) {
      d.begin_write(c, site, record);
      d.catch_up_stories(c);
      const std::string name(site);
      const auto seq = std::to_string(d.ensure_site(c, site) + 1);
      const auto now = std::to_string(record.now_ms);
      std::vector<std::string> urls, titles, positions, summaries, images;
      const bool first_look = seq == "1";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        urls.push_back(without_nul(rows[i].url));
        titles.push_back(without_nul(rows[i].title));
        positions.push_back(std::to_string(i));
        summaries.push_back(without_nul(rows[i].summary));
        images.push_back(without_nul(rows[i].image));
      }
      // Known links move on in one statement; what it did not touch is new.
      auto known = d.run(
          c,
          "UPDATE headlines h SET title = v.title, summary = v.summary, image = v.image, "
          "last_seen_ms = $2, seen_seq = $3, position = v.position FROM unnest($4::text[], "
          "$5::text[], $6::int[], $7::text[], $8::text[]) AS v(url, title, position, summary, "
          "image) WHERE h.site = $1 AND h.url = v.url "
          "RETURNING h.url, h.id, h.first_seen_ms, h.story, coalesce(h.published_ms, 0), "
          "h.first_look, h.language",
          {name, now, seq, array_literal(urls), array_literal(titles), array_literal(positions),
           array_literal(summaries), array_literal(images)},
          "cannot update headlines");
      std::unordered_map<std::string, stored_headline> updated; // by url: the links seen before
      for (int i = 0; i < PQntuples(known.get()); ++i) {
        auto& row = updated[text_at(known, i, 0)] = {
            int_at(known, i, 1), name, {}, {}, int_at(known, i, 2), record.now_ms,
            int_at(known, i, 3)};
        if (const auto published = int_at(known, i, 4); published != 0)
          row.published_ms = published;
        row.first_look = text_at(known, i, 5) == "t";
        row.language = text_at(known, i, 6);
      }
      auto last =
          int_at(d.run(c, "SELECT last_id FROM newsdesk_meta", "cannot read the last id"), 0, 0);
      refresh_written written;
      std::vector<std::size_t> new_rows; // indices into rows
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (auto seen = updated.find(urls[i]); seen != updated.end()) {
          auto row = seen->second;
          row.title = titles[i];
          row.url = urls[i];
          row.summary = summaries[i];
          row.image = images[i];
          written.current.push_back(std::move(row));
          continue;
        }
        stored_headline row{++last, name, titles[i], urls[i], record.now_ms, record.now_ms};
        row.published_ms = rows[i].published_ms;
        row.first_look = first_look;
        row.language = rows[i].language;
        row.summary = summaries[i];
        row.image = images[i];
        d.keeper.assign(row, written.merges);
        written.current.push_back(row);
        written.added.push_back(std::move(row));
        new_rows.push_back(i);
      }
      // The new rows are inserted with their stories after this write's merges.
      apply_merges(written.current, written.merges);
      apply_merges(written.added, written.merges);
      if (!written.added.empty()) {
        std::vector<std::string> new_ids, new_urls, new_titles, new_positions, new_stories,
            new_published, new_languages, new_summaries, new_images;
        for (std::size_t n = 0; n < new_rows.size(); ++n) {
          new_ids.push_back(std::to_string(written.added[n].id));
          new_urls.push_back(urls[new_rows[n]]);
          new_titles.push_back(titles[new_rows[n]]);
          new_positions.push_back(positions[new_rows[n]]);
          new_stories.push_back(std::to_string(written.added[n].story));
          new_published.push_back(std::to_string(written.added[n].published_ms.value_or(0)));
          new_languages.push_back(without_nul(written.added[n].language));
          new_summaries.push_back(summaries[new_rows[n]]);
          new_images.push_back(images[new_rows[n]]);
        }
        d.run(c,
              "INSERT INTO headlines (id, site, url, title, first_seen_ms, last_seen_ms, "
              "seen_seq, position, story, published_ms, first_look, language, summary, image) "
              "SELECT v.id, $1, v.url, v.title, $2, $2, $3, v.position, v.story, "
              "nullif(v.published, 0), $10::boolean, v.language, v.summary, v.image FROM "
              "unnest($4::bigint[], $5::text[], $6::text[], $7::int[], $8::bigint[], $9::bigint[], "
              "$11::text[], $12::text[], $13::text[]) AS v(id, url, title, position, story, "
              "published, language, summary, image)",
              {name, now, seq, array_literal(new_ids), array_literal(new_urls),
               array_literal(new_titles), array_literal(new_positions), array_literal(new_stories),
               array_literal(new_published), first_look ? "true" : "false",
               array_literal(new_languages), array_literal(new_summaries),
               array_literal(new_images)},
              "cannot store headlines");
      }
      d.log_merges(c, written.merges, record.now_ms);
      d.run(c,
            "UPDATE sites SET last_attempt_ms = $2, last_success_ms = $2, last_error = '', "
            "last_failure = '', refresh_seq = $3, last_elapsed_ms = $4 WHERE site = $1",
            {name, now, seq, std::to_string(record.elapsed_ms)}, "cannot record the refresh");
      d.end_write(c, site, record, last);
      return written;
    });
  });
}

void postgres_store::record_failure(std::string_view site, std::string_view error,
                                    const refresh_record& record) {
  auto& d = *impl_;
  d.transaction([&](PGconn* c) {
    d.begin_write(c, site, record);
    d.ensure_site(c, site);
    d.run(c,
          "UPDATE sites SET last_attempt_ms = $2, last_error = $3, last_elapsed_ms = $4, "
          "last_failure = $5 WHERE site = $1",
          {std::string(site), std::to_string(record.now_ms),
           without_nul(store_input::failure_notice(error)), std::to_string(record.elapsed_ms),
           std::string(to_string(record.failure))},
          "cannot record the failure");
    d.end_write(c, site, record, 0);
  });
}

std::vector<stored_headline> postgres_store::current(std::string_view site) const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   (std::string("SELECT ") + row_columns +
                    " FROM headlines WHERE site = $1 AND seen_seq = (SELECT refresh_seq FROM "
                    "sites WHERE site = $1) ORDER BY position")
                       .c_str(),
                   {std::string(site)}, "cannot read current headlines");
    return headlines_of(r);
  });
}

std::vector<site_state> postgres_store::sites() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "SELECT site, last_attempt_ms, last_success_ms, last_error, last_elapsed_ms, "
                   "last_failure FROM sites ORDER BY site",
                   "cannot read sites");
    std::vector<site_state> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back({text_at(r, i, 0), int_at(r, i, 1), int_at(r, i, 2), text_at(r, i, 3),
                     int_at(r, i, 4), failure_kind_from(text_at(r, i, 5))});
    return out;
  });
}

std::vector<stored_headline> postgres_store::since(std::int64_t after_id, std::size_t limit) const {
  limit = std::min(limit, store_limits::max_since_rows);
  if (limit == 0)
    return {};
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   (std::string("SELECT ") + row_columns +
                    " FROM headlines WHERE id > $1 ORDER BY id LIMIT $2")
                       .c_str(),
                   {std::to_string(after_id), std::to_string(limit)}, "cannot read headlines");
    return headlines_of(r);
  });
}

std::int64_t postgres_store::last_id() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return int_at(d.run(c, "SELECT last_id FROM newsdesk_meta", "cannot read the last id"), 0, 0);
  });
}

std::int64_t postgres_store::pruned_through() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return int_at(
        d.run(c, "SELECT pruned_through FROM newsdesk_meta", "cannot read the pruning mark"), 0, 0);
  });
}

std::size_t postgres_store::prune(std::int64_t older_than_ms) {
  auto& d = *impl_;
  return d.transaction([&](PGconn* c) {
    const auto cutoff = std::to_string(older_than_ms);
    auto r = d.run(c,
                   "WITH gone AS (DELETE FROM headlines h WHERE last_seen_ms < $1 AND seen_seq <> "
                   "coalesce((SELECT refresh_seq FROM sites s WHERE s.site = h.site), -1) "
                   "RETURNING id) SELECT count(*), coalesce(max(id), 0) FROM gone",
                   {cutoff}, "cannot prune", d.long_timeout);
    auto deleted = static_cast<std::size_t>(int_at(r, 0, 0));
    if (deleted)
      d.run(c, "UPDATE newsdesk_meta SET pruned_through = greatest(pruned_through, $1)",
            {std::to_string(int_at(r, 0, 1))}, "cannot record the pruning mark");
    // Events are hints for instances that are running: ones older than the history are of no
    // use to anyone.
    d.run(c, "DELETE FROM events WHERE committed_at < to_timestamp($1::bigint / 1000.0)", {cutoff},
          "cannot prune events", d.long_timeout);
    d.run(c,
          "DELETE FROM story_merges WHERE made_ms < (SELECT max(first_seen_ms) FROM headlines) - "
          "$1::bigint",
          {std::to_string(story_keeper::replay_period.count())}, "cannot prune the story merges",
          d.long_timeout);
    return deleted;
  });
}

void postgres_store::record_icon(const site_icon& icon) {
  auto& d = *impl_;
  if (icon.site.empty() || icon.site.size() > store_limits::max_site_bytes)
    throw store_error("headline store " + d.location + ": site name must be 1 to " +
                      std::to_string(store_limits::max_site_bytes) + " bytes");
  d.with_connection([&](PGconn* c) {
    if (icon.has_image())
      d.run(c,
            "INSERT INTO site_icons (site, content_type, body, etag, checked_ms, error) "
            "VALUES ($1, $2, decode($3, 'hex'), $4, $5, $6) ON CONFLICT (site) DO UPDATE SET "
            "content_type = excluded.content_type, body = excluded.body, etag = excluded.etag, "
            "checked_ms = excluded.checked_ms, error = excluded.error",
            {icon.site, icon.content_type, to_hex(icon.body), icon.etag,
             std::to_string(icon.checked_ms), icon.error},
            "cannot record a site icon");
    else
      d.run(c,
            "INSERT INTO site_icons (site, checked_ms, error) VALUES ($1, $2, $3) "
            "ON CONFLICT (site) DO UPDATE SET checked_ms = excluded.checked_ms, "
            "error = excluded.error",
            {icon.site, std::to_string(icon.checked_ms), icon.error}, "cannot record a site icon");
  });
}

std::optional<site_icon> postgres_store::icon(std::string_view site) const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) -> std::optional<site_icon> {
    auto r = d.run(c,
                   "SELECT site, content_type, etag, checked_ms, error, encode(body, 'hex') "
                   "FROM site_icons WHERE site = $1",
                   {std::string(site)}, "cannot read a site icon");
    if (PQntuples(r.get()) == 0)
      return std::nullopt;
    return site_icon{text_at(r, 0, 0), text_at(r, 0, 1), from_hex(text_at(r, 0, 5)),
                     text_at(r, 0, 2), int_at(r, 0, 3),  text_at(r, 0, 4)};
  });
}

std::vector<site_icon> postgres_store::icons() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "SELECT site, content_type, etag, checked_ms, error, octet_length(body) "
                   "FROM site_icons ORDER BY site",
                   "cannot read site icons");
    std::vector<site_icon> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back({text_at(r, i, 0), text_at(r, i, 1), int_at(r, i, 5) > 0 ? "-" : "",
                     text_at(r, i, 2), int_at(r, i, 3), text_at(r, i, 4)});
    return out;
  });
}

} // namespace newsdesk::server
