#include "server/store/sqlite_store.hpp"

#include "server/store/store_input.hpp"

#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <type_traits>

namespace newsdesk::server {

namespace {

// Schema migrations: migrations[i] brings a file from user_version i to i + 1. Appending a
// step (never editing a shipped one) is how the schema changes; open() runs the missing steps
// in one transaction.
//
// Why these columns: `seen_seq` is the site's refresh counter when the row was last seen, so
// "current" means "seen by the latest successful refresh" without depending on two refreshes
// having different clock readings; `position` keeps the order the site listed them in.
// AUTOINCREMENT keeps ids from being reused after pruning (SSE clients hold old ids).
constexpr const char* migrations[] = {
    R"sql(
CREATE TABLE sites (
  site TEXT PRIMARY KEY NOT NULL,
  last_attempt_ms INTEGER NOT NULL DEFAULT 0,
  last_success_ms INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  refresh_seq INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE headlines (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  site TEXT NOT NULL,
  url TEXT NOT NULL,
  title TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  seen_seq INTEGER NOT NULL,
  position INTEGER NOT NULL,
  UNIQUE (site, url)
);
CREATE INDEX headlines_current ON headlines (site, seen_seq, position);
CREATE INDEX headlines_last_seen ON headlines (last_seen_ms);
)sql",
    // Version 2: the store's epoch (so SSE ids from another store are recognised), how far
    // pruning has deleted (so a replay that would miss deleted rows is recognised), and how
    // long each site's latest refresh took.
    R"sql(
CREATE TABLE meta (
  epoch TEXT NOT NULL,
  pruned_through INTEGER NOT NULL DEFAULT 0
);
INSERT INTO meta (epoch) VALUES (lower(hex(randomblob(16))));
ALTER TABLE sites ADD COLUMN last_elapsed_ms INTEGER NOT NULL DEFAULT 0;
)sql",
    // 2 -> 3: the kind of the latest failure (server/core/failure.hpp), by its label.
    R"sql(
ALTER TABLE sites ADD COLUMN last_failure TEXT NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(migrations) == sqlite_store::schema_version);

// How long a call waits for another connection (another process on the same file) to release
// its lock before failing: long enough for any refresh transaction, short enough to surface a
// stuck peer as an error.
constexpr int busy_timeout_ms = 5000;

constexpr const char* row_columns = "id, site, title, url, first_seen_ms, last_seen_ms";

} // namespace

struct sqlite_store::impl {
  // A prepared statement, finalised with its owner.
  struct statement {
    sqlite3_stmt* stmt = nullptr;
    statement() = default;
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement() { sqlite3_finalize(stmt); }
  };

  // Resets a statement when the scope that uses it ends, even by an exception, so no statement
  // is left mid-step holding a read snapshot.
  struct use {
    sqlite3_stmt* stmt;
    explicit use(statement& s)
        : stmt(s.stmt) {}
    use(const use&) = delete;
    use& operator=(const use&) = delete;
    ~use() {
      sqlite3_reset(stmt);
      sqlite3_clear_bindings(stmt);
    }
  };

  std::filesystem::path file;
  std::string name; // file as text, for messages
  std::string epoch;
  sqlite3* db = nullptr;
  mutable std::mutex mutex; // guards every use of db and the statements

  statement begin, commit, rollback;
  statement find_site, insert_site, count_sites, site_success, site_failure;
  statement find_headline, insert_headline, update_headline;
  statement select_current, select_sites, select_since, select_last_id, delete_old;
  statement select_pruned_through, update_pruned_through;

  explicit impl(std::filesystem::path f)
      : file(std::move(f))
      , name(file.string()) {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    // Statements first: sqlite3_close refuses while statements are open.
    for (auto* s : {&begin, &commit, &rollback, &find_site, &insert_site, &count_sites,
                    &site_success, &site_failure, &find_headline, &insert_headline,
                    &update_headline, &select_current, &select_sites, &select_since,
                    &select_last_id, &delete_old, &select_pruned_through, &update_pruned_through}) {
      sqlite3_finalize(s->stmt);
      s->stmt = nullptr;
    }
    sqlite3_close(db);
  }

