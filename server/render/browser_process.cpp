#include "server/render/browser_process.hpp"
#include "server/render/render_support.hpp"

#include "server/core/log.hpp"
#include "server/render/renderer.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

extern char** environ;

namespace newsdesk::server {

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Start failures back off from 0.5 s, doubling, to 30 s: a missing or broken binary is not
// retried in a tight loop, and a transient failure recovers quickly.
constexpr milliseconds first_backoff{500};
constexpr milliseconds max_backoff{30'000};
// Debian's util-linux; used only when present.
constexpr const char* setpriv_path = "/usr/bin/setpriv";
// How often a starting browser's profile is checked for DevToolsActivePort.
constexpr milliseconds port_poll_interval{25};

bool is_executable(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

} // namespace

std::vector<std::string> chromium_arguments(const std::string& profile_dir,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> args{
      "--headless",
      "--no-sandbox", // runs as root in containers, where the sandbox cannot start
      "--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
      // Without these Chromium keeps calling home (updates, sync, safe browsing), which on a
      // closed network floods the log and wastes sockets.
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
      // Only one tab is in front; Chromium treats the others as background tabs and delays
      // their timers to about one wake-up a second. Measured with four renders side by side: a
      // page's 200 ms timer fired up to 1.1 s after being set in the background tabs, so half
      // the renders with a 400 ms wait came back without the headlines (docs/renderers.md).
      // The timer flag alone fixes that; the other two keep background tabs' renderer
      // processes at normal priority and not marked occluded.
      "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
      "--disable-renderer-backgrounding",
      // Headlines are text: skipping images makes renders faster (Splash's images=0).
      "--blink-settings=imagesEnabled=false", "--user-data-dir=" + profile_dir,
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0", // Chromium picks; it writes the port to DevToolsActivePort
  };
  args.insert(args.end(), extra.begin(), extra.end());
  args.emplace_back("about:blank");
  return args;
}

std::string find_chromium(const std::string& configured) {
  if (!configured.empty())
    return is_executable(configured) ? configured : std::string{};
  const char* path_env = std::getenv("PATH");
  std::string path = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::size_t start = 0;
    while (start <= path.size()) {
      auto end = path.find(':', start);
      if (end == std::string::npos)
        end = path.size();
      auto dir = path.substr(start, end - start);
      if (!dir.empty() && is_executable(dir + "/" + name))
        return dir + "/" + name;
      start = end + 1;
    }
  }
  return {};
}

browser_process::browser_process(boost::asio::any_io_executor strand, chromium_options options)
    : strand_(strand)
    , options_(std::move(options))
    , startup_timer_(strand)
    , retry_timer_(strand)
    , ping_timer_(strand)
    , ping_deadline_(strand) {
  if (options_.recycle_after == 0)
    options_.recycle_after = 1;
}

browser_process::~browser_process() {
  kill_process();
}

void browser_process::set_hooks(hooks h) {
  hooks_ = std::move(h);
}

// ---- the process (any thread, under proc_mutex_) -------------------------------------------

// Spawns Chromium in its own process group with a fresh profile. Returns an error or "".
std::string browser_process::spawn() {
  std::lock_guard lock(proc_mutex_);
  if (closed_)
    return "newsdesk is shutting down";
  if (!is_executable(options_.path))
    return "cannot run " + options_.path + ": no such executable file";
  auto tmpl = (fs::temp_directory_path() / "newsdesk-chromium-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    return std::string("cannot create a profile folder: ") + std::strerror(errno);
  profile_dir_ = tmpl;

  // When newsdesk dies without cleaning up (SIGKILL, a crash), the browser must not live on:
  // util-linux's setpriv sets the parent-death signal, which survives its exec of Chromium.
  std::vector<std::string> store;
  if (::access(setpriv_path, X_OK) == 0)
    store = {setpriv_path, "--pdeathsig", "KILL", "--"};
  store.push_back(options_.path);
  auto args = chromium_arguments(profile_dir_, options_.extra_args);
  store.insert(store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : store)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // Our sockets (listeners, client connections) must not live on in the browser.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0); // its own group: killed as one with all its children
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = 0;
  int rc = posix_spawn(&child, store.front().c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::error_code ignored;
    fs::remove_all(profile_dir_, ignored);
    profile_dir_.clear();
    return "cannot run " + options_.path + ": " + std::strerror(rc);
  }
  pid_ = child;
  pid_seen_ = child;
  ++started_count_;
  return {};
}

// Non-blocking: the exit status when the browser has exited (and is reaped), else nullopt.
std::optional<int> browser_process::exited() {
  std::lock_guard lock(proc_mutex_);
  if (pid_ <= 0)
    return 0;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = 0;
    pid_seen_ = 0;
    return status;
  }
  return std::nullopt;
}

// Kills the whole group and reaps the browser; removes its profile. Blocks only for the moment
// SIGKILL takes.
void browser_process::kill_process() {
  std::lock_guard lock(proc_mutex_);
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = 0;
    pid_seen_ = 0;
  }
  if (!profile_dir_.empty()) {
    std::error_code ignored;
    fs::remove_all(profile_dir_, ignored);
    profile_dir_.clear();
  }
}

