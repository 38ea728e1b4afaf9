// Renders pages in a real, current browser: newsdesk starts a headless Chromium itself and
// drives it over the Chrome DevTools Protocol (see cdp_client.hpp). Per render: open a target
// (tab), navigate, wait for the load event plus the site's `wait`, read
// document.documentElement.outerHTML, close the target.
//
// The browser:
// - starts on the first render (or warm_up()), with a fresh profile in a temporary folder and
//   DevTools on 127.0.0.1 at a port Chromium picks (read from <profile>/DevToolsActivePort);
// - is restarted when it exits, closes the DevTools socket, or stops answering the periodic
//   Browser.getVersion ping; start failures back off (0.5 s doubling to 30 s) and renders that
//   arrive during a back-off fail at once with the start error instead of waiting;
// - is recycled (a fresh process) after `recycle_after` renders, once its renders in flight
//   finish, which bounds the memory a long-running browser accumulates;
// - runs in its own process group, killed as a group (SIGKILL) on restart and shutdown.
//
// Renders run concurrently up to `max_concurrent`; the rest wait in a FIFO queue. A render's
// timeout covers queueing and everything after; past it the render fails ("Chromium timed out
// after 30 s") and its target is closed. Results: the page's final URL and HTML, or a notice
// (unreachable: Chromium cannot start; upstream: the site failed to load, answered >= 400, or
// the browser crashed mid-render; timeout; empty; too_large).
//
// Threading: render() and the accessors may be called from any thread. All state lives on one
// strand of the io_context; `done` runs on an io_context thread, exactly once (unless the
// io_context is stopped first, as for every renderer).
#pragma once

#include "server/render/renderer.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

struct chromium_options {
  std::string path = "/usr/bin/chromium";
  // Each tab is a renderer process of 50-150 MB; 4 keeps a 2-core, 2 GB machine responsive
  // while still overlapping the network waits of four sites.
  unsigned max_concurrent = 4;
  // Chromium's memory grows with every page (caches, leaked renderer memory, V8 heaps); a fresh
  // process every 100 renders bounds it for the cost of a ~1 s start now and then.
  unsigned recycle_after = 100;
  std::chrono::milliseconds startup_timeout{20'000}; // process start to DevTools handshake
  std::chrono::milliseconds ping_interval{10'000};   // how often a busy or idle browser is pinged
  std::chrono::milliseconds ping_timeout{10'000};    // no Browser.getVersion reply: hung
  std::vector<std::string> extra_args;               // appended to the command line
};

// The command line newsdesk runs (without the program): headless, no sandbox (it runs as root in
// containers), no background network traffic, no throttling of tabs that are not in front
// (renders run side by side, and only one tab can be in front), images off (headlines are
// text), DevTools on loopback at port 0.
std::vector<std::string> chromium_arguments(const std::string& profile_dir,
                                            const std::vector<std::string>& extra);

// Finds a Chromium: `configured` when given (must be executable), else the first of
// chromium, chromium-browser, google-chrome on PATH. Empty when none.
std::string find_chromium(const std::string& configured);

class chromium_renderer final : public renderer {
 public:
  chromium_renderer(boost::asio::io_context& ioc, chromium_options options);
  // Kills the browser (process group) and removes its profile; safe from any thread.
  ~chromium_renderer() override;
  chromium_renderer(const chromium_renderer&) = delete;
  chromium_renderer& operator=(const chromium_renderer&) = delete;

  std::string_view name() const override { return "chromium"; }
  void render(render_request request, std::function<void(render_result)> done) override;

  // Starts the browser now rather than on the first render.
  void warm_up();
  // Stops the browser for good; later renders fail with a notice. Idempotent, any thread.
  void shutdown();

  // Observability (and tests): the running browser's pid (0: none), how many browsers were
  // started, renders in flight now, the most ever in flight at once, targets opened and not yet
  // confirmed closed.
  int browser_pid() const;
  std::size_t browsers_started() const;
  std::size_t active_renders() const;
  std::size_t peak_active_renders() const;
  std::size_t open_targets() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

} // namespace newsdesk::server
