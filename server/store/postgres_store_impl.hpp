// The PostgreSQL store's insides, shared by its source files: postgres_store.cpp (opening, the
// schema, headlines and sites), postgres_schedule.cpp (claims, leases and the event log) and
// postgres_stories.cpp (stories and their merge log). Not part of the store's surface: only those
// files include it.
#pragma once

#include "server/core/log.hpp"
#include "server/store/postgres_notices.hpp"
#include "server/store/postgres_refusals.hpp"
#include "server/store/postgres_store.hpp"
#include "server/store/story_keeper.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace newsdesk::server {

namespace detail {

// The advisory lock every write takes first, so writes are serialised (any constant other
// programs on the database are unlikely to use).
constexpr long long writer_lock = 7'242'002;

// The columns every headline read selects, in this order (headline_at reads them).
constexpr const char* row_columns = "id, site, title, url, first_seen_ms, last_seen_ms, story, "
                                    "coalesce(published_ms, 0), first_look, language, summary";

// libpq's messages end with a newline and may span lines; a log line wants one.
inline std::string one_line(const char* text) {
  std::string out = text ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    out.pop_back();
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

// PostgreSQL text cannot hold NUL bytes; scraped text might.
inline std::string without_nul(std::string_view text) {
  std::string out(text);
  out.erase(std::remove(out.begin(), out.end(), '\0'), out.end());
  return out;
}

// A text[] literal: every element quoted, quotes and backslashes escaped.
inline std::string array_literal(const std::vector<std::string>& items) {
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

inline std::int64_t int_at(const result& r, int row, int column) {
  return PQgetisnull(r.get(), row, column) ? 0 : std::stoll(PQgetvalue(r.get(), row, column));
}
inline std::string text_at(const result& r, int row, int column) {
  return std::string(PQgetvalue(r.get(), row, column),
                     static_cast<std::size_t>(PQgetlength(r.get(), row, column)));
}
inline bool bool_at(const result& r, int row, int column) {
  return !PQgetisnull(r.get(), row, column) && PQgetvalue(r.get(), row, column)[0] == 't';
}

inline stored_headline headline_at(const result& r, int row) {
  stored_headline h{int_at(r, row, 0), text_at(r, row, 1), text_at(r, row, 2), text_at(r, row, 3),
                    int_at(r, row, 4), int_at(r, row, 5),  int_at(r, row, 6)};
  if (const auto published = int_at(r, row, 7); published != 0)
    h.published_ms = published;
  h.first_look = text_at(r, row, 8) == "t";
  h.language = text_at(r, row, 9);
  h.summary = text_at(r, row, 10);
  return h;
}

// Every row of `r`, as headlines.
inline std::vector<stored_headline> headlines_of(const result& r) {
  std::vector<stored_headline> out;
  for (int i = 0; i < PQntuples(r.get()); ++i)
    out.push_back(headline_at(r, i));
  return out;
}

} // namespace detail

struct postgres_store::impl {
  std::string url;
  std::string location; // url without the password
  std::string epoch;

  // The connections the pool may open: the budget less the listener's.
  const std::size_t budget;
  const std::size_t pool_size;

  std::mutex mutex; // guards idle, open and the fields after them
  std::condition_variable freed;
  std::vector<PGconn*> idle;
  std::size_t open = 0;
  // PostgreSQL refused a connection for want of slots: until `grow_again_at` the pool opens no
  // more than `ceiling`. `short_of_slots`: that was logged, and not yet that it passed.
  std::size_t ceiling = 0;
  std::chrono::steady_clock::time_point grow_again_at{};
  bool short_of_slots = false;

  // Held through each record_refresh, commit included, and guards `keeper`. The writer lock
  // orders writes across instances; this one orders this process's own, so that a write that
  // fails after assigning drops the grouping before the next write of this process uses it.
  std::mutex write_mutex;
  story_keeper keeper;

  impl(std::string u, store_options options)
      : url(std::move(u))
      , location(without_password(url))
      , budget(options.max_connections)
      , pool_size(options.max_connections > 1 ? options.max_connections - 1 : 1)
      , keeper(std::move(options.make_grouping)) {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    for (auto* c : idle)
      PQfinish(c);
  }

  [[noreturn]] void fail(const std::string& what, const char* cause) const {
    throw store_error("headline store " + location + ": " + what + ": " + detail::one_line(cause));
  }
  // A connection could not be opened or reset: out of slots is said with the budget.
  [[noreturn]] void fail_to_connect(const std::string& cause) const {
    const auto said = detail::one_line(cause.c_str());
    if (out_of_connection_slots(said))
      throw store_error("headline store " + location + ": " + out_of_slots_message(said, budget));
    fail("cannot connect", said.c_str());
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

  // How many connections the pool may have open now. Under `mutex`.
  std::size_t allowed_locked() const {
    return std::chrono::steady_clock::now() < grow_again_at ? ceiling : pool_size;
  }

  // After a refusal for want of slots: make do with `open` for slot_retry. Under `mutex`;
  // true when this is news (the caller logs it once).
  bool make_do_locked() {
    ceiling = open;
    grow_again_at = std::chrono::steady_clock::now() + slot_retry;
    return !std::exchange(short_of_slots, true);
  }

  void log_short_of_slots(const std::string& cause, std::size_t kept) const {
    log_warn("msg=\"postgres connection slots exhausted\" store=" + logfmt_quoted(location) +
             " connections=" + std::to_string(kept) +
             " error=" + logfmt_quoted(out_of_slots_message(cause, budget)) +
             " detail=\"working on with the connections open; queries wait their turn\"");
  }

  // A connection from the pool: an idle one, a new one while fewer than allowed are open, else
  // the next one freed. A broken one is reset first. Throws when the database cannot be reached,
  // or has no slot for this instance's first connection.
  PGconn* acquire() {
    for (;;) {
      PGconn* c = nullptr;
      {
        std::unique_lock lock(mutex);
        freed.wait(lock, [&] { return !idle.empty() || open < allowed_locked(); });
        if (!idle.empty()) {
          c = idle.back();
          idle.pop_back();
        } else {
          ++open;
        }
      }
      std::string cause;
      if (c) {
        if (PQstatus(c) == CONNECTION_OK)
          return c;
        PQreset(c);
        if (PQstatus(c) == CONNECTION_OK)
          return c;
        cause = detail::one_line(PQerrorMessage(c));
        if (!out_of_connection_slots(cause)) {
          give_back(c); // reset again on its next use
          fail_to_connect(cause);
        }
      } else {
        c = connect();
        if (c && PQstatus(c) == CONNECTION_OK) {
          grew();
          return c;
        }
        cause = detail::one_line(c ? PQerrorMessage(c) : "out of memory");
      }
      PQfinish(c);
      bool make_do = false, news = false;
      std::size_t kept = 0;
      {
        std::lock_guard lock(mutex);
        kept = --open;
        // With connections open, waiting for one of them beats failing the call: the instance
        // stays on its feet instead of reporting the store unreachable on every busy moment.
        make_do = kept > 0 && out_of_connection_slots(cause);
        if (make_do)
          news = make_do_locked();
      }
      freed.notify_one();
      if (!make_do)
        fail_to_connect(cause);
      if (news)
        log_short_of_slots(cause, kept);
    }
  }

  // A new connection opened: past the ceiling a refusal set, the shortage is over.
  void grew() {
    {
      std::lock_guard lock(mutex);
      if (!short_of_slots || open <= ceiling)
        return;
      short_of_slots = false;
    }
    log_info("msg=\"postgres connection slots available again\" store=" + logfmt_quoted(location));
  }

  // See cluster_store::yield_connection.
  void yield_connection() {
    PGconn* closed = nullptr;
    bool news = false;
    std::size_t kept = 0;
    {
      std::lock_guard lock(mutex);
      if (!idle.empty() && open > 1) {
        closed = idle.back();
        idle.pop_back();
        kept = --open;
        news = make_do_locked();
      } else if (open > 0) {
        news = make_do_locked(); // every connection is busy: at least open no more
        kept = open;
      }
    }
    PQfinish(closed);
    if (news)
      log_short_of_slots("the LISTEN connection was refused", kept);
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
  detail::result run(PGconn* c, const char* sql, const std::vector<std::string>& params,
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
  detail::result run(PGconn* c, const char* sql, const char* what) const {
    return checked(c, PQexec(c, sql), what);
  }
  detail::result checked(PGconn* c, PGresult* raw, const char* what) const {
    detail::result r(raw);
    auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string cause = r ? PQresultErrorMessage(r.get()) : PQerrorMessage(c);
      const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
      if (state && std::string_view(state) == "42501") // insufficient_privilege
        cause = detail::one_line(cause.c_str()) + privilege_hint();
      fail(what, cause.c_str());
    }
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
      detail::result(PQexec(l.conn, "ROLLBACK"));
      throw;
    }
  }

  template <class Body> auto with_connection(Body&& body) {
    lease l(*this);
    return body(l.conn);
  }

  // postgres_store.cpp
  void migrate();
  // Inside a write: the writer lock, then the lease check when the write names an owner.
  void begin_write(PGconn* c, std::string_view site, const refresh_record& record);
  // The site's refresh counter, creating its row when it is new. Inside a write.
  std::int64_t ensure_site(PGconn* c, std::string_view site);
  // The end of every write: one event, the lease ended with the next due time, one notification.
  void end_write(PGconn* c, std::string_view site, const refresh_record& record,
                 std::int64_t new_last_id);

  // postgres_schedule.cpp
  std::chrono::milliseconds share_wait_left(PGconn* c, const std::string& site,
                                            const std::string& owner);

  // postgres_stories.cpp
  // Observes the rows and merges committed since the grouping last looked (see story_keeper).
  // Inside a write (under the writer lock), or at open.
  void catch_up_stories(PGconn* c);
  // Moves the rows of each merge's story into the surviving one and appends it to the log.
  void log_merges(PGconn* c, const std::vector<stories::story_merge>& merges, std::int64_t now_ms);
};

} // namespace newsdesk::server
