#include "server/render/chromium_renderer.hpp"

#include "server/render/cdp_client.hpp"
#include "server/core/log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

extern char** environ;

namespace newsdesk::server {

namespace net = boost::asio;
namespace fs = std::filesystem;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// The same cap as the direct renderer's body limit: a front page runs to ~4 MB.
constexpr std::size_t max_page_bytes = 16 * 1024 * 1024;
// Start failures back off from 0.5 s, doubling, to 30 s: a missing or broken binary is not
// retried in a tight loop, and a transient failure recovers quickly.
constexpr milliseconds first_backoff{500};
constexpr milliseconds max_backoff{30'000};
// Debian's util-linux; used only when present.
constexpr const char* setpriv_path = "/usr/bin/setpriv";
// How often a starting browser's profile is checked for DevToolsActivePort.
constexpr milliseconds port_poll_interval{25};

// One expression reads the page, its final URL and the main document's HTTP status
// (PerformanceNavigationTiming.responseStatus, Chromium 109+; 0 when unknown).
constexpr const char* read_page_expression =
    "({html: document.documentElement ? document.documentElement.outerHTML : '',"
    " url: location.href,"
    " status: ((performance.getEntriesByType('navigation')[0] || {}).responseStatus) || 0})";

double seconds(milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

render_result failure(render_failure kind, std::string message) {
  render_result r;
  r.failure = kind;
  r.message = std::move(message);
  return r;
}

std::string text_of(const json& j, const char* key) {
  if (j.is_object())
    if (auto it = j.find(key); it != j.end() && it->is_string())
      return it->get<std::string>();
  return {};
}

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

// A render: its request, its deadline, and where it is in the protocol.
struct job {
  explicit job(net::any_io_executor ex)
      : deadline(ex)
      , wait(ex) {}
  render_request request;
  std::function<void(render_result)> done;
  clock_type::time_point started = clock_type::now();
  net::steady_timer deadline;
  net::steady_timer wait;
  bool finished = false;
  std::uint64_t generation = 0; // the browser it runs on
  std::string target_id;
  std::string session_id;
  std::string loader_id;        // the navigation's, from Page.navigate
  std::set<std::string> loaded; // loaders whose "load" lifecycle event arrived
  bool navigated = false;
  bool reading = false;
};

using job_ptr = std::shared_ptr<job>;

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

struct chromium_renderer::state : std::enable_shared_from_this<state> {
  state(net::io_context& ioc_, chromium_options opts)
      : ioc(ioc_)
      , strand(net::make_strand(ioc_))
      , options(std::move(opts))
      , startup_timer(strand)
      , retry_timer(strand)
      , ping_timer(strand)
      , ping_deadline(strand) {
    if (options.max_concurrent == 0)
      options.max_concurrent = 1;
    if (options.recycle_after == 0)
      options.recycle_after = 1;
  }

  ~state() { kill_browser(); }

  net::io_context& ioc;
  net::strand<net::io_context::executor_type> strand;
  chromium_options options;

  // Everything below up to the atomics is touched on the strand only.
  enum class phase { stopped, starting, ready, backoff, closed };
  phase phase_ = phase::stopped;
  bool fail_fast = false; // in back-off after a failed start: fail renders instead of queueing
  std::string start_error;
  unsigned consecutive_failures = 0;
  std::uint64_t generation = 0; // bumped whenever a browser starts or stops
  std::unique_ptr<cdp::connection> cdp;
  std::size_t renders_on_browser = 0;
  clock_type::time_point started_at;
  net::steady_timer startup_timer;
  net::steady_timer retry_timer;
  net::steady_timer ping_timer;
  net::steady_timer ping_deadline;
  std::uint64_t ping_sent = 0;
  std::uint64_t ping_answered = 0;
  std::deque<job_ptr> queue;
  std::set<job_ptr> active;
  std::map<std::string, job_ptr> by_session;

  // The process: guarded by proc_mutex, because shutdown() may run on any thread.
  std::mutex proc_mutex;
  int pid = 0;
  std::string profile_dir;
  bool closed = false;

  std::atomic<int> pid_seen{0};
  std::atomic<std::size_t> started_count{0};
  std::atomic<std::size_t> active_count{0};
  std::atomic<std::size_t> peak_active{0};
  std::atomic<std::size_t> targets_open{0};

  // ---- the process ----------------------------------------------------------------------

  // Spawns Chromium in its own process group with a fresh profile. Returns an error or "".
  std::string spawn() {
    std::lock_guard lock(proc_mutex);
    if (closed)
      return "newsdesk is shutting down";
    if (!is_executable(options.path))
      return "cannot run " + options.path + ": no such executable file";
    auto tmpl = (fs::temp_directory_path() / "newsdesk-chromium-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      return std::string("cannot create a profile folder: ") + std::strerror(errno);
    profile_dir = tmpl;

    // When newsdesk dies without cleaning up (SIGKILL, a crash), the browser must not live on:
    // util-linux's setpriv sets the parent-death signal, which survives its exec of Chromium.
    std::vector<std::string> store;
    if (::access(setpriv_path, X_OK) == 0)
      store = {setpriv_path, "--pdeathsig", "KILL", "--"};
    store.push_back(options.path);
    auto args = chromium_arguments(profile_dir, options.extra_args);
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
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    pid_t child = 0;
    int rc = posix_spawn(&child, store.front().c_str(), &actions, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      std::error_code ignored;
      fs::remove_all(profile_dir, ignored);
      profile_dir.clear();
      return "cannot run " + options.path + ": " + std::strerror(rc);
    }
    pid = child;
    pid_seen = child;
    ++started_count;
    return {};
  }

  // Non-blocking: the exit status when the browser has exited (and is reaped), else nullopt.
  std::optional<int> exited() {
    std::lock_guard lock(proc_mutex);
    if (pid <= 0)
      return 0;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid = 0;
      pid_seen = 0;
      return status;
    }
    return std::nullopt;
  }

  // Kills the whole group and reaps the browser; removes its profile. Blocks only for the
  // moment SIGKILL takes. Any thread.
  void kill_browser() {
    std::lock_guard lock(proc_mutex);
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      pid = 0;
      pid_seen = 0;
    }
    if (!profile_dir.empty()) {
      std::error_code ignored;
      fs::remove_all(profile_dir, ignored);
      profile_dir.clear();
    }
  }

  // ---- browser lifecycle (strand) ------------------------------------------------------

  void start_browser() {
    if (phase_ == phase::closed)
      return;
    phase_ = phase::starting;
    ++generation;
    renders_on_browser = 0;
    targets_open = 0;
    if (auto error = spawn(); !error.empty())
      return start_failed(error);
    started_at = clock_type::now();
    log_info("msg=\"chromium starting\" path=" + options.path + " pid=" + std::to_string(pid_seen));
    poll_port(generation);
  }

  void poll_port(std::uint64_t gen) {
    if (gen != generation || phase_ != phase::starting)
      return;
    std::string dir;
    {
      std::lock_guard lock(proc_mutex);
      dir = profile_dir;
    }
    std::ifstream in(fs::path(dir) / "DevToolsActivePort");
    std::string port, path;
    if (in && std::getline(in, port) && std::getline(in, path) && !port.empty() && !path.empty())
      return connect(gen, port, path);
    if (auto status = exited())
      return start_failed("Chromium exited during startup (" + describe_exit(*status) + ")");
    if (clock_type::now() - started_at > options.startup_timeout) {
      kill_browser();
      return start_failed("Chromium did not open DevTools within " +
                          format_seconds(seconds(options.startup_timeout)) + " s");
    }
    startup_timer.expires_after(port_poll_interval);
    startup_timer.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
      if (!ec)
        self->poll_port(gen);
    });
  }

