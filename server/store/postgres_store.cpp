#include "server/store/postgres_store.hpp"

#include "server/store/postgres_notices.hpp"
#include "server/store/store_input.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace newsdesk::server {

namespace {

// Advisory lock keys (any two constants other programs on the database are unlikely to use).
constexpr long long migration_lock = 7'242'001;
constexpr long long writer_lock = 7'242'002;

// The schedule row retention pruning is claimed through. Site names are [a-z0-9_-]+, so no site
// can take it.
constexpr const char* prune_row = "~prune";

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
};
static_assert(std::size(migrations) == postgres_store::schema_version);

constexpr const char* row_columns = "id, site, title, url, first_seen_ms, last_seen_ms";

// libpq's messages end with a newline and may span lines; a log line wants one.
std::string one_line(const char* text) {
  std::string out = text ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    out.pop_back();
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

// PostgreSQL text cannot hold NUL bytes; scraped text might.
std::string without_nul(std::string_view text) {
  std::string out(text);
  out.erase(std::remove(out.begin(), out.end(), '\0'), out.end());
  return out;
}

// A text[] literal: every element quoted, quotes and backslashes escaped.
std::string array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i)
      out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

struct result_deleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using result = std::unique_ptr<PGresult, result_deleter>;

std::int64_t int_at(const result& r, int row, int column) {
  return PQgetisnull(r.get(), row, column) ? 0 : std::stoll(PQgetvalue(r.get(), row, column));
}
std::string text_at(const result& r, int row, int column) {
  return std::string(PQgetvalue(r.get(), row, column),
                     static_cast<std::size_t>(PQgetlength(r.get(), row, column)));
}
bool bool_at(const result& r, int row, int column) {
  return !PQgetisnull(r.get(), row, column) && PQgetvalue(r.get(), row, column)[0] == 't';
}

stored_headline headline_at(const result& r, int row) {
  return {int_at(r, row, 0),  text_at(r, row, 1), text_at(r, row, 2),
          text_at(r, row, 3), int_at(r, row, 4),  int_at(r, row, 5)};
}

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

struct postgres_store::impl {
  std::string url;
  std::string location; // url without the password
  std::string epoch;

  std::mutex mutex; // guards idle and open
  std::condition_variable freed;
  std::vector<PGconn*> idle;
  std::size_t open = 0;

  explicit impl(std::string u)
      : url(std::move(u))
      , location(without_password(url)) {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    for (auto* c : idle)
      PQfinish(c);
  }

  [[noreturn]] void fail(const std::string& what, const char* detail) const {
    throw store_error("headline store " + location + ": " + what + ": " + one_line(detail));
  }

  PGconn* connect() const {
    // The URL is expanded into its parts; the statement timeout keeps a stuck query (a lock
    // held by a dead client, say) from holding a worker thread for long.
    const char* keys[] = {"dbname", "application_name", "connect_timeout", "options", nullptr};
    const char* values[] = {url.c_str(), "newsdesk", "5", "-c statement_timeout=10000", nullptr};
    PGconn* c = PQconnectdbParams(keys, values, 1);
    log_notices(c, "store");
    return c;
  }

  // A connection from the pool: an idle one, a new one while fewer than max_connections are
  // open, else the next one freed. A broken one is reset first. Throws when the database cannot
  // be reached.
  PGconn* acquire() {
    PGconn* c = nullptr;
    {
      std::unique_lock lock(mutex);
      freed.wait(lock, [&] { return !idle.empty() || open < max_connections; });
      if (!idle.empty()) {
        c = idle.back();
        idle.pop_back();
      } else {
        ++open;
      }
    }
    if (!c) {
      c = connect();
      if (!c || PQstatus(c) != CONNECTION_OK) {
        std::string detail = c ? PQerrorMessage(c) : "out of memory";
        PQfinish(c);
        {
          std::lock_guard lock(mutex);
          --open;
        }
        freed.notify_one();
        fail("cannot connect", detail.c_str());
      }
      return c;
    }
    if (PQstatus(c) != CONNECTION_OK) {
      PQreset(c);
      if (PQstatus(c) != CONNECTION_OK) {
        std::string detail = PQerrorMessage(c);
        give_back(c);
        fail("cannot connect", detail.c_str());
      }
    }
    return c;
  }