  [[noreturn]] void fail(const std::string& what) const {
    std::string detail = db ? sqlite3_errmsg(db) : "out of memory";
    throw store_error("headline store " + file.string() + ": " + what + ": " + detail);
  }

  void exec(const char* sql, const char* what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
      fail(what);
  }

  std::int64_t query_int(const char* sql, const char* what) {
    statement s;
    if (sqlite3_prepare_v2(db, sql, -1, &s.stmt, nullptr) != SQLITE_OK)
      fail(what);
    int rc = sqlite3_step(s.stmt);
    if (rc == SQLITE_ROW)
      return sqlite3_column_int64(s.stmt, 0);
    if (rc == SQLITE_DONE)
      return 0;
    fail(what);
  }

  void prepare(statement& s, const std::string& sql) {
    if (sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s.stmt, nullptr) !=
        SQLITE_OK)
      fail("cannot prepare statement");
  }

  void bind(sqlite3_stmt* s, int i, std::string_view text) {
    if (sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) !=
        SQLITE_OK)
      fail("cannot bind a value");
  }
  void bind(sqlite3_stmt* s, int i, std::int64_t v) {
    if (sqlite3_bind_int64(s, i, v) != SQLITE_OK)
      fail("cannot bind a value");
  }

  // Steps once: true for a row, false when done; throws on error.
  bool step(sqlite3_stmt* s, const char* what) {
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
      return true;
    if (rc == SQLITE_DONE)
      return false;
    fail(what);
  }

  static std::string text_column(sqlite3_stmt* s, int i) {
    const auto* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
             : std::string();
  }

  static stored_headline row(sqlite3_stmt* s) {
    return {sqlite3_column_int64(s, 0), text_column(s, 1),          text_column(s, 2),
            text_column(s, 3),          sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5)};
  }

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back when it throws.
  template <class Body> auto transaction(Body&& body) {
    {
      use u(begin);
      step(u.stmt, "cannot begin a transaction");
    }
    try {
      if constexpr (std::is_void_v<decltype(body())>) {
        body();
        use u(commit);
        step(u.stmt, "cannot commit");
      } else {
        auto result = body();
        use u(commit);
        step(u.stmt, "cannot commit");
        return result;
      }
    } catch (...) {
      if (!sqlite3_get_autocommit(db)) {
        use u(rollback);
        sqlite3_step(u.stmt);
      }
      throw;
    }
  }

  // The site's refresh counter, creating the site's row when it is new. Inside a transaction.
  std::int64_t ensure_site(std::string_view site) {
    if (site.empty() || site.size() > store_limits::max_site_bytes)
      throw store_error("headline store " + file.string() + ": site name must be 1 to " +
                        std::to_string(store_limits::max_site_bytes) + " bytes");
    {
      use u(find_site);
      bind(u.stmt, 1, site);
      if (step(u.stmt, "cannot read sites"))
        return sqlite3_column_int64(u.stmt, 0);
    }
    {
      use u(count_sites);
      step(u.stmt, "cannot count sites");
      if (static_cast<std::size_t>(sqlite3_column_int64(u.stmt, 0)) >= store_limits::max_sites)
        throw store_error("headline store " + file.string() + ": refusing site \"" +
                          std::string(site) + "\": the store already holds " +
                          std::to_string(store_limits::max_sites) + " sites");
    }
    use u(insert_site);
    bind(u.stmt, 1, site);
    step(u.stmt, "cannot add a site");
    return 0;
  }

  void migrate() {
    const auto path = file.string();
    auto version = query_int("PRAGMA user_version", "cannot read the schema version");
    if (version > sqlite_store::schema_version)
      throw store_error("headline store " + path + " has schema version " +
                        std::to_string(version) + ", newer than this newsdesk understands (" +
                        std::to_string(sqlite_store::schema_version) +
                        "); run a newer newsdesk or point it at another file");
    if (version == sqlite_store::schema_version)
      return;
    exec("BEGIN IMMEDIATE", "cannot begin the schema migration");
    try {
      // Re-read under the write lock: another process may have migrated meanwhile.
      version = query_int("PRAGMA user_version", "cannot read the schema version");
      if (version == 0 &&
          query_int("SELECT count(*) FROM sqlite_schema", "cannot read the schema") != 0)
        throw store_error("headline store " + path +
                          " holds tables newsdesk did not create (schema version 0); point it "
                          "at a new or newsdesk file");
      for (auto v = version; v < sqlite_store::schema_version; ++v)
        exec(migrations[v], "cannot migrate the schema");
      auto set_version = "PRAGMA user_version = " + std::to_string(sqlite_store::schema_version);
      exec(set_version.c_str(), "cannot set the schema version");
      exec("COMMIT", "cannot commit the schema migration");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  void prepare_all() {
    prepare(begin, "BEGIN IMMEDIATE");
    prepare(commit, "COMMIT");
    prepare(rollback, "ROLLBACK");
    prepare(find_site, "SELECT refresh_seq FROM sites WHERE site = ?1");
    prepare(insert_site, "INSERT INTO sites (site) VALUES (?1)");
    prepare(count_sites, "SELECT count(*) FROM sites");
    prepare(site_success,
            "UPDATE sites SET last_attempt_ms = ?2, last_success_ms = ?2, "
            "last_error = '', last_failure = '', refresh_seq = ?3, last_elapsed_ms = ?4 "
            "WHERE site = ?1");
    prepare(site_failure, "UPDATE sites SET last_attempt_ms = ?2, last_error = ?3, "
                          "last_elapsed_ms = ?4, last_failure = ?5 WHERE site = ?1");
    prepare(find_headline, "SELECT id, first_seen_ms FROM headlines WHERE site = ?1 AND url = ?2");
    // Not an upsert: with AUTOINCREMENT, INSERT ... ON CONFLICT DO NOTHING still uses up an id,
    // and ids should only grow by the rows that exist.
    prepare(insert_headline,
            "INSERT INTO headlines (site, url, title, first_seen_ms, last_seen_ms, seen_seq, "
            "position) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)");
    prepare(update_headline, "UPDATE headlines SET title = ?2, last_seen_ms = ?3, seen_seq = ?4, "
                             "position = ?5 WHERE id = ?1");
    prepare(select_current, std::string("SELECT ") + row_columns +
                                " FROM headlines WHERE site = ?1 AND seen_seq = (SELECT "
                                "refresh_seq FROM sites WHERE site = ?1) ORDER BY position");
    prepare(select_sites, "SELECT site, last_attempt_ms, last_success_ms, last_error, "
                          "last_elapsed_ms, last_failure FROM sites ORDER BY site");
    prepare(select_since, std::string("SELECT ") + row_columns +
                              " FROM headlines WHERE id > ?1 ORDER BY id LIMIT ?2");
    prepare(select_last_id, "SELECT seq FROM sqlite_sequence WHERE name = 'headlines'");
    prepare(delete_old, "DELETE FROM headlines WHERE last_seen_ms < ?1 AND seen_seq <> "
                        "coalesce((SELECT refresh_seq FROM sites WHERE sites.site = "
                        "headlines.site), -1) RETURNING id");
    prepare(select_pruned_through, "SELECT pruned_through FROM meta");
    prepare(update_pruned_through, "UPDATE meta SET pruned_through = max(pruned_through, ?1)");
  }
};

sqlite_store::sqlite_store(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
sqlite_store::~sqlite_store() = default;

namespace {

// Why `file` cannot be the store, found before SQLite is asked: its messages ("unable to open
// database file", "file is not a database") name no cause. Empty when nothing is wrong yet.
std::string unusable_store_file(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  const auto name = file.string();
  if (name.empty() || name == ":memory:")
    return {};
  std::error_code ec;
  const auto dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return "its folder " + dir.string() + " does not exist (create it, or set --store)";
  const bool exists = fs::exists(file, ec);
  if (exists && fs::is_directory(file, ec))
    return "it is a folder, not a file";
  // SQLite writes the file, its journal and its WAL beside it: both must be writable.
  if (exists && ::access(name.c_str(), W_OK) != 0)
    return std::string(errno == EROFS ? "it is on a read-only filesystem"
                                      : "it is not writable by this user") +
           " (" + std::strerror(errno) + ")";
  if (::access(dir.c_str(), W_OK) != 0)
    return "its folder " + dir.string() +
           (errno == EROFS ? " is on a read-only filesystem" : " is not writable by this user") +
           " (SQLite keeps its journal there)";
  if (exists && fs::file_size(file, ec) > 0) {
    char magic[16] = {};
    std::ifstream in(file, std::ios::binary);
    in.read(magic, sizeof magic);
    if (std::string_view(magic, static_cast<std::size_t>(in.gcount())) !=
        std::string_view("SQLite format 3\0", 16))
      return "it is not an SQLite database (its first bytes are not \"SQLite format 3\")";
  }
  return {};
}

} // namespace

std::unique_ptr<sqlite_store> sqlite_store::open(const std::filesystem::path& file) {
  if (auto why = unusable_store_file(file); !why.empty())
    throw store_error("headline store " + file.string() + ": " + why);
  auto p = std::make_unique<impl>(file);
  const auto name = file.string();
  if (sqlite3_open_v2(name.c_str(), &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK)
    p->fail("cannot open");
  sqlite3_busy_timeout(p->db, busy_timeout_ms);
  // The first read of the file: a file that is not an SQLite database fails here.
  p->query_int("PRAGMA user_version", "cannot read (is it an SQLite database?)");
  p->migrate();
  if (name != ":memory:" && !name.empty()) {
    auto mode = [&] {
      impl::statement s;
      if (sqlite3_prepare_v2(p->db, "PRAGMA journal_mode = WAL", -1, &s.stmt, nullptr) !=
              SQLITE_OK ||
          sqlite3_step(s.stmt) != SQLITE_ROW)
        p->fail("cannot switch to WAL mode");
      return impl::text_column(s.stmt, 0);
    }();
    if (mode != "wal")
      throw store_error("headline store " + name + ": cannot switch to WAL mode (journal mode " +
                        mode + ")");
  }
  p->exec("PRAGMA synchronous = NORMAL", "cannot set synchronous mode");
  p->prepare_all();
  {
    impl::statement s;
    if (sqlite3_prepare_v2(p->db, "SELECT epoch FROM meta", -1, &s.stmt, nullptr) != SQLITE_OK ||
        sqlite3_step(s.stmt) != SQLITE_ROW)
      p->fail("cannot read the store's epoch");
    p->epoch = impl::text_column(s.stmt, 0);
  }
  return std::unique_ptr<sqlite_store>(new sqlite_store(std::move(p)));
}

const std::string& sqlite_store::location() const {
  return impl_->name;
}

const std::string& sqlite_store::epoch() const {
  return impl_->epoch;
}

std::int64_t sqlite_store::pruned_through() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::use u(d.select_pruned_through);
  return d.step(u.stmt, "cannot read the pruning mark") ? sqlite3_column_int64(u.stmt, 0) : 0;
}

refresh_written sqlite_store::record_refresh(std::string_view site,
                                             const std::vector<scrapers::headline>& found,
                                             const refresh_record& record) {
  const auto now_ms = record.now_ms;
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  return d.transaction([&] {
    const auto seq = d.ensure_site(site) + 1;
    refresh_written written;
    std::int64_t position = 0;
    for (const auto& [url, title] : store_input::rows_of(found)) {
      std::int64_t known = 0, first_seen_ms = now_ms;
      {
        impl::use u(d.find_headline);
        d.bind(u.stmt, 1, site);
        d.bind(u.stmt, 2, url);
        if (d.step(u.stmt, "cannot read headlines")) {
          known = sqlite3_column_int64(u.stmt, 0);
          first_seen_ms = sqlite3_column_int64(u.stmt, 1);
        }
      }
      if (known != 0) {
        impl::use u(d.update_headline);
        d.bind(u.stmt, 1, known);
        d.bind(u.stmt, 2, title);
        d.bind(u.stmt, 3, now_ms);
        d.bind(u.stmt, 4, seq);
        d.bind(u.stmt, 5, position);
        d.step(u.stmt, "cannot update a headline");
        written.current.push_back({known, std::string(site), std::string(title), std::string(url),
                                   first_seen_ms, now_ms});
      } else {
        impl::use u(d.insert_headline);
        d.bind(u.stmt, 1, site);
        d.bind(u.stmt, 2, url);
        d.bind(u.stmt, 3, title);
        d.bind(u.stmt, 4, now_ms);
        d.bind(u.stmt, 5, seq);
        d.bind(u.stmt, 6, position);
        d.step(u.stmt, "cannot store a headline");
        written.current.push_back({sqlite3_last_insert_rowid(d.db), std::string(site),
                                   std::string(title), std::string(url), now_ms, now_ms});
        written.added.push_back(written.current.back());
      }
      ++position;
    }
    impl::use u(d.site_success);
    d.bind(u.stmt, 1, site);
    d.bind(u.stmt, 2, now_ms);
    d.bind(u.stmt, 3, seq);
    d.bind(u.stmt, 4, record.elapsed_ms);
    d.step(u.stmt, "cannot record the refresh");
    return written;
  });
}

void sqlite_store::record_failure(std::string_view site, std::string_view error,
                                  const refresh_record& record) {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  auto notice = store_input::failure_notice(error);
  d.transaction([&] {
    d.ensure_site(site);
    impl::use u(d.site_failure);
    d.bind(u.stmt, 1, site);
    d.bind(u.stmt, 2, record.now_ms);
    d.bind(u.stmt, 3, notice);
    d.bind(u.stmt, 4, record.elapsed_ms);
    d.bind(u.stmt, 5, to_string(record.failure));
    d.step(u.stmt, "cannot record the failure");
  });
}

std::vector<stored_headline> sqlite_store::current(std::string_view site) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  std::vector<stored_headline> out;
  impl::use u(d.select_current);
  d.bind(u.stmt, 1, site);
  while (d.step(u.stmt, "cannot read current headlines"))
    out.push_back(impl::row(u.stmt));
  return out;
}

std::vector<site_state> sqlite_store::sites() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  std::vector<site_state> out;
  impl::use u(d.select_sites);
  while (d.step(u.stmt, "cannot read sites"))
    out.push_back({impl::text_column(u.stmt, 0), sqlite3_column_int64(u.stmt, 1),
                   sqlite3_column_int64(u.stmt, 2), impl::text_column(u.stmt, 3),
                   sqlite3_column_int64(u.stmt, 4),
                   failure_kind_from(impl::text_column(u.stmt, 5))});
  return out;
}