  void connect(std::uint64_t gen, const std::string& port, const std::string& path) {
    cdp = std::make_unique<cdp::connection>(strand);
    auto self = shared_from_this();
    cdp->on_event(
        [self, gen](const std::string& method, const json& params, const std::string& session) {
          if (gen == self->generation)
            self->on_event(method, params, session);
        });
    cdp->on_closed([self, gen](std::string why) {
      if (gen == self->generation)
        self->browser_died(why);
    });
    auto left = options.startup_timeout -
                std::chrono::duration_cast<milliseconds>(clock_type::now() - started_at);
    cdp->connect("127.0.0.1", port, path, std::max(left, milliseconds{1000}),
                 [self, gen](std::string error) {
                   if (gen != self->generation)
                     return;
                   if (!error.empty()) {
                     self->stop_browser();
                     return self->start_failed(error);
                   }
                   self->phase_ = phase::ready;
                   log_info("msg=\"chromium ready\" pid=" + std::to_string(self->pid_seen));
                   self->schedule_ping(self->generation);
                   self->pump();
                 });
  }

  void start_failed(const std::string& error) {
    if (phase_ == phase::closed)
      return;
    ++consecutive_failures;
    auto delay = first_backoff * (1u << std::min(consecutive_failures - 1, 6u));
    delay = std::min<milliseconds>(delay, max_backoff);
    start_error = error;
    log_warn("msg=\"chromium failed to start\" error=\"" + error +
             "\" retry_in_ms=" + std::to_string(delay.count()));
    enter_backoff(delay, /*fail_fast=*/true);
    // Nothing queued may wait out the back-off: every render gets the reason now.
    auto waiting = std::move(queue);
    queue.clear();
    for (auto& j : waiting)
      finish_job(j, start_failure_result());
  }