  void give_back(PGconn* c) {
    {
      std::lock_guard lock(mutex);
      idle.push_back(c);
    }
    freed.notify_one();
  }

  // A connection for one call, returned to the pool at the end of the scope.
  struct lease {
    impl& owner;
    PGconn* conn;
    explicit lease(impl& o)
        : owner(o)
        , conn(o.acquire()) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { owner.give_back(conn); }
  };

  // Runs `sql` with text parameters; throws store_error naming `what` unless it succeeded.
  result run(PGconn* c, const char* sql, const std::vector<std::string>& params,
             const char* what) const {
    std::vector<const char*> values;
    for (const auto& p : params)
      values.push_back(p.c_str());
    return checked(c,
                   PQexecParams(c, sql, static_cast<int>(values.size()), nullptr, values.data(),
                                nullptr, nullptr, 0),
                   what);
  }
  // Without parameters `sql` may hold several statements (the migrations).
  result run(PGconn* c, const char* sql, const char* what) const {
    return checked(c, PQexec(c, sql), what);
  }
  result checked(PGconn* c, PGresult* raw, const char* what) const {
    result r(raw);
    auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
      fail(what, r ? PQresultErrorMessage(r.get()) : PQerrorMessage(c));
    return r;
  }

  // Runs `body(conn)` in one transaction on a pooled connection, rolling back when it throws.
  template <class Body> auto transaction(Body&& body) {
    lease l(*this);
    run(l.conn, "BEGIN", "cannot begin a transaction");
    try {
      if constexpr (std::is_void_v<decltype(body(l.conn))>) {
        body(l.conn);
        run(l.conn, "COMMIT", "cannot commit");
      } else {
        auto out = body(l.conn);
        run(l.conn, "COMMIT", "cannot commit");
        return out;
      }
    } catch (...) {
      // A dead connection fails this too; it is reset on its next use.
      result(PQexec(l.conn, "ROLLBACK"));
      throw;
    }
  }

  template <class Body> auto with_connection(Body&& body) {
    lease l(*this);
    return body(l.conn);
  }

