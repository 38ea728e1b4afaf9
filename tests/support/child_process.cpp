#include "tests/support/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace newsdesk::testing {

using clock_type = std::chrono::steady_clock;

child_process::child_process(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& env, const std::string& stderr_path) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  if (!stderr_path.empty())
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);

  std::vector<std::string> argv_store{program};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  // The test's own entries replace inherited ones of the same name: getenv returns the first
  // match, so appending "SPLASH_URL=" after an inherited SPLASH_URL would not clear it.
  auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string_view inherited = *e;
    bool replaced = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
      return name_of(mine) == name_of(inherited);
    });
    if (!replaced)
      env_store.emplace_back(inherited);
  }
  env_store.insert(env_store.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_store)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
  }
  pid_ = pid;
  stdout_fd_ = pipe_fds[0];
  reader_ = std::thread([this] { drain(); });
}

void child_process::drain() {
  char buf[4096];
  for (;;) {
    auto n = ::read(stdout_fd_, buf, sizeof buf);
    std::lock_guard lock(mutex_);
    if (n <= 0) {
      eof_ = true;
      arrived_.notify_all();
      return;
    }
    all_.append(buf, static_cast<std::size_t>(n));
    arrived_.notify_all();
  }
}

std::string child_process::output() const {
  std::lock_guard lock(mutex_);
  return all_;
}

child_process::~child_process() {
  if (!exit_code_ && pid_ > 0)
    stop(SIGKILL, std::chrono::seconds(5));
  if (reader_.joinable())
    reader_.join(); // the child is gone, so its stdout reached EOF
  if (stdout_fd_ >= 0)
    ::close(stdout_fd_);
}

std::optional<std::string> child_process::wait_for_line(const std::string& prefix,
                                                        std::chrono::milliseconds timeout) {
  return next_line(prefix, false, timeout);
}

std::optional<std::string> child_process::wait_for_log(const std::string& text,
                                                       std::chrono::milliseconds timeout) {
  return next_line(text, true, timeout);
}

std::optional<std::string> child_process::next_line(const std::string& text, bool anywhere,
                                                    std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  std::unique_lock lock(mutex_);
  for (;;) {
    for (auto nl = all_.find('\n', consumed_); nl != std::string::npos;
         nl = all_.find('\n', consumed_)) {
      std::string line = all_.substr(consumed_, nl - consumed_);
      consumed_ = nl + 1;
      auto at = anywhere ? line.find(text) : line.rfind(text, 0);
      if (at != std::string::npos)
        return line.substr(at + text.size());
    }
    if (eof_ || arrived_.wait_until(lock, deadline) == std::cv_status::timeout)
      return std::nullopt;
  }
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds timeout) {
  if (exit_code_)
    return exit_code_;
  auto deadline = clock_type::now() + timeout;
  for (;;) {
    int status = 0;
    auto r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // Its last output may still be in the pipe: wait for the reader to reach the end, so that
      // output() after an exit is all of it (on a busy machine it sometimes was not yet). A child's
      // child still holding the pipe open costs at most a few seconds here.
      std::unique_lock lock(mutex_);
      arrived_.wait_until(lock, std::min(deadline, clock_type::now() + std::chrono::seconds(5)),
                          [this] { return eof_; });
      return exit_code_;
    }
    if (clock_type::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<int> child_process::stop(int signal, std::chrono::milliseconds timeout) {
  if (exit_code_)
    return exit_code_;
  ::kill(pid_, signal);
  if (auto code = wait_exit(timeout))
    return code;
  ::kill(pid_, SIGKILL);
  wait_exit(std::chrono::seconds(5));
  return std::nullopt;
}

unsigned short wait_for_port(child_process& p) {
  auto rest = p.wait_for_log("msg=listening service=http url=http://");
  if (!rest)
    return 0;
  auto colon = rest->rfind(':');
  return colon == std::string::npos
             ? 0
             : static_cast<unsigned short>(std::stoi(rest->substr(colon + 1)));
}

} // namespace newsdesk::testing
