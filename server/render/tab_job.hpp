// One render of the chromium renderer, in one tab of its browser: open a target (tab), attach
// to it (a flattened session), navigate, wait for the navigation's load event plus the
// request's `wait`, read document.documentElement.outerHTML, the final URL and the HTTP status
// in one Runtime.evaluate, and close the tab.
//
// A job decides its own outcome (a page, a failed step, its deadline, the tab closed or its
// renderer crashed) but does not end itself: it hands the result to its owner's `end` hook,
// which frees the job's place (queue or concurrency slot) and then calls finish(). So the owner
// sees every ending, whoever decided it (the job, a lost browser, shutdown).
//
// Failure: every step's failure becomes a render_result notice (rejected: the URL was refused;
// upstream: the page failed to load, answered >= 400, crashed, or the tab went away; timeout;
// empty; too_large). A step whose reply fails because the browser died says nothing: the
// browser_process reports the loss, and the owner ends the job with that.
//
// Ownership and threading: created with make_shared and held by its owner until it ends; its
// callbacks hold it. Everything runs on the owner's strand (the browser_process's), including
// `done`, which runs exactly once, from finish().
#pragma once

#include "server/render/renderer.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

namespace newsdesk::server {

class browser_process;
namespace cdp {
struct reply;
}

class tab_job : public std::enable_shared_from_this<tab_job> {
 public:
  struct owner {
    // The job attached to its tab: route events of session_id() to on_event() from now on.
    std::function<void(const std::shared_ptr<tab_job>&)> attached;
    // The job has its outcome: the owner frees its place, then calls finish(result).
    std::function<void(const std::shared_ptr<tab_job>&, render_result)> end;
  };

  tab_job(boost::asio::any_io_executor strand, render_request request,
          std::function<void(render_result)> done, owner hooks);

  const render_request& request() const { return request_; }
  bool finished() const { return finished_; }
  const std::string& session_id() const { return session_id_; }

  // Starts the render's deadline (request.timeout), which covers queueing and everything after;
  // when it passes the job ends with "Chromium timed out after N s".
  void arm_deadline();
  // Runs the render on the browser's current generation, which must be ready.
  void run(std::shared_ptr<browser_process> browser);
  // A DevTools event of this job's session (load, dialogs, a renderer crash).
  void on_event(const std::string& method, const nlohmann::json& params,
                const std::string& session);
  // Chromium detached this job's session: the tab went away under it.
  void on_detached();

  // Ends the job: cancels its timers, closes its tab (if it opened one), stamps the elapsed
  // time, logs a failure and calls `done`. Idempotent; called by the owner from its `end` hook.
  void finish(render_result result);

 private:
  void end(render_result result);
  // Whether a DevTools reply is still this render's to act on. A failed call ends the render
  // with `kind` and `what` plus the error, unless the browser went away (its loss ends every
  // render already); either way the caller stops.
  bool accept(const cdp::reply& r, failure_kind kind, std::string_view what);
  void attach();
  void navigate();
  void after_load();
  void read_page();

  render_request request_;
  std::function<void(render_result)> done_;
  owner owner_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  boost::asio::steady_timer deadline_;
  boost::asio::steady_timer wait_;
  bool finished_ = false;
  std::shared_ptr<browser_process> browser_; // set by run()
  std::uint64_t generation_ = 0;             // the browser it runs on
  std::string target_id_;
  std::string session_id_;
  std::string loader_id_;        // the navigation's, from Page.navigate
  std::set<std::string> loaded_; // loaders whose "load" lifecycle event arrived
  bool navigated_ = false;
  bool reading_ = false;
};

} // namespace newsdesk::server