  render_result start_failure_result() const {
    return failure(render_failure::unreachable, "cannot start Chromium: " + start_error);
  }

  void enter_backoff(milliseconds delay, bool fast) {
    phase_ = phase::backoff;
    fail_fast = fast;
    retry_timer.expires_after(delay);
    retry_timer.async_wait([self = shared_from_this(), fast](boost::system::error_code ec) {
      if (ec || self->phase_ != phase::backoff)
        return;
      self->fail_fast = false;
      self->phase_ = phase::stopped;
      // After a crash the browser comes back at once; after a failed start, on demand.
      if (!fast || !self->queue.empty())
        self->start_browser();
    });
  }

  // Closes the connection and kills the process; callbacks of that browser are ignored from
  // here on (generation).
  void stop_browser() {
    ++generation;
    ping_timer.cancel();
    ping_deadline.cancel();
    startup_timer.cancel();
    cdp.reset();
    kill_browser();
    targets_open = 0;
  }

  // The browser exited, closed DevTools, or stopped answering: fail its renders, restart it.
  bool shutting_down() {
    std::lock_guard lock(proc_mutex);
    return closed;
  }

  void browser_died(const std::string& why) {
    if (phase_ == phase::closed || shutting_down())
      return; // shutdown() killed it; on_shutdown answers the renders
    std::string status;
    if (auto s = exited())
      status = " (" + describe_exit(*s) + ")";
    log_warn("msg=\"chromium lost, restarting\" reason=\"" + why + status + "\"");
    phase_ = phase::backoff; // so finishing the renders below starts nothing on it
    stop_browser();
    auto victims = active;
    for (const auto& j : victims)
      finish_job(j, failure(render_failure::upstream,
                            "Chromium crashed during the render (" + why + "); restarting it"));
    ++consecutive_failures;
    auto delay =
        consecutive_failures <= 1
            ? milliseconds{0}
            : std::min<milliseconds>(
                  max_backoff, first_backoff * (1u << std::min(consecutive_failures - 2, 6u)));
    enter_backoff(delay, /*fail_fast=*/false);
  }

  void recycle() {
    log_info("msg=\"chromium recycled\" renders=" + std::to_string(renders_on_browser));
    stop_browser();
    phase_ = phase::stopped;
    start_browser();
  }

