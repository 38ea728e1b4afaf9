// Supervises the chromium renderer's browser: one headless Chromium at a time, started, watched,
// restarted and killed here; what runs inside it (tabs) is tab_job's business, and which render
// runs when is chromium_renderer's.
//
// Lifecycle (a state machine: stopped -> starting -> ready, with backoff and closed):
// - start() spawns Chromium in its own process group with a fresh profile in a temporary folder,
//   waits for <profile>/DevToolsActivePort (Chromium picks the port) and opens the DevTools
//   connection; within options.startup_timeout, else the start failed.
// - A failed start backs off (0.5 s doubling to 30 s) in "fail fast" mode: the owner should fail
//   renders at once with start_error() rather than queue them. When the back-off ends the
//   browser is stopped again and the `idle` hook runs, so the owner restarts it on demand.
// - A browser that exits, closes the DevTools socket or misses a Browser.getVersion ping is lost:
//   the `lost` hook runs (the owner fails the renders on it), then it is restarted at once after
//   a first loss, with the same back-off after repeated ones.
// - recycle() replaces a ready browser by a fresh process; the owner calls it once the browser
//   has served options.recycle_after renders (recycle_due()) and none is in flight.
// - Every start or stop bumps generation(): callbacks of an older browser are ignored, and a
//   caller holding a generation can ask alive(gen) whether its browser is still the current one.
//
// Ownership: created with make_shared (callbacks hold it); it owns the process, the profile
// folder and the DevTools connection. The connection's callbacks hold the browser_process, a
// cycle that close() breaks; the destructor kills the process group and removes the profile.
//
// Threading: everything runs on the strand given at construction, and every hook runs there.
// Only kill_for_good(), shutting_down() and the counters (pid(), started(), open_targets()) may
// be called from any thread; the process itself is guarded by a mutex for them.
#pragma once

#include "server/render/cdp_client.hpp"
#include "server/render/chromium_options.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace newsdesk::server {

class browser_process : public std::enable_shared_from_this<browser_process> {
 public:
  // What the owner hears, always on the strand. Hooks may call back into the browser_process.
  struct hooks {
    std::function<void()> ready; // DevTools is open: renders may start
    // A start failed; the browser is in fail-fast back-off with start_error() set.
    std::function<void(const std::string& error)> start_failed;
    // A running browser was lost (why: "Chromium exited (...)", a closed socket, a missed
    // ping); its tabs are gone, and a restart is scheduled after this hook returns.
    std::function<void(const std::string& why)> lost;
    // The back-off after a failed start ended: the browser is stopped; start() it if needed.
    std::function<void()> idle;
    // DevTools events of the current browser (tab lifecycle, dialogs, crashes).
    cdp::event_handler event;
  };

  browser_process(boost::asio::any_io_executor strand, chromium_options options);
  ~browser_process(); // kills the process group and removes the profile, if still there
  browser_process(const browser_process&) = delete;
  browser_process& operator=(const browser_process&) = delete;

  // Set once, before the first start().
  void set_hooks(hooks h);

  // ---- strand only ----
  void start();   // from stopped: spawn and connect; does nothing once closed
  void recycle(); // stop the current browser and start a fresh one
  void close();   // for good: cancels the timers and drops the connection (breaking its cycle)

  bool stopped() const { return phase_ == phase::stopped; }
  bool ready() const { return phase_ == phase::ready; }
  bool closed() const { return phase_ == phase::closed; }
  bool failing_fast() const { return phase_ == phase::backoff && fail_fast_; }
  const std::string& start_error() const { return start_error_; }

  std::uint64_t generation() const { return generation_; }
  // True while `gen` is the current browser and its DevTools connection is open.
  bool alive(std::uint64_t gen) const;
  // The current browser's connection; only while ready() (or inside a reply of an alive one).
  cdp::connection& connection() { return *cdp_; }

  // Recycling: renders started on the current browser, counted by the owner.
  bool has_capacity() const { return renders_on_browser_ < options_.recycle_after; }
  bool recycle_due() const { return renders_on_browser_ >= options_.recycle_after; }
  void count_render() { ++renders_on_browser_; }
  // A render succeeded: the browser works, so the next loss restarts without back-off.
  void render_succeeded() { consecutive_failures_ = 0; }

  // Target.createTarget (about:blank) on the current browser, counted in open_targets().
  void open_target(std::function<void(cdp::reply)> done);
  // Target.closeTarget, when `gen` is still alive; the count drops when the browser confirms.
  void close_target(std::uint64_t gen, const std::string& target_id);

  // ---- any thread ----
  // Marks the browser closed and kills it now; false when that already happened. The owner
  // then posts close() (or calls it directly when no thread runs the strand any more).
  bool kill_for_good();
  bool shutting_down() const;
  int pid() const { return pid_seen_; } // 0: none running
  std::size_t started() const { return started_count_; }
  std::size_t open_targets() const { return targets_open_; }

 private:
  enum class phase { stopped, starting, ready, backoff, closed };

  std::string spawn();
  std::optional<int> exited();
  void kill_process();
  void poll_port(std::uint64_t gen);
  void connect(std::uint64_t gen, const std::string& port, const std::string& path);
  void start_failed(const std::string& error);
  void enter_backoff(std::chrono::milliseconds delay, bool fail_fast);
  void stop_browser();
  void browser_died(const std::string& why);
  void schedule_ping(std::uint64_t gen);
  void ping(std::uint64_t gen);

  boost::asio::any_io_executor strand_;
  chromium_options options_;
  hooks hooks_;

  // Strand only.
  phase phase_ = phase::stopped;
  bool fail_fast_ = false;
  std::string start_error_;
  unsigned consecutive_failures_ = 0;
  std::uint64_t generation_ = 0; // bumped whenever a browser starts or stops
  std::unique_ptr<cdp::connection> cdp_;
  std::size_t renders_on_browser_ = 0;
  std::chrono::steady_clock::time_point started_at_;
  boost::asio::steady_timer startup_timer_;
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer ping_timer_;
  boost::asio::steady_timer ping_deadline_;
  std::uint64_t ping_sent_ = 0;
  std::uint64_t ping_answered_ = 0;

  // The process: guarded by proc_mutex_, because kill_for_good() may run on any thread.
  mutable std::mutex proc_mutex_;
  int pid_ = 0;
  std::string profile_dir_;
  bool closed_ = false;

  std::atomic<int> pid_seen_{0};
  std::atomic<std::size_t> started_count_{0};
  std::atomic<std::size_t> targets_open_{0};
};

} // namespace newsdesk::server