std::vector<stored_headline> sqlite_store::since(std::int64_t after_id, std::size_t limit) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  std::vector<stored_headline> out;
  limit = std::min(limit, store_limits::max_since_rows);
  if (limit == 0)
    return out;
  impl::use u(d.select_since);
  d.bind(u.stmt, 1, after_id);
  d.bind(u.stmt, 2, static_cast<std::int64_t>(limit));
  while (d.step(u.stmt, "cannot read headlines"))
    out.push_back(impl::row(u.stmt));
  return out;
}

std::int64_t sqlite_store::last_id() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::use u(d.select_last_id);
  return d.step(u.stmt, "cannot read the last id") ? sqlite3_column_int64(u.stmt, 0) : 0;
}

std::size_t sqlite_store::prune(std::int64_t older_than_ms) {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  return d.transaction([&] {
    std::size_t deleted = 0;
    std::int64_t newest = 0;
    {
      impl::use u(d.delete_old);
      d.bind(u.stmt, 1, older_than_ms);
      while (d.step(u.stmt, "cannot prune")) {
        ++deleted;
        newest = std::max<std::int64_t>(newest, sqlite3_column_int64(u.stmt, 0));
      }
    }
    if (deleted) {
      impl::use u(d.update_pruned_through);
      d.bind(u.stmt, 1, newest);
      d.step(u.stmt, "cannot record the pruning mark");
    }
    return deleted;
  });
}

} // namespace newsdesk::server