  void schedule_ping(std::uint64_t gen) {
    ping_timer.expires_after(options.ping_interval);
    ping_timer.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
      if (ec || gen != self->generation || self->phase_ != phase::ready)
        return;
      self->ping(gen);
    });
  }

  void ping(std::uint64_t gen) {
    if (auto status = exited())
      return browser_died("Chromium exited (" + describe_exit(*status) + ")");
    auto seq = ++ping_sent;
    cdp->call("Browser.getVersion", json::object(), {},
              [self = shared_from_this(), gen, seq](cdp::reply r) {
                if (gen != self->generation || !r.ok)
                  return; // a closed connection is reported through on_closed
                self->ping_answered = seq;
                self->ping_deadline.cancel();
                self->schedule_ping(gen);
              });
    ping_deadline.expires_after(options.ping_timeout);
    ping_deadline.async_wait([self = shared_from_this(), gen, seq](boost::system::error_code ec) {
      if (ec || gen != self->generation || self->ping_answered >= seq)
        return;
      self->browser_died("no answer to a ping within " +
                         format_seconds(seconds(self->options.ping_timeout)) + " s");
    });
  }

  // ---- renders (strand) ----------------------------------------------------------------

  void enqueue(const job_ptr& j) {
    if (phase_ == phase::closed)
      return finish_job(j, failure(render_failure::unreachable, "newsdesk is shutting down"));
    if (phase_ == phase::backoff && fail_fast)
      return finish_job(j, start_failure_result());
    queue.push_back(j);
    j->deadline.expires_after(j->request.timeout);
    j->deadline.async_wait([self = shared_from_this(), j](boost::system::error_code ec) {
      if (ec || j->finished)
        return;
      self->finish_job(j, failure(render_failure::timeout,
                                  "Chromium timed out after " +
                                      format_seconds(seconds(j->request.timeout)) + " s"));
    });
    pump();
  }

  void pump() {
    if (phase_ == phase::stopped && !queue.empty())
      return start_browser();
    if (phase_ != phase::ready)
      return;
    while (!queue.empty() && active.size() < options.max_concurrent &&
           renders_on_browser < options.recycle_after) {
      auto j = queue.front();
      queue.pop_front();
      begin(j);
    }
    if (renders_on_browser >= options.recycle_after && active.empty())
      recycle();
  }

  bool alive(std::uint64_t gen) const { return gen == generation && cdp && cdp->is_open(); }

  void begin(const job_ptr& j) {
    j->generation = generation;
    active.insert(j);
    ++renders_on_browser;
    active_count = active.size();
    if (active.size() > peak_active)
      peak_active = active.size();
    auto self = shared_from_this();
    cdp->call("Target.createTarget", {{"url", "about:blank"}}, {}, [self, j](cdp::reply r) {
      if (r.ok && self->alive(j->generation))
        ++self->targets_open;
      auto target = text_of(r.result, "targetId");
      if (j->finished) { // abandoned while the tab was opening: close it now
        if (!target.empty())
          self->close_target(j->generation, target);
        return;
      }
      if (!r.ok) {
        if (!self->alive(j->generation))
          return; // the browser died: browser_died reports it
        return self->finish_job(
            j, failure(render_failure::upstream, "Chromium could not open a tab: " + r.error));
      }
      j->target_id = target;
      self->attach(j);
    });
  }

  void attach(const job_ptr& j) {
    auto self = shared_from_this();
    cdp->call("Target.attachToTarget", {{"targetId", j->target_id}, {"flatten", true}}, {},
              [self, j](cdp::reply r) {
                if (j->finished)
                  return;
                if (!r.ok) {
                  if (!self->alive(j->generation))
                    return;
                  return self->finish_job(
                      j, failure(render_failure::upstream,
                                 "Chromium could not attach to the tab: " + r.error));
                }
                j->session_id = text_of(r.result, "sessionId");
                self->by_session[j->session_id] = j;
                self->navigate(j);
              });
  }

  void navigate(const job_ptr& j) {
    auto ignore = [](cdp::reply) {};
    cdp->call("Page.enable", json::object(), j->session_id, ignore);
    cdp->call("Page.setLifecycleEventsEnabled", {{"enabled", true}}, j->session_id, ignore);
    cdp->call("Inspector.enable", json::object(), j->session_id, ignore);
    auto self = shared_from_this();
    cdp->call("Page.navigate", {{"url", j->request.url}}, j->session_id, [self, j](cdp::reply r) {
      if (j->finished)
        return;
      if (!r.ok) {
        if (!self->alive(j->generation))
          return;
        return self->finish_job(
            j, failure(render_failure::rejected, "Chromium refused the URL: " + r.error));
      }
      if (auto error = text_of(r.result, "errorText"); !error.empty())
        return self->finish_job(
            j, failure(render_failure::upstream, "Chromium could not load the page: " + error));
      j->navigated = true;
      j->loader_id = text_of(r.result, "loaderId");
      if (j->loader_id.empty() || j->loaded.count(j->loader_id))
        self->after_load(j);
    });
  }

  void on_event(const std::string& method, const json& params, const std::string& session) {
    if (method == "Target.detachedFromTarget") {
      auto it = by_session.find(text_of(params, "sessionId"));
      if (it != by_session.end() && !it->second->finished)
        finish_job(it->second,
                   failure(render_failure::upstream, "Chromium closed the tab unexpectedly"));
      return;
    }
    auto it = by_session.find(session);
    if (it == by_session.end() || it->second->finished)
      return;
    const auto& j = it->second;
    if (method == "Page.lifecycleEvent") {
      if (text_of(params, "name") != "load")
        return;
      auto loader = text_of(params, "loaderId");
      j->loaded.insert(loader);
      if (j->navigated && loader == j->loader_id)
        after_load(j);
    } else if (method == "Page.javascriptDialogOpening") {
      // alert() and friends block the page until answered; nobody is there to click.
      cdp->call("Page.handleJavaScriptDialog", {{"accept", true}}, session, [](cdp::reply) {});
    } else if (method == "Inspector.targetCrashed") {
      finish_job(j, failure(render_failure::upstream, "the page crashed Chromium's renderer"));
    }
  }

  void after_load(const job_ptr& j) {
    if (j->reading)
      return;
    j->reading = true;
    j->wait.expires_after(j->request.wait);
    j->wait.async_wait([self = shared_from_this(), j](boost::system::error_code ec) {
      if (ec || j->finished)
        return;
      self->read_page(j);
    });
  }

  void read_page(const job_ptr& j) {
    if (!alive(j->generation))
      return;
    auto self = shared_from_this();
    cdp->call(
        "Runtime.evaluate", {{"expression", read_page_expression}, {"returnByValue", true}},
        j->session_id, [self, j](cdp::reply r) {
          if (j->finished)
            return;
          if (!r.ok) {
            if (!self->alive(j->generation))
              return;
            return self->finish_job(j, failure(render_failure::upstream,
                                               "Chromium could not read the page: " + r.error));
          }
          if (r.result.contains("exceptionDetails"))
            return self->finish_job(j, failure(render_failure::upstream,
                                               "Chromium could not read the page (script error)"));
          const json& value =
              r.result.value("result", json::object()).value("value", json::object());
          auto html = text_of(value, "html");
          auto status = value.is_object() && value.contains("status") && value["status"].is_number()
                            ? value["status"].get<int>()
                            : 0;
          render_result out;
          if (status >= 400)
            out = failure(render_failure::upstream, "site answered HTTP " + std::to_string(status));
          else if (html.size() > max_page_bytes)
            out = failure(render_failure::too_large,
                          "page too large: " + std::to_string(html.size()) + " bytes");
          else if (is_empty_page(html))
            out = failure(render_failure::empty, "Chromium rendered an empty page");
          else {
            out.html = std::move(html);
            out.url = text_of(value, "url");
            if (out.url.empty())
              out.url = j->request.url;
          }
          if (out.ok())
            self->consecutive_failures = 0;
          self->finish_job(j, std::move(out));
        });
  }

  void close_target(std::uint64_t gen, const std::string& target_id) {
    if (!alive(gen) || target_id.empty())
      return;
    cdp->call("Target.closeTarget", {{"targetId", target_id}}, {},
              [self = shared_from_this(), gen](cdp::reply r) {
                if (r.ok && gen == self->generation && self->targets_open > 0)
                  --self->targets_open;
              });
  }

  // The one end of every render: frees its slot, closes its tab, answers, starts the next.
  void finish_job(const job_ptr& j, render_result result) {
    if (j->finished)
      return;
    j->finished = true;
    j->deadline.cancel();
    j->wait.cancel();
    if (active.erase(j)) {
      if (!j->session_id.empty())
        by_session.erase(j->session_id);
      close_target(j->generation, j->target_id);
      active_count = active.size();
    } else {
      std::erase(queue, j);
    }
    result.elapsed = std::chrono::duration_cast<milliseconds>(clock_type::now() - j->started);
    if (!result.ok())
      log_info("msg=\"chromium render failed\" url=" + j->request.url + " error=\"" +
               result.message + "\"");
    auto done = std::move(j->done);
    done(std::move(result));
    pump();
  }

  // ---- shutdown ------------------------------------------------------------------------

  // `notify`: answer the renders still waiting. Not when the io_context has stopped: then the
  // callers' state (and the threads their callbacks post to) may already be gone.
  void on_shutdown(bool notify) {
    if (phase_ == phase::closed)
      return;
    phase_ = phase::closed;
    ++generation;
    startup_timer.cancel();
    retry_timer.cancel();
    ping_timer.cancel();
    ping_deadline.cancel();
    cdp.reset();
    if (!notify) {
      active.clear();
      queue.clear();
      by_session.clear();
      return;
    }
    auto victims = active;
    auto waiting = queue;
    for (const auto& j : victims)
      finish_job(j, failure(render_failure::unreachable, "newsdesk is shutting down"));
    for (const auto& j : waiting)
      finish_job(j, failure(render_failure::unreachable, "newsdesk is shutting down"));
  }
};

