#include "server/store/sqlite_store.hpp"

#include "server/store/sqlite_store_impl.hpp"
#include "server/store/store_input.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

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
    // 3 -> 4: stories. Each row's story (a row stored before is a story of its own), found by
    // story for a story's view and for merges; rows by first-seen time for the catch-up of the
    // story assignment; and the log of merges, whose seq a reader follows (AUTOINCREMENT: never
    // reused after pruning).
    R"sql(
ALTER TABLE headlines ADD COLUMN story INTEGER NOT NULL DEFAULT 0;
UPDATE headlines SET story = id;
CREATE INDEX headlines_story ON headlines (story);
CREATE INDEX headlines_first_seen ON headlines (first_seen_ms);
CREATE TABLE story_merges (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  from_story INTEGER NOT NULL,
  into_story INTEGER NOT NULL,
  made_ms INTEGER NOT NULL
);
)sql",
    // 4 -> 5: each site's icon (favicon), and when it was last tried (server/news/site_icons).
    R"sql(
CREATE TABLE site_icons (
  site TEXT PRIMARY KEY NOT NULL,
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  etag TEXT NOT NULL DEFAULT '',
  checked_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
)sql",
    // 5 -> 6: true times. When a headline's source says it was published (NULL: not said), and
    // whether its site's first successful refresh found it (then it has no "seen" age to show).
    R"sql(
ALTER TABLE headlines ADD COLUMN published_ms INTEGER;
ALTER TABLE headlines ADD COLUMN first_look INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6 -> 7: the language each headline is written in ('' in older rows), which its story's
    // assignment reads again after a restart.
    R"sql(
ALTER TABLE headlines ADD COLUMN language TEXT NOT NULL DEFAULT '';
)sql",
    // 7 -> 8: a line of summary per headline (a feed item's description), shown under a
    // story's lead.
    R"sql(
ALTER TABLE headlines ADD COLUMN summary TEXT NOT NULL DEFAULT '';
)sql",
    // 8 -> 9: pictures. Each headline's picture URL, and the pictures fetched (server/pictures/):
    // by source URL (fetched once), served by name, dropped oldest first per site.
    R"sql(
ALTER TABLE headlines ADD COLUMN image TEXT NOT NULL DEFAULT '';
CREATE TABLE pictures (
  source TEXT PRIMARY KEY NOT NULL,
  site TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  content_type TEXT NOT NULL DEFAULT '',
  body BLOB NOT NULL DEFAULT x'',
  width INTEGER NOT NULL DEFAULT 0,
  height INTEGER NOT NULL DEFAULT 0,
  tried_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX pictures_name ON pictures (name);
CREATE INDEX pictures_site ON pictures (site, tried_ms);
)sql",
};
static_assert(std::size(migrations) == sqlite_store::schema_version);

// How long a call waits for another connection (another process on the same file) to release
// its lock before failing: long enough for any refresh transaction, short enough to surface a
// stuck peer as an error.
constexpr int busy_timeout_ms = 5000;

} // namespace