  void migrate() {
    lease l(*this);
    auto* c = l.conn;
    run(c, ("SELECT pg_advisory_lock(" + std::to_string(migration_lock) + ")").c_str(),
        "cannot take the migration lock");
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
          run(c, migrations[v], "cannot migrate the schema");
          run(c, "UPDATE newsdesk_schema SET version = $1", {std::to_string(v + 1)},
              "cannot write the schema version");
          run(c, "COMMIT", "cannot commit the schema migration");
        } catch (...) {
          result(PQexec(c, "ROLLBACK"));
          throw;
        }
      }
      run(c, ("SELECT pg_advisory_unlock(" + std::to_string(migration_lock) + ")").c_str(),
          "cannot release the migration lock");
    } catch (...) {
      // Closing the session would release it too; the connection goes back to the pool.
      result(
          PQexec(c, ("SELECT pg_advisory_unlock(" + std::to_string(migration_lock) + ")").c_str()));
      throw;
    }
    epoch =
        text_at(run(c, "SELECT epoch FROM newsdesk_meta", "cannot read the store's epoch"), 0, 0);
  }

  // Inside a write: the writer lock, then the lease check when the write names an owner.
  void begin_write(PGconn* c, std::string_view site, const refresh_record& record) {
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

  // The site's refresh counter, creating its row when it is new. Inside a write.
  std::int64_t ensure_site(PGconn* c, std::string_view site) {
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

  // The end of every write: one event, the lease ended with the next due time, one notification.
  void end_write(PGconn* c, std::string_view site, const refresh_record& record,
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
};

postgres_store::postgres_store(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
postgres_store::~postgres_store() = default;

std::unique_ptr<postgres_store> postgres_store::open(const std::string& url) {
  auto p = std::make_unique<impl>(url);
  p->migrate();
  return std::unique_ptr<postgres_store>(new postgres_store(std::move(p)));
}

const std::string& postgres_store::location() const {
  return impl_->location;
}
const std::string& postgres_store::conninfo() const {
  return impl_->url;
}
const std::string& postgres_store::epoch() const {
  return impl_->epoch;
}

refresh_written postgres_store::record_refresh(std::string_view site,
                                               const std::vector<scrapers::headline>& found,
                                               const refresh_record& record) {
  auto& d = *impl_;
  const auto rows = store_input::rows_of(found);
  return d.transaction([&](PGconn* c) {
    d.begin_write(c, site, record);
    const std::string name(site);
    const auto seq = std::to_string(d.ensure_site(c, site) + 1);
    const auto now = std::to_string(record.now_ms);
    std::vector<std::string> urls, titles, positions;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      urls.push_back(without_nul(rows[i].url));
      titles.push_back(without_nul(rows[i].title));
      positions.push_back(std::to_string(i));
    }
    // Known links move on in one statement; what it did not touch is new.
    auto known = d.run(
        c,
        "UPDATE headlines h SET title = v.title, last_seen_ms = $2, seen_seq = $3, "
        "position = v.position FROM unnest($4::text[], $5::text[], $6::int[]) "
        "AS v(url, title, position) WHERE h.site = $1 AND h.url = v.url "
        "RETURNING h.url, h.id, h.first_seen_ms",
        {name, now, seq, array_literal(urls), array_literal(titles), array_literal(positions)},
        "cannot update headlines");
    // url -> (id, first_seen_ms) of the links seen before
    std::unordered_map<std::string, std::pair<std::int64_t, std::int64_t>> updated;
    for (int i = 0; i < PQntuples(known.get()); ++i)
      updated[text_at(known, i, 0)] = {int_at(known, i, 1), int_at(known, i, 2)};
    auto last =
        int_at(d.run(c, "SELECT last_id FROM newsdesk_meta", "cannot read the last id"), 0, 0);
    refresh_written written;
    std::vector<std::string> new_ids, new_urls, new_titles, new_positions;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (auto seen = updated.find(urls[i]); seen != updated.end()) {
        written.current.push_back(
            {seen->second.first, name, titles[i], urls[i], seen->second.second, record.now_ms});
        continue;
      }
      ++last;
      written.current.push_back({last, name, titles[i], urls[i], record.now_ms, record.now_ms});
      written.added.push_back(written.current.back());
      new_ids.push_back(std::to_string(last));
      new_urls.push_back(urls[i]);
      new_titles.push_back(titles[i]);
      new_positions.push_back(positions[i]);
    }
    if (!written.added.empty())
      d.run(c,
            "INSERT INTO headlines (id, site, url, title, first_seen_ms, last_seen_ms, seen_seq, "
            "position) SELECT v.id, $1, v.url, v.title, $2, $2, $3, v.position FROM "
            "unnest($4::bigint[], $5::text[], $6::text[], $7::int[]) AS v(id, url, title, "
            "position)",
            {name, now, seq, array_literal(new_ids), array_literal(new_urls),
             array_literal(new_titles), array_literal(new_positions)},
            "cannot store headlines");
    d.run(c,
          "UPDATE sites SET last_attempt_ms = $2, last_success_ms = $2, last_error = '', "
          "last_failure = '', "
          "refresh_seq = $3, last_elapsed_ms = $4 WHERE site = $1",
          {name, now, seq, std::to_string(record.elapsed_ms)}, "cannot record the refresh");
    d.end_write(c, site, record, last);
    return written;
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
    std::vector<stored_headline> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(headline_at(r, i));
    return out;
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
    std::vector<stored_headline> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(headline_at(r, i));
    return out;
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
                   {cutoff}, "cannot prune");
    auto deleted = static_cast<std::size_t>(int_at(r, 0, 0));
    if (deleted)
      d.run(c, "UPDATE newsdesk_meta SET pruned_through = greatest(pruned_through, $1)",
            {std::to_string(int_at(r, 0, 1))}, "cannot record the pruning mark");
    // Events are hints for instances that are running: ones older than the history are of no
    // use to anyone.
    d.run(c, "DELETE FROM events WHERE committed_at < to_timestamp($1::bigint / 1000.0)", {cutoff},
          "cannot prune events");
    return deleted;
  });
}

