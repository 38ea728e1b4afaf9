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
// The renderer itself is the small part that queues renders and joins the two state machines
// below it: browser_process.hpp supervises the browser (the list above), tab_job.hpp runs one
// render in one tab. A lost browser ends the renders on it; a failed start ends the queued ones.
//
// Threading: render() and the accessors may be called from any thread. All state (the
// renderer's queue, the browser_process and every tab_job) lives on one strand of the io_context;
// `done` runs on an io_context thread, exactly once (unless the io_context is stopped first, as for
// every renderer).
#pragma once

#include "server/render/chromium_options.hpp"
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

struct renderer_descriptor;

// Its registration (renderers.cpp): its settings are chromium_options' (chromium_path,
// chromium_max_concurrent, chromium_recycle_after); made when a browser was found, the
// automatic choice after Splash.
const renderer_descriptor& chromium_descriptor();

class chromium_renderer final : public renderer {
 public:
  chromium_renderer(boost::asio::io_context& ioc, chromium_options options);
  // Kills the browser (process group) and removes its profile; safe from any thread.
  ~chromium_renderer() override;
  chromium_renderer(const chromium_renderer&) = delete;
  chromium_renderer& operator=(const chromium_renderer&) = delete;

  std::string_view name() const override;
  void render(render_request request, std::function<void(render_result)> done) override;

  // Starts the browser now rather than on the first render.
  void warm_up() override;
  // Stops the browser for good; later renders fail with a notice. Idempotent, any thread.
  void shutdown() override;

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
