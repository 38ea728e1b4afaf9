// The PostgreSQL store's insides, shared by its source files: postgres_store.cpp (opening, the
// schema, headlines and sites), postgres_schedule.cpp (claims, leases and the event log) and
// postgres_stories.cpp (stories and their merge log). Not part of the store's surface: only those
// files include it.
#pragma once

#include "server/core/log.hpp"
#include "server/store/postgres_call.hpp"
#include "server/store/postgres_notices.hpp"
#include "server/store/postgres_refusals.hpp"
#include "server/store/postgres_store.hpp"
#include "server/store/story_keeper.hpp"

#include <libpq-fe.h>
#include <poll.h>

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
constexpr const char* row_columns =
    "id, site, title, url, first_seen_ms, last_seen_ms, story, "
    "coalesce(published_ms, 0), first_look, language, summary, image";

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

using pg::result;

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
  h.image = text_at(r, row, 11);
  return h;
}

// Every row of `r`, as headlines.
inline std::vector<stored_headline> headlines_of(const result& r) {
  std::vector<stored_headline> out;
  for (int i = 0; i < PQntuples(r.get()); ++i)
    out.push_back(headline_at(r, i));
  return out;
}

// Bytes as hex and back: a body (an icon's, a picture's) travels as a text parameter (decode($n,
// 'hex')), so its NUL bytes never meet libpq's C strings.
inline std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