chromium_renderer::chromium_renderer(net::io_context& ioc, chromium_options options)
    : state_(std::make_shared<state>(ioc, std::move(options))) {}

chromium_renderer::~chromium_renderer() {
  shutdown();
  // When the io_context stopped after shutdown() posted its strand part, that part never runs,
  // and the DevTools connection, whose callbacks hold the state, would keep the state (and
  // itself) alive for good. No thread runs the strand any more: release it here.
  if (state_->ioc.stopped())
    state_->on_shutdown(false);
}

void chromium_renderer::render(render_request request, std::function<void(render_result)> done) {
  auto j = std::make_shared<job>(state_->strand);
  j->request = std::move(request);
  j->done = std::move(done);
  net::post(state_->strand, [s = state_, j] { s->enqueue(j); });
}

void chromium_renderer::warm_up() {
  net::post(state_->strand, [s = state_] {
    if (s->phase_ == state::phase::stopped)
      s->start_browser();
  });
}

void chromium_renderer::shutdown() {
  {
    std::lock_guard lock(state_->proc_mutex);
    if (state_->closed)
      return;
    state_->closed = true;
  }
  state_->kill_browser();
  if (state_->ioc.stopped())
    state_->on_shutdown(false); // no thread runs the strand any more
  else
    net::post(state_->strand, [s = state_] { s->on_shutdown(true); });
}

int chromium_renderer::browser_pid() const {
  return state_->pid_seen;
}
std::size_t chromium_renderer::browsers_started() const {
  return state_->started_count;
}
std::size_t chromium_renderer::active_renders() const {
  return state_->active_count;
}
std::size_t chromium_renderer::peak_active_renders() const {
  return state_->peak_active;
}
std::size_t chromium_renderer::open_targets() const {
  return state_->targets_open;
}

} // namespace newsdesk::server
