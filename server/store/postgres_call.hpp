// Round trips to PostgreSQL that end in time whatever the server does: it may answer, refuse,
// close the connection, or not answer at all (a frozen server, a full disk, a lock held for ever,
// a network that drops packets without a reset). libpq's blocking calls wait for ever in the last
// case: the server's statement_timeout cannot help a server that does not run, and TCP keepalives
// are answered by the frozen server's kernel. So every call here runs libpq's non-blocking
// interface under a deadline of its own (poll(2) on the connection's socket), and one that
// misses it is cancelled (PQcancel) and its connection given up.
//
// Threads: a connection is used by one thread at a time (libpq's rule); the functions keep no
// state of their own but the background cancels' count.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace newsdesk::server::pg {

struct result_deleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using result = std::unique_ptr<PGresult, result_deleter>;

// The parameters of every connection newsdesk opens: `url` expanded into its parts (libpq's
// expand_dbname), `application_name` (shown in pg_stat_activity), and what bounds a connection
// that goes quiet: TCP keepalives and tcp_user_timeout (a peer that vanished without closing,
// found within `timeout` of unacknowledged data), connect_timeout. `options` are server options
// ("-c statement_timeout=10000"), none when empty.
class conninfo {
 public:
  conninfo(const std::string& url, std::string application_name, std::chrono::milliseconds timeout,
           std::string options = {});
  const char* const* keys() const { return keys_.data(); }
  const char* const* values() const { return values_.data(); }

 private:
  std::vector<std::string> owned_;
  std::vector<const char*> keys_, values_;
};

// Opens a connection within `timeout`: PQconnectStartParams, then PQconnectPoll waited on with
// poll(2). Returns it in non-blocking mode, or null with `error` (libpq's message, one line;
// "timed out after N ms" when the server never finished the start-up).
PGconn* connect_within(const conninfo& info, std::chrono::milliseconds timeout, std::string& error);

// How a round trip ended.
enum class outcome {
  answered,  // the server answered: `result` is its last result (the first error, if any)
  timed_out, // no complete answer within the timeout: the query was cancelled in the
             // background and the connection is unusable (its query is still in flight)
  broken     // the connection failed (closed, reset): `error` says how
};
struct answer {
  outcome how = outcome::broken;
  result last;
  std::string error; // for timed_out and broken
};

// Sends `sql` (with text `params`, or none: then `sql` may hold several statements) on `conn`,
// which must be in non-blocking mode with no query in flight, and reads every result within
// `timeout`.
answer exec_within(PGconn* conn, const char* sql, const std::vector<std::string>* params,
                   std::chrono::milliseconds timeout);

// Asks the server to cancel what `conn` runs, without waiting: PQcancel opens a connection of
// its own and waits for the server to close it, which a frozen server never does, so it runs on
// a short-lived thread of its own. At most `max_cancels_in_flight` run at once; beyond that the
// cancel is skipped (the server's statement_timeout ends the query once it runs again).
void cancel_in_background(PGconn* conn);
inline constexpr int max_cancels_in_flight = 4;

// A libpq message on one line: trailing spaces and newlines dropped, inner newlines spaces.
std::string one_line(const char* text);

} // namespace newsdesk::server::pg