inline std::string from_hex(std::string_view hex) {
  auto value = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1]));
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
  // Each round trip's bound (store_options::call_timeout), and what slower calls get: those the
  // server bounds itself with its statement timeout (migrations, the story rebuild at open,
  // pruning), which the client's bound then only backs up.
  const std::chrono::milliseconds timeout;
  const std::chrono::milliseconds long_timeout;
  const pg::conninfo info;

  std::mutex mutex; // guards idle, open and the fields after them
  std::condition_variable freed;
  std::vector<PGconn*> idle;
  std::size_t open = 0;
  // PostgreSQL refused a connection for want of slots: until `grow_again_at` the pool opens no
  // more than `ceiling`. `short_of_slots`: that was logged, and not yet that it passed.
  std::size_t ceiling = 0;
  std::chrono::steady_clock::time_point grow_again_at{};
  bool short_of_slots = false;
  // The database stopped answering: a call timed out, a connection broke or none could be
  // opened. Until one answers again (any call, or answered()), calls fail at once with `outage`,
  // one at a time being let through to find out (`trying`): a frozen database holds at most one
  // pool thread of this instance, for one timeout, instead of every thread that asks. A refused
  // login is an outage too (`login_refused`: it is said as such).
  std::string outage;
  std::string refusal; // the outage is a refused login: the server's words
  bool trying = false;

  // Held through each record_refresh, commit included, and guards `keeper`. The writer lock
  // orders writes across instances; this one orders this process's own, so that a write that
  // fails after assigning drops the grouping before the next write of this process uses it.
  std::mutex write_mutex;
  story_keeper keeper;

  // The server's own bound on a statement (set on every pool connection).
  static constexpr std::chrono::milliseconds statement_timeout{10'000};

  impl(std::string u, store_options options)
      : url(std::move(u))
      , location(without_password(url))
      , budget(options.max_connections)
      , pool_size(options.max_connections > 1 ? options.max_connections - 1 : 1)
      , timeout(options.call_timeout)
      , long_timeout(statement_timeout + options.call_timeout)
      , info(url, "newsdesk", options.call_timeout,
             "-c statement_timeout=" + std::to_string(statement_timeout.count()))
      , keeper(std::move(options.make_grouping)) {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    for (auto* c : idle)
      PQfinish(c);
  }

  [[noreturn]] void fail(const std::string& what, const char* cause) const {
    throw store_error("headline store " + location + ": " + what + ": " + pg::one_line(cause));
  }
  // A connection could not be opened: out of slots is said with the budget, a refused login
  // with what to check.
  [[noreturn]] void fail_to_connect(const std::string& cause) const {
    const auto said = pg::one_line(cause.c_str());
    if (out_of_connection_slots(said))
      throw store_error("headline store " + location + ": " + out_of_slots_message(said, budget));
    if (auto refused = login_refusal(said); !refused.empty())
      throw store_login_refused(
          "headline store " + location + ": " + login_refusal_message(refused), refused);
    fail("cannot connect", said.c_str());
  }

  // A new connection, or null with `error`; within the timeout.
  PGconn* connect(std::string& error) const {
    PGconn* c = pg::connect_within(info, timeout, error);
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

  // The database answered, or did not: see `outage`.
  void answered() {
    std::lock_guard lock(mutex);
    outage.clear();
    refusal.clear();
  }
  void unanswered(const std::string& error, std::string refused = {}) {
    std::lock_guard lock(mutex);
    outage = error;
    refusal = std::move(refused);
  }

  // A connection from the pool, `trial` set when it is the one call let through an outage: an
  // idle one, a new one while fewer than allowed are open, else the next one freed, waiting at
  // most the timeout. Throws when the database cannot be reached, or has no slot for this
  // instance's first connection, or (during an outage) another call is finding out.
  PGconn* acquire(bool& trial) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      PGconn* c = nullptr;
      {
        std::unique_lock lock(mutex);
        const auto can_go = [&] {
          return (!outage.empty() && trying) || !idle.empty() || open < allowed_locked();
        };
        if (!freed.wait_until(lock, deadline, can_go))
          throw store_error("headline store " + location + ": no connection free within " +
                            std::to_string(timeout.count()) + " ms (every one is in use)");
        if (!outage.empty()) {
          if (trying) {
            if (!refusal.empty())
              throw store_login_refused(outage, refusal);
            throw store_error(outage);
          }
          trying = trial = true;
        }
        if (!idle.empty()) {
          c = idle.back();
          idle.pop_back();
        } else {
          ++open;
        }
      }
      if (c) {
        if (PQstatus(c) == CONNECTION_OK)
          return c;
        PQfinish(c); // broken while idle: a new one in its place
        c = nullptr;
      }
      std::string cause;
      c = connect(cause);
      if (c) {
        grew();
        return c;
      }
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
      if (!make_do) {
        finished_trial(trial);
        try {
          fail_to_connect(cause);
        } catch (const store_login_refused& e) {
          unanswered(e.what(), e.refusal());
          throw;
        } catch (const store_error& e) {
          if (!out_of_connection_slots(cause))
            unanswered(e.what());
          throw;
        }
      }
      if (news)
        log_short_of_slots(cause, kept);
    }
  }

  void finished_trial(bool& trial) {
    if (!std::exchange(trial, false))
      return;
    {
      std::lock_guard lock(mutex);
      trying = false;
    }
    freed.notify_all();
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

  // Back to the pool: a connection that is idle and whole; one that broke, or whose query was
  // given up (still in flight), is closed.
  void give_back(PGconn* c) {
    const bool whole = PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE;
    {
      std::lock_guard lock(mutex);
      if (whole)
        idle.push_back(c);
      else
        --open;
    }
    if (!whole)
      PQfinish(c);
    freed.notify_one();
  }

  // Closes idle connections the server has closed (a restart, an administrator): found by their
  // socket being readable while nothing was asked, so they do not linger until used.
  std::size_t close_dead_idle() {
    std::vector<PGconn*> dead;
    {
      std::lock_guard lock(mutex);
      for (auto it = idle.begin(); it != idle.end();) {
        pollfd p{PQsocket(*it), POLLIN, 0};
        const bool said_something = ::poll(&p, 1, 0) > 0;
        if (said_something && (!PQconsumeInput(*it) || PQstatus(*it) != CONNECTION_OK)) {
          dead.push_back(*it);
          it = idle.erase(it);
          --open;
        } else {
          ++it;
        }
      }
    }
    for (auto* c : dead)
      PQfinish(c);
    if (!dead.empty())
      freed.notify_all();
    return dead.size();
  }

  // A connection for one call, returned to the pool at the end of the scope.
  struct lease {
    impl& owner;
    bool trial = false;
    PGconn* conn;
    explicit lease(impl& o)
        : owner(o)
        , conn(o.acquire(trial)) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() {
      owner.give_back(conn);
      owner.finished_trial(trial);
    }
  };

  // Runs `sql` with text parameters within `within` (the timeout when zero); throws store_error
  // naming `what` unless it succeeded.
  detail::result run(PGconn* c, const char* sql, const std::vector<std::string>& params,
                     const char* what, std::chrono::milliseconds within = {}) {
    return checked(c, pg::exec_within(c, sql, &params, within.count() ? within : timeout), what);
  }
  // Without parameters `sql` may hold several statements (the migrations).
  detail::result run(PGconn* c, const char* sql, const char* what,
                     std::chrono::milliseconds within = {}) {
    return checked(c, pg::exec_within(c, sql, nullptr, within.count() ? within : timeout), what);
  }
  detail::result checked(PGconn* c, pg::answer answer, const char* what) {
    if (answer.how != pg::outcome::answered) {
      unanswered("headline store " + location + ": " + what + ": " + answer.error);
      fail(what, answer.error.c_str());
    }
    answered();
    auto& r = answer.last;
    auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string cause = r ? PQresultErrorMessage(r.get()) : PQerrorMessage(c);
      const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
      if (state && std::string_view(state) == "42501") // insufficient_privilege
        cause = pg::one_line(cause.c_str()) + privilege_hint();
      fail(what, cause.c_str());
    }
    return std::move(answer.last);
  }

  // Ends a transaction that failed. Not on a connection whose query was given up or that broke:
  // that one is closed when it goes back, which ends the transaction on the server.
  void roll_back(PGconn* c) {
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_ACTIVE)
      (void)pg::exec_within(c, "ROLLBACK", nullptr, timeout);
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
      roll_back(l.conn);
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
