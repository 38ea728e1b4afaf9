// The SQLite store's insides, shared by its two source files: sqlite_store.cpp (opening, the
// schema, headlines and sites) and sqlite_stories.cpp (stories and their merge log). Not part of
// the store's surface: only those two files include it.
#pragma once

#include "server/store/sqlite_store.hpp"
#include "server/store/story_keeper.hpp"

#include <sqlite3.h>

#include <mutex>
#include <string>
#include <type_traits>

namespace newsdesk::server {

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

  // The connection, closed after every statement below is finalised (members are destroyed in
  // reverse order, and sqlite3_close refuses while statements are open).
  struct connection {
    sqlite3* db = nullptr;
    connection() = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() { sqlite3_close(db); }
  };

  std::filesystem::path file;
  std::string name; // file as text, for messages
  std::string epoch;
  // The file opened (device and inode): a file deleted or replaced under the running process is
  // told apart from it (identity_problem). 0: in memory.
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool created = false; // no file was there: open() made one
  connection conn;
  sqlite3*& db = conn.db;
  mutable std::mutex mutex; // guards every use of db, the statements and `keeper`
  story_keeper keeper;

  statement begin, commit, rollback;
  statement find_site, insert_site, count_sites, site_success, site_failure;
  statement find_headline, insert_headline, update_headline;
  statement select_current, select_sites, select_since, select_last_id, delete_old;
  statement select_pruned_through, update_pruned_through;
  // Stories (sqlite_stories.cpp).
  statement select_replay, select_replay_merges, move_story, insert_merge, select_story;
  statement select_merges_after, select_last_merge, delete_old_merges;

  impl(std::filesystem::path f, stories::grouping_factory make_grouping)
      : file(std::move(f))
      , name(file.string())
      , keeper(std::move(make_grouping)) {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

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

  // The columns every headline read selects, in this order (row() reads them).
  static constexpr const char* row_columns =
      "id, site, title, url, first_seen_ms, last_seen_ms, story, coalesce(published_ms, 0), "
      "first_look, language, summary, image";
  static stored_headline row(sqlite3_stmt* s) {
    stored_headline h{sqlite3_column_int64(s, 0), text_column(s, 1),
                      text_column(s, 2),          text_column(s, 3),
                      sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5),
                      sqlite3_column_int64(s, 6)};
    if (const auto published = sqlite3_column_int64(s, 7); published != 0)
      h.published_ms = published;
    h.first_look = sqlite3_column_int64(s, 8) != 0;
    h.language = text_column(s, 9);
    h.summary = text_column(s, 10);
    h.image = text_column(s, 11);
    return h;
  }

  // Every row the statement gives, as headlines.
  std::vector<stored_headline> rows(use& u, const char* what) {
    std::vector<stored_headline> out;
    while (step(u.stmt, what))
      out.push_back(row(u.stmt));
    return out;
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

  // The largest id ever assigned (AUTOINCREMENT's counter, which explicit ids move on as well).
  std::int64_t last_id() {
    use u(select_last_id);
    return step(u.stmt, "cannot read the last id") ? sqlite3_column_int64(u.stmt, 0) : 0;
  }

  // sqlite_store.cpp
  std::int64_t ensure_site(std::string_view site);
  void migrate();
  void prepare_all();

  // sqlite_stories.cpp
  void prepare_stories();
  // Every merge log entry the statement gives (seq, from, into).
  std::vector<logged_merge> logged_merges(use& u);
  // Observes the rows and merges committed since the grouping last looked (see story_keeper).
  void catch_up_stories();
  // Moves the rows of each merge's story into the surviving one and appends it to the log.
  void log_merges(const std::vector<stories::story_merge>& merges, std::int64_t now_ms);
};

} // namespace newsdesk::server