// The site's refresh counter, creating the site's row when it is new. Inside a transaction.
std::int64_t sqlite_store::impl::ensure_site(std::string_view site) {
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

void sqlite_store::impl::migrate() {
  const auto path = file.string();
  auto version = query_int("PRAGMA user_version", "cannot read the schema version");
  if (version > sqlite_store::schema_version)
    throw store_error("headline store " + path + " has schema version " + std::to_string(version) +
                      ", newer than this newsdesk understands (" +
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

void sqlite_store::impl::prepare_all() {
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
  prepare(find_headline,
          "SELECT id, first_seen_ms, story, published_ms, first_look, language FROM headlines "
          "WHERE site = ?1 AND url = ?2");
  // The id is given (the last one + 1, under the write lock): the story assignment needs it
  // before the row exists. AUTOINCREMENT's counter follows explicit ids, so ids are still never
  // reused after pruning.
  prepare(insert_headline,
          "INSERT INTO headlines (id, site, url, title, first_seen_ms, last_seen_ms, seen_seq, "
          "position, story, published_ms, first_look, language, summary, image) VALUES (?1, ?2, "
          "?3, ?4, ?5, ?5, ?6, ?7, ?8, nullif(?9, 0), ?10, ?11, ?12, ?13)");
  prepare(update_headline, "UPDATE headlines SET title = ?2, last_seen_ms = ?3, seen_seq = ?4, "
                           "position = ?5, summary = ?6, image = ?7 WHERE id = ?1");
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
  prepare_stories();
}

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

std::unique_ptr<sqlite_store> sqlite_store::open(const std::filesystem::path& file,
                                                 store_options options) {
  if (auto why = unusable_store_file(file); !why.empty())
    throw store_error("headline store " + file.string() + ": " + why);
  auto p = std::make_unique<impl>(file, std::move(options.make_grouping));
  const auto name = file.string();
  const bool in_memory = name.empty() || name == ":memory:";
  std::error_code missing;
  if (!in_memory && !std::filesystem::exists(file, missing))
    p->created = true;
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
  p->catch_up_stories();
  if (struct stat st{}; !in_memory && ::stat(name.c_str(), &st) == 0) {
    p->device = static_cast<std::uint64_t>(st.st_dev);
    p->inode = static_cast<std::uint64_t>(st.st_ino);
  }
  return std::unique_ptr<sqlite_store>(new sqlite_store(std::move(p)));
}

const std::string& sqlite_store::location() const {
  return impl_->name;
}

const std::string& sqlite_store::epoch() const {
  return impl_->epoch;
}

bool sqlite_store::created() const {
  return impl_->created;
}

std::string sqlite_store::identity_problem() const {
  auto& d = *impl_;
  if (d.inode == 0)
    return {};
  struct stat st {};
  if (::stat(d.name.c_str(), &st) != 0)
    return "the store file " + d.name + " was deleted while newsdesk ran (" + std::strerror(errno) +
           "): what is written now is lost at the next start";
  if (static_cast<std::uint64_t>(st.st_dev) != d.device ||
      static_cast<std::uint64_t>(st.st_ino) != d.inode)
    return "the store file " + d.name +
           " was replaced by another file while newsdesk ran: this process still writes the old "
           "one";
  // Cut short (truncated to nothing, or overwritten): its header is gone. (Its size says little:
  // in WAL mode the newest pages live beside it until a checkpoint.)
  char magic[16] = {};
  std::ifstream in(d.file, std::ios::binary);
  in.read(magic, sizeof magic);
  if (std::string_view(magic, static_cast<std::size_t>(in.gcount())) !=
      std::string_view("SQLite format 3\0", 16))
    return "the store file " + d.name + " was truncated or overwritten while newsdesk ran (" +
           std::to_string(st.st_size) + " bytes, no SQLite header)";
  return {};
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
  return d.keeper.write([&] {
    return d.transaction([&] {
      d.catch_up_stories();
      const auto seq = d.ensure_site(site) + 1;
      auto next_id = d.last_id();
      refresh_written written;
      std::int64_t position = 0;
      for (const auto& [url, title, published_ms, language, summary, image] :
           store_input::rows_of(found)) {
        stored_headline row{0,     std::string(site), std::string(title), std::string(url), now_ms,
                            now_ms};
        row.published_ms = published_ms;
        row.first_look = seq == 1;
        row.language = language;
        row.summary = summary;
        row.image = image;
        {
          impl::use u(d.find_headline);
          d.bind(u.stmt, 1, site);
          d.bind(u.stmt, 2, url);
          if (d.step(u.stmt, "cannot read headlines")) {
            row.id = sqlite3_column_int64(u.stmt, 0);
            row.first_seen_ms = sqlite3_column_int64(u.stmt, 1);
            row.story = sqlite3_column_int64(u.stmt, 2);
            row.published_ms = sqlite3_column_type(u.stmt, 3) == SQLITE_NULL
                                   ? std::nullopt
                                   : std::optional(sqlite3_column_int64(u.stmt, 3));
            row.first_look = sqlite3_column_int64(u.stmt, 4) != 0;
            row.language = impl::text_column(u.stmt, 5);
          }
        }
        if (row.id != 0) {
          impl::use u(d.update_headline);
          d.bind(u.stmt, 1, row.id);
          d.bind(u.stmt, 2, title);
          d.bind(u.stmt, 3, now_ms);
          d.bind(u.stmt, 4, seq);
          d.bind(u.stmt, 5, position);
          d.bind(u.stmt, 6, summary);
          d.bind(u.stmt, 7, image);
          d.step(u.stmt, "cannot update a headline");
        } else {
          row.id = ++next_id;
          d.keeper.assign(row, written.merges);
          impl::use u(d.insert_headline);
          d.bind(u.stmt, 1, row.id);
          d.bind(u.stmt, 2, site);
          d.bind(u.stmt, 3, url);
          d.bind(u.stmt, 4, title);
          d.bind(u.stmt, 5, now_ms);
          d.bind(u.stmt, 6, seq);
          d.bind(u.stmt, 7, position);
          d.bind(u.stmt, 8, row.story);
          d.bind(u.stmt, 9, row.published_ms.value_or(0));
          d.bind(u.stmt, 10, std::int64_t{row.first_look ? 1 : 0});
          d.bind(u.stmt, 11, row.language);
          d.bind(u.stmt, 12, row.summary);
          d.bind(u.stmt, 13, row.image);
          d.step(u.stmt, "cannot store a headline");
          written.added.push_back(row);
        }
        written.current.push_back(std::move(row));
        ++position;
      }
      // A merge may move rows this write stored before making it: the log's UPDATE moves them
      // in the file, apply_merges in what is returned.
      d.log_merges(written.merges, now_ms);
      apply_merges(written.current, written.merges);
      apply_merges(written.added, written.merges);
      impl::use u(d.site_success);
      d.bind(u.stmt, 1, site);
      d.bind(u.stmt, 2, now_ms);
      d.bind(u.stmt, 3, seq);
      d.bind(u.stmt, 4, record.elapsed_ms);
      d.step(u.stmt, "cannot record the refresh");
      return written;
    });
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
  return d.last_id();
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
    impl::use u(d.delete_old_merges);
    d.bind(u.stmt, 1, static_cast<std::int64_t>(story_keeper::replay_period.count()));
    d.step(u.stmt, "cannot prune the story merges");
    return deleted;
  });
}

// Icons are a few per site per day: statements are prepared per call rather than kept.
void sqlite_store::record_icon(const site_icon& icon) {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  if (icon.site.empty() || icon.site.size() > store_limits::max_site_bytes)
    throw store_error("headline store " + d.file.string() + ": site name must be 1 to " +
                      std::to_string(store_limits::max_site_bytes) + " bytes");
  impl::statement s;
  d.prepare(s,
            icon.has_image()
                ? "INSERT INTO site_icons (site, content_type, body, etag, checked_ms, error) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (site) DO UPDATE SET "
                  "content_type = excluded.content_type, body = excluded.body, "
                  "etag = excluded.etag, checked_ms = excluded.checked_ms, error = excluded.error"
                : "INSERT INTO site_icons (site, checked_ms, error) VALUES (?1, ?5, ?6) "
                  "ON CONFLICT (site) DO UPDATE SET checked_ms = excluded.checked_ms, "
                  "error = excluded.error");
  d.bind(s.stmt, 1, icon.site);
  if (icon.has_image()) {
    d.bind(s.stmt, 2, icon.content_type);
    if (sqlite3_bind_blob64(s.stmt, 3, icon.body.data(), icon.body.size(), SQLITE_TRANSIENT) !=
        SQLITE_OK)
      d.fail("cannot bind a value");
    d.bind(s.stmt, 4, icon.etag);
  }
  d.bind(s.stmt, 5, icon.checked_ms);
  d.bind(s.stmt, 6, icon.error);
  d.step(s.stmt, "cannot record a site icon");
}

namespace {

site_icon icon_of(sqlite3_stmt* s, bool with_body) {
  site_icon icon;
  auto text = [s](int i) {
    const auto* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
             : std::string();
  };
  icon.site = text(0);
  icon.content_type = text(1);
  icon.etag = text(2);
  icon.checked_ms = sqlite3_column_int64(s, 3);
  icon.error = text(4);
  if (with_body) {
    const auto* p = sqlite3_column_blob(s, 5);
    icon.body.assign(p ? static_cast<const char*>(p) : "",
                     static_cast<std::size_t>(sqlite3_column_bytes(s, 5)));
  } else if (sqlite3_column_int64(s, 5) > 0) {
    icon.body = "-"; // has_image() without the bytes
  }
  return icon;
}

} // namespace

std::optional<site_icon> sqlite_store::icon(std::string_view site) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::statement s;
  d.prepare(s, "SELECT site, content_type, etag, checked_ms, error, body FROM site_icons "
               "WHERE site = ?1");
  d.bind(s.stmt, 1, site);
  if (!d.step(s.stmt, "cannot read a site icon"))
    return std::nullopt;
  return icon_of(s.stmt, true);
}

std::vector<site_icon> sqlite_store::icons() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::statement s;
  d.prepare(s, "SELECT site, content_type, etag, checked_ms, error, length(body) FROM site_icons "
               "ORDER BY site");
  std::vector<site_icon> out;
  while (d.step(s.stmt, "cannot read site icons"))
    out.push_back(icon_of(s.stmt, false));
  return out;
}

} // namespace newsdesk::server