bool browser_process::kill_for_good() {
  {
    std::lock_guard lock(proc_mutex_);
    if (closed_)
      return false;
    closed_ = true;
  }
  kill_process();
  return true;
}

bool browser_process::shutting_down() const {
  std::lock_guard lock(proc_mutex_);
  return closed_;
}

// ---- lifecycle (strand) --------------------------------------------------------------------

void browser_process::start() {
  if (phase_ == phase::closed)
    return;
  phase_ = phase::starting;
  ++generation_;
  renders_on_browser_ = 0;
  targets_open_ = 0;
  if (auto error = spawn(); !error.empty())
    return start_failed(error);
  started_at_ = clock_type::now();
  log_info("msg=\"chromium starting\" path=" + logfmt_quoted(options_.path) +
           " pid=" + std::to_string(pid_seen_));
  poll_port(generation_);
}

void browser_process::poll_port(std::uint64_t gen) {
  if (gen != generation_ || phase_ != phase::starting)
    return;
  std::string dir;
  {
    std::lock_guard lock(proc_mutex_);
    dir = profile_dir_;
  }
  std::ifstream in(fs::path(dir) / "DevToolsActivePort");
  std::string port, path;
  if (in && std::getline(in, port) && std::getline(in, path) && !port.empty() && !path.empty())
    return connect(gen, port, path);
  if (auto status = exited())
    return start_failed("Chromium exited during startup (" + describe_exit(*status) + ")");
  if (clock_type::now() - started_at_ > options_.startup_timeout) {
    kill_process();
    return start_failed("Chromium did not open DevTools within " +
                        format_seconds(seconds_of(options_.startup_timeout)) + " s");
  }
  startup_timer_.expires_after(port_poll_interval);
  startup_timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (!ec)
      self->poll_port(gen);
  });
}

void browser_process::connect(std::uint64_t gen, const std::string& port, const std::string& path) {
  cdp_ = std::make_unique<cdp::connection>(strand_);
  auto self = shared_from_this();
  cdp_->on_event(
      [self, gen](const std::string& method, const json& params, const std::string& session) {
        if (gen == self->generation_ && self->hooks_.event)
          self->hooks_.event(method, params, session);
      });
  cdp_->on_closed([self, gen](std::string why) {
    if (gen == self->generation_)
      self->browser_died(why);
  });
  auto left = options_.startup_timeout -
              std::chrono::duration_cast<milliseconds>(clock_type::now() - started_at_);
  cdp_->connect("127.0.0.1", port, path, std::max(left, milliseconds{1000}),
                [self, gen](std::string error) {
                  if (gen != self->generation_)
                    return;
                  if (!error.empty()) {
                    self->stop_browser();
                    return self->start_failed(error);
                  }
                  self->phase_ = phase::ready;
                  log_info("msg=\"chromium ready\" pid=" + std::to_string(self->pid_seen_));
                  self->schedule_ping(self->generation_);
                  if (self->hooks_.ready)
                    self->hooks_.ready();
                });
}

void browser_process::start_failed(const std::string& error) {
  if (phase_ == phase::closed)
    return;
  ++consecutive_failures_;
  auto delay = first_backoff * (1u << std::min(consecutive_failures_ - 1, 6u));
  delay = std::min<milliseconds>(delay, max_backoff);
  start_error_ = error;
  log_warn("msg=\"chromium failed to start\" error=" + logfmt_quoted(error) +
           " retry_in_ms=" + std::to_string(delay.count()));
  enter_backoff(delay, /*fail_fast=*/true);
  if (hooks_.start_failed)
    hooks_.start_failed(error);
}

