// PostgreSQL's notices reach newsdesk's log as logfmt lines. A real PostgreSQL, started by the
// test (tests/support/postgres_cluster.hpp).
#include "server/store/postgres_notices.hpp"

#include "tests/support/logfmt.hpp"
#include "tests/support/postgres_cluster.hpp"

#include <doctest/doctest.h>
#include <libpq-fe.h>
#include <poll.h>

#include <chrono>
#include <memory>
#include <string>

using namespace newsdesk::server;
using newsdesk::testing::log_capture;
using newsdesk::testing::postgres_cluster;
using newsdesk::testing::read_logfmt_line;

namespace {

struct connection {
  explicit connection(const std::string& url)
      : conn(PQconnectdb(url.c_str())) {
    REQUIRE_MESSAGE(PQstatus(conn) == CONNECTION_OK, PQerrorMessage(conn));
  }
  ~connection() { PQfinish(conn); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Runs `sql`; true when it succeeded.
  bool exec(const std::string& sql) {
    PGresult* r = PQexec(conn, sql.c_str());
    const auto status = PQresultStatus(r);
    PQclear(r);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }

  PGconn* conn;
};

} // namespace

TEST_CASE("a notice with a quote, backslash and newline is one warn line; NOTICE is info") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  connection c(url);
  log_notices(c.conn, "store");
  log_capture captured;
  REQUIRE(c.exec(
      R"(DO $$ BEGIN RAISE WARNING '%', 'a "quoted" C:\path' || chr(10) || 'next'; END $$)"));
  REQUIRE(c.exec("CREATE TABLE IF NOT EXISTS t (x int)"));
  REQUIRE(c.exec("CREATE TABLE IF NOT EXISTS t (x int)")); // "already exists, skipping"

  const auto lines = captured.lines_with("msg=\"postgres notice\"");
  REQUIRE(lines.size() == 2);
  const auto warning = read_logfmt_line(lines[0]);
  REQUIRE_MESSAGE(warning, lines[0]);
  CHECK(warning->get("level") == "warn");
  CHECK(warning->get("connection") == "store");
  CHECK(warning->get("severity") == "WARNING");
  CHECK(warning->get("text") == "a \"quoted\" C:\\path\nnext");
  const auto notice = read_logfmt_line(lines[1]);
  REQUIRE_MESSAGE(notice, lines[1]);
  CHECK(notice->get("level") == "info");
  CHECK(notice->get("severity") == "NOTICE");
  CHECK(notice->get("text")->find("already exists, skipping") != std::string::npos);
}

TEST_CASE("the FATAL a server sends before cutting an idle connection is a warn line") {
  auto& pg = postgres_cluster::shared();
  const auto url = pg.fresh_database();
  connection idle(url);
  log_notices(idle.conn, "listener");
  REQUIRE(idle.exec("LISTEN anything"));
  log_capture captured;

  connection admin(url);
  REQUIRE(
      admin.exec("SELECT pg_terminate_backend(" + std::to_string(PQbackendPID(idle.conn)) + ")"));
  // As the change listener does: wait until the socket is readable, take in what came, then
  // look for notifications (which is when libpq reads the messages it took in).
  pollfd fd{PQsocket(idle.conn), POLLIN, 0};
  REQUIRE(::poll(&fd, 1, 5000) == 1);
  if (PQconsumeInput(idle.conn))
    while (PGnotify* n = PQnotifies(idle.conn))
      PQfreemem(n);

  const auto lines = captured.lines_with("msg=\"postgres notice\"");
  REQUIRE(lines.size() == 1);
  const auto line = read_logfmt_line(lines[0]);
  REQUIRE_MESSAGE(line, lines[0]);
  CHECK(line->get("level") == "warn");
  CHECK(line->get("connection") == "listener");
  CHECK(line->get("severity") == "FATAL");
  CHECK(line->get("text") == "terminating connection due to administrator command");
}
