#include "tests/support/postgres_cluster.hpp"

#include "tests/support/http_get.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace newsdesk::testing {

namespace fs = std::filesystem;

namespace {

// The newest PostgreSQL's programs under /usr/lib/postgresql/<version>/bin.
std::string find_bin() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec))
    if (fs::exists(entry.path() / "bin" / "initdb") && fs::exists(entry.path() / "bin" / "pg_ctl"))
      found.push_back(entry.path() / "bin");
  if (found.empty())
    throw std::runtime_error("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); "
                             "scripts/setup installs it (Debian package postgresql)");
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    return std::stoi(a.parent_path().filename()) < std::stoi(b.parent_path().filename());
  });
  return found.back().string();
}

void run(const std::string& command) {
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("command failed: " + command);
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

} // namespace

postgres_cluster::postgres_cluster()
    : bin_(find_bin())
    , as_postgres_(::geteuid() == 0) {
  char tmpl[] = "/tmp/newsdesk-pg-XXXXXX";
  if (!::mkdtemp(tmpl))
    throw std::runtime_error("cannot make a temporary folder for PostgreSQL");
  dir_ = tmpl;
  if (as_postgres_) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw)
      throw std::runtime_error("no postgres user to run PostgreSQL as (the postgresql package "
                               "creates it; scripts/setup installs it)");
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      throw std::runtime_error("cannot give " + dir_.string() + " to the postgres user");
  }
  port_ = unused_port();
  const auto initdb = (as_postgres_ ? "runuser -u postgres -- " : "") + bin_ + "/initdb -D " +
                      quoted((dir_ / "data").string()) +
                      " -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 > " +
                      quoted((dir_ / "initdb.log").string()) + " 2>&1";
  try {
    run(initdb);
  } catch (const std::exception&) {
    throw std::runtime_error("initdb failed; see " + (dir_ / "initdb.log").string());
  }
  start();
}

postgres_cluster::~postgres_cluster() {
  try {
    pg_ctl("stop -m immediate");
  } catch (const std::exception&) {
    // Already stopped.
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

postgres_cluster& postgres_cluster::shared() {
  static postgres_cluster cluster;
  return cluster;
}

void postgres_cluster::pg_ctl(const std::string& args) const {
  run((as_postgres_ ? "runuser -u postgres -- " : "") + bin_ + "/pg_ctl -D " +
      quoted((dir_ / "data").string()) + " -l " + quoted((dir_ / "server.log").string()) + " " +
      args + " > /dev/null 2>&1");
}

void postgres_cluster::start() {
  try {
    pg_ctl("-w -t 60 -o " +
           quoted("-p " + std::to_string(port_) + " -k " + dir_.string() +
                  " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                  "-c full_page_writes=off -c max_connections=300") +
           " start");
  } catch (const std::exception&) {
    throw std::runtime_error("PostgreSQL did not start; see " + (dir_ / "server.log").string());
  }
}

std::vector<int> postgres_cluster::server_processes() const {
  std::ifstream pid_file(dir_ / "data" / "postmaster.pid");
  int postmaster = 0;
  if (!(pid_file >> postmaster) || postmaster <= 0)
    throw std::runtime_error("cannot read the postmaster's pid from " +
                             (dir_ / "data" / "postmaster.pid").string());
  std::vector<int> pids{postmaster};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const auto close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int parent = 0;
    if (rest >> state >> parent && parent == postmaster)
      pids.push_back(std::stoi(name));
  }
  return pids;
}

void postgres_cluster::freeze() {
  // The postmaster first, so it starts no process that would miss the signal.
  for (int pid : server_processes())
    ::kill(pid, SIGSTOP);
}

void postgres_cluster::thaw() {
  auto pids = server_processes();
  std::reverse(pids.begin(), pids.end()); // the children first, the postmaster last
  for (int pid : pids)
    ::kill(pid, SIGCONT);
}

void postgres_cluster::stop() {
  pg_ctl("-w -m fast stop");
}

std::string postgres_cluster::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string postgres_cluster::fresh_database() {
  const auto name = "newsdesk_" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  exec("postgres", "CREATE DATABASE " + name);
  return url(name);
}

std::string postgres_cluster::exec(const std::string& database, const std::string& sql) const {
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(url(database).c_str()), PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    throw std::runtime_error("cannot connect to " + url(database) + ": " +
                             PQerrorMessage(conn.get()));
  std::unique_ptr<PGresult, void (*)(PGresult*)> r(PQexec(conn.get(), sql.c_str()), PQclear);
  auto status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    throw std::runtime_error("\"" + sql + "\" failed: " + PQresultErrorMessage(r.get()));
  if (status == PGRES_TUPLES_OK && PQntuples(r.get()) > 0 && PQnfields(r.get()) > 0)
    return PQgetvalue(r.get(), 0, 0);
  return "";
}

} // namespace newsdesk::testing