claim_result postgres_store::claim(std::string_view site, std::string_view owner,
                                   std::chrono::milliseconds lease, bool manual,
                                   std::chrono::milliseconds manual_min_interval) {
  auto& d = *impl_;
  const std::string name(site), who(owner);
  return d.transaction([&](PGconn* c) -> claim_result {
    d.run(c, "INSERT INTO schedule (site) VALUES ($1) ON CONFLICT DO NOTHING", {name},
          "cannot schedule the site");
    if (manual) {
      // A manual refresh makes the site due now, at most once per manual_min_interval.
      auto r =
          d.run(c,
                "SELECT greatest(0, ceil(extract(epoch FROM last_manual_at + $2 * interval "
                "'1 millisecond' - now()) * 1000))::bigint FROM schedule WHERE site = $1 "
                "AND last_manual_at IS NOT NULL FOR UPDATE",
                {name, std::to_string(manual_min_interval.count())}, "cannot read the schedule");
      if (PQntuples(r.get()) && int_at(r, 0, 0) > 0)
        return {claim_status::rate_limited, std::chrono::milliseconds(int_at(r, 0, 0))};
      d.run(c, "UPDATE schedule SET due_at = now(), last_manual_at = now() WHERE site = $1", {name},
            "cannot mark the site due");
    }
    // SKIP LOCKED: a row another instance is claiming right now is its, not worth waiting for.
    auto r = d.run(
        c,
        "SELECT owner IS NOT NULL AND lease_until > now() AND owner <> $2, due_at <= now(), "
        "greatest(0, ceil(extract(epoch FROM greatest(due_at, coalesce(lease_until, due_at)) - "
        "now()) * 1000))::bigint FROM schedule WHERE site = $1 FOR UPDATE SKIP LOCKED",
        {name, who}, "cannot read the schedule");
    if (PQntuples(r.get()) == 0)
      return {claim_status::leased, std::chrono::milliseconds(100)};
    const auto wait = std::chrono::milliseconds(int_at(r, 0, 2));
    if (bool_at(r, 0, 0))
      return {claim_status::leased, wait};
    if (!bool_at(r, 0, 1))
      return {claim_status::not_due, wait};
    d.run(c,
          "UPDATE schedule SET owner = $2, lease_until = now() + $3 * interval '1 millisecond' "
          "WHERE site = $1",
          {name, who, std::to_string(lease.count())}, "cannot take the lease");
    return {claim_status::claimed, {}};
  });
}

bool postgres_store::renew(std::string_view site, std::string_view owner,
                           std::chrono::milliseconds lease) {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c,
                   "UPDATE schedule SET lease_until = now() + $3 * interval '1 millisecond' "
                   "WHERE site = $1 AND owner = $2",
                   {std::string(site), std::string(owner), std::to_string(lease.count())},
                   "cannot renew the lease");
    return std::string_view(PQcmdTuples(r.get())) == "1";
  });
}

void postgres_store::release(std::string_view site, std::string_view owner) {
  auto& d = *impl_;
  d.with_connection([&](PGconn* c) {
    d.run(c, "UPDATE schedule SET owner = NULL, lease_until = NULL WHERE site = $1 AND owner = $2",
          {std::string(site), std::string(owner)}, "cannot release the lease");
  });
}

bool postgres_store::claim_prune(std::string_view owner, std::chrono::milliseconds period) {
  auto& d = *impl_;
  return d.transaction([&](PGconn* c) {
    d.run(c, "INSERT INTO schedule (site) VALUES ($1) ON CONFLICT DO NOTHING", {prune_row},
          "cannot schedule pruning");
    // The next prune is due a period from now whoever prunes; the lease only says who did.
    auto r = d.run(c,
                   "UPDATE schedule SET due_at = now() + $3 * interval '1 millisecond', owner = "
                   "$2, lease_until = now() + $3 * interval '1 millisecond' WHERE site = $1 AND "
                   "site IN (SELECT site FROM schedule WHERE site = $1 AND due_at <= now() FOR "
                   "UPDATE SKIP LOCKED)",
                   {prune_row, std::string(owner), std::to_string(period.count())},
                   "cannot claim pruning");
    return std::string_view(PQcmdTuples(r.get())) == "1";
  });
}

std::vector<store_event> postgres_store::events_after(std::int64_t after, std::size_t limit) {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c, "SELECT seq, site FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
                   {std::to_string(after), std::to_string(limit)}, "cannot read events");
    std::vector<store_event> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back({int_at(r, i, 0), text_at(r, i, 1)});
    return out;
  });
}

std::int64_t postgres_store::last_event_seq() {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return int_at(d.run(c, "SELECT last_event FROM newsdesk_meta", "cannot read the last event"), 0,
                  0);
  });
}

} // namespace newsdesk::server