void browser_process::enter_backoff(milliseconds delay, bool fast) {
  phase_ = phase::backoff;
  fail_fast_ = fast;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = shared_from_this(), fast](boost::system::error_code ec) {
    if (ec || self->phase_ != phase::backoff)
      return;
    self->fail_fast_ = false;
    self->phase_ = phase::stopped;
    // After a crash the browser comes back at once; after a failed start, on demand.
    if (!fast)
      self->start();
    else if (self->hooks_.idle)
      self->hooks_.idle();
  });
}

// Closes the connection and kills the process; callbacks of that browser are ignored from here
// on (generation).
void browser_process::stop_browser() {
  ++generation_;
  ping_timer_.cancel();
  ping_deadline_.cancel();
  startup_timer_.cancel();
  cdp_.reset();
  kill_process();
  targets_open_ = 0;
}

// The browser exited, closed DevTools, or stopped answering: the owner fails its renders, and it
// is restarted.
void browser_process::browser_died(const std::string& why) {
  if (phase_ == phase::closed || shutting_down())
    return; // kill_for_good() killed it; the owner answers the renders
  std::string status;
  if (auto s = exited())
    status = " (" + describe_exit(*s) + ")";
  log_warn("msg=\"chromium lost, restarting\" reason=" + logfmt_quoted(why + status));
  phase_ = phase::backoff; // so what the owner does in `lost` starts nothing on it
  stop_browser();
  if (hooks_.lost)
    hooks_.lost(why);
  ++consecutive_failures_;
  auto delay =
      consecutive_failures_ <= 1
          ? milliseconds{0}
          : std::min<milliseconds>(max_backoff,
                                   first_backoff * (1u << std::min(consecutive_failures_ - 2, 6u)));
  enter_backoff(delay, /*fail_fast=*/false);
}

void browser_process::recycle() {
  log_info("msg=\"chromium recycled\" renders=" + std::to_string(renders_on_browser_));
  stop_browser();
  phase_ = phase::stopped;
  start();
}

void browser_process::close() {
  phase_ = phase::closed;
  ++generation_;
  startup_timer_.cancel();
  retry_timer_.cancel();
  ping_timer_.cancel();
  ping_deadline_.cancel();
  cdp_.reset();
}

bool browser_process::alive(std::uint64_t gen) const {
  return gen == generation_ && cdp_ && cdp_->is_open();
}

// ---- health (strand) -----------------------------------------------------------------------

void browser_process::schedule_ping(std::uint64_t gen) {
  ping_timer_.expires_after(options_.ping_interval);
  ping_timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (ec || gen != self->generation_ || self->phase_ != phase::ready)
      return;
    self->ping(gen);
  });
}

void browser_process::ping(std::uint64_t gen) {
  if (auto status = exited())
    return browser_died("Chromium exited (" + describe_exit(*status) + ")");
  auto seq = ++ping_sent_;
  cdp_->call("Browser.getVersion", json::object(), {},
             [self = shared_from_this(), gen, seq](cdp::reply r) {
               if (gen != self->generation_ || !r.ok)
                 return; // a closed connection is reported through on_closed
               self->ping_answered_ = seq;
               self->ping_deadline_.cancel();
               self->schedule_ping(gen);
             });
  ping_deadline_.expires_after(options_.ping_timeout);
  ping_deadline_.async_wait([self = shared_from_this(), gen, seq](boost::system::error_code ec) {
    if (ec || gen != self->generation_ || self->ping_answered_ >= seq)
      return;
    self->browser_died("no answer to a ping within " +
                       format_seconds(seconds_of(self->options_.ping_timeout)) + " s");
  });
}

// ---- tabs (strand) -------------------------------------------------------------------------

void browser_process::open_target(std::function<void(cdp::reply)> done) {
  auto gen = generation_;
  cdp_->call("Target.createTarget", {{"url", "about:blank"}}, {},
             [self = shared_from_this(), gen, done = std::move(done)](cdp::reply r) {
               if (r.ok && self->alive(gen))
                 ++self->targets_open_;
               done(std::move(r));
             });
}

void browser_process::close_target(std::uint64_t gen, const std::string& target_id) {
  if (!alive(gen) || target_id.empty())
    return;
  cdp_->call("Target.closeTarget", {{"targetId", target_id}}, {},
             [self = shared_from_this(), gen](cdp::reply r) {
               if (r.ok && gen == self->generation_ && self->targets_open_ > 0)
                 --self->targets_open_;
             });
}

} // namespace newsdesk::server
