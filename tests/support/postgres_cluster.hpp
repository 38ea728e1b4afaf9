// A throwaway PostgreSQL for tests and benchmarks, started by the test itself: initdb and
// pg_ctl from Debian's postgresql package on a temporary folder, listening on 127.0.0.1 on a
// free port (and a socket in that folder), trust authentication, fsync off. As root (CI), the
// programs run as the `postgres` user via runuser, since PostgreSQL refuses to run as root.
//
// Anything missing (no PostgreSQL installed, runuser failing) throws with what to install:
// tests that need PostgreSQL fail, never skip. The destructor stops the server and removes the
// folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace newsdesk::testing {

class postgres_cluster {
 public:
  postgres_cluster();  // initdb + start
  ~postgres_cluster(); // stop (immediate) + remove the folder
  postgres_cluster(const postgres_cluster&) = delete;
  postgres_cluster& operator=(const postgres_cluster&) = delete;

  // One cluster per test process, started on first use, stopped at exit.
  static postgres_cluster& shared();

  unsigned short port() const { return port_; }
  // postgresql://postgres@127.0.0.1:PORT/`database`
  std::string url(const std::string& database) const;
  // Creates a new empty database with a unique name and returns its URL.
  std::string fresh_database();
  // Runs `sql` on `database`; returns the first column of the first row ("" when none). Throws
  // with PostgreSQL's message on an error.
  std::string exec(const std::string& database, const std::string& sql) const;

  // Stops the server (fast shutdown: connections are cut) and starts it again on the same port
  // and data, for tests of a database that goes away and comes back.
  void stop();
  void start();

  // Freezes the server without closing anything (SIGSTOP to the postmaster and every process
  // it started): connections stay open and the kernel still accepts new ones, but nothing
  // answers, as with a full disk, a lock held for ever or a partition that drops packets.
  // thaw() lets it run on (SIGCONT). Throws when the postmaster's pid cannot be read.
  void freeze();
  void thaw();

 private:
  void pg_ctl(const std::string& args) const;
  // The postmaster's pid and those of its children, the postmaster first.
  std::vector<int> server_processes() const;

  std::filesystem::path dir_;
  std::string bin_; // the folder holding initdb and pg_ctl
  bool as_postgres_ = false;
  unsigned short port_ = 0;
  int databases_ = 0;
};

} // namespace newsdesk::testing
