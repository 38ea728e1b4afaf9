// Starts a program (the real newsdesk binary) with a pipe on its stdout, for tests that drive
// it over sockets. The destructor kills it if the test did not stop it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace newsdesk::testing {

class child_process {
 public:
  // Starts `program` with `args` and this process's environment, in which `env` entries
  // ("NAME=value") replace inherited variables of the same name ("NAME=" clears one).
  // stderr goes to `stderr_path` (a file tests can read) when given.
  child_process(const std::string& program, const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}, const std::string& stderr_path = {});
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // The next stdout line starting with `prefix` (without it), or nullopt on exit/deadline.
  std::optional<std::string>
  wait_for_line(const std::string& prefix,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The same for a log line holding `text` anywhere (a logfmt line begins with its time): what
  // follows `text`.
  std::optional<std::string>
  wait_for_log(const std::string& text,
               std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Sends `signal` and waits for the exit; returns the exit code (128+N when killed by N),
  // or nullopt when it did not exit in time (it is then killed).
  std::optional<int> stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Waits for the process to exit by itself.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  int pid() const { return pid_; }
  // Everything the process wrote to stdout so far.
  std::string output() const;

 private:
  void drain(); // reads stdout until EOF on its own thread, so the child never blocks on a pipe

  int pid_ = -1;
  std::optional<std::string> next_line(const std::string& text, bool anywhere,
                                       std::chrono::milliseconds timeout);

  int stdout_fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::string all_;          // guarded by mutex_
  std::size_t consumed_ = 0; // how far wait_for_line has read all_
  bool eof_ = false;         // guarded by mutex_
  std::thread reader_;
  std::optional<int> exit_code_;
};

// Starts newsdesk on 127.0.0.1 port 0 and returns the port it reports (0 if it did not start).
unsigned short wait_for_port(child_process& p);

} // namespace newsdesk::testing
