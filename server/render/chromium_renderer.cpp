#include "server/render/chromium_renderer.hpp"
#include "server/render/render_support.hpp"

#include "server/render/browser_process.hpp"
#include "server/render/renderer_descriptor.hpp"
#include "server/render/tab_job.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <set>

namespace newsdesk::server {

namespace net = boost::asio;
using json = nlohmann::json;
using job_ptr = std::shared_ptr<tab_job>;

// Joins the browser and the renders: a FIFO of renders waiting for a slot, the renders in flight
// (at most max_concurrent), and the routing of DevTools events to the render whose session they
// name. Everything here runs on `strand`, which the browser_process and every tab_job share.
struct chromium_renderer::state : std::enable_shared_from_this<state> {
  state(net::io_context& ioc_, chromium_options options)
      : ioc(ioc_)
      , strand(net::make_strand(ioc_))
      , max_concurrent(std::max(options.max_concurrent, 1u))
      , browser(std::make_shared<browser_process>(strand, std::move(options))) {}

  // The hooks hold the state weakly: the browser (through its connection's callbacks) and the
  // jobs (through their timers) may outlive it by a moment, and must not keep it alive.
  void init() {
    std::weak_ptr<state> weak = shared_from_this();
    browser_process::hooks h;
    h.ready = [weak] {
      if (auto s = weak.lock())
        s->pump();
    };
    h.idle = h.ready; // on demand: pump() starts the browser when renders wait
    h.start_failed = [weak](const std::string&) {
      if (auto s = weak.lock())
        s->fail_waiting();
    };
    h.lost = [weak](const std::string& why) {
      if (auto s = weak.lock())
        s->fail_active(why);
    };
    h.event = [weak](const std::string& method, const json& params, const std::string& session) {
      if (auto s = weak.lock())
        s->route(method, params, session);
    };
    browser->set_hooks(std::move(h));
  }

  tab_job::owner job_owner() {
    std::weak_ptr<state> weak = weak_from_this();
    tab_job::owner o;
    o.attached = [weak](const job_ptr& j) {
      if (auto s = weak.lock())
        s->by_session[j->session_id()] = j;
    };
    o.end = [weak](const job_ptr& j, render_result result) {
      if (auto s = weak.lock())
        s->finish_job(j, std::move(result));
    };
    return o;
  }

  net::io_context& ioc;
  net::strand<net::io_context::executor_type> strand;
  const unsigned max_concurrent;
  std::shared_ptr<browser_process> browser;

  // Strand only.
  std::deque<job_ptr> queue;
  std::set<job_ptr> active;
  std::map<std::string, job_ptr> by_session;

  std::atomic<std::size_t> active_count{0};
  std::atomic<std::size_t> peak_active{0};

  render_result start_failure_result() const {
    return render_failed(failure_kind::renderer_down,
                         "cannot start Chromium: " + browser->start_error());
  }

  void enqueue(const job_ptr& j) {
    if (browser->closed())
      return finish_job(j, render_failed(failure_kind::shutting_down, "newsdesk is shutting down"));
    if (browser->failing_fast())
      return finish_job(j, start_failure_result());
    queue.push_back(j);
    j->arm_deadline();
    pump();
  }

  void pump() {
    if (browser->stopped() && !queue.empty())
      return browser->start();
    if (!browser->ready())
      return;
    while (!queue.empty() && active.size() < max_concurrent && browser->has_capacity()) {
      auto j = queue.front();
      queue.pop_front();
      active.insert(j);
      browser->count_render();
      active_count = active.size();
      if (active.size() > peak_active)
        peak_active = active.size();
      j->run(browser);
    }
    if (browser->recycle_due() && active.empty())
      browser->recycle();
  }

  // A start failed: nothing queued may wait out the back-off; every render gets the reason now.
  void fail_waiting() {
    auto waiting = std::move(queue);
    queue.clear();
    for (auto& j : waiting)
      finish_job(j, start_failure_result());
  }

  // The browser was lost: its tabs went with it.
  void fail_active(const std::string& why) {
    auto victims = active;
    for (const auto& j : victims)
      finish_job(j,
                 render_failed(failure_kind::browser_crashed,
                               "Chromium crashed during the render (" + why + "); restarting it"));
  }

  void route(const std::string& method, const json& params, const std::string& session) {
    if (method == "Target.detachedFromTarget") {
      auto it = by_session.find(string_field(params, "sessionId"));
      if (it != by_session.end())
        it->second->on_detached();
      return;
    }
    if (auto it = by_session.find(session); it != by_session.end())
      it->second->on_event(method, params, session);
  }

  // The one end of every render: frees its slot or its place in the queue, lets the job close
  // its tab and answer, starts the next.
  void finish_job(const job_ptr& j, render_result result) {
    if (j->finished())
      return;
    if (active.erase(j)) {
      if (!j->session_id().empty())
        by_session.erase(j->session_id());
      active_count = active.size();
    } else {
      std::erase(queue, j);
    }
    if (result.ok())
      browser->render_succeeded();
    j->finish(std::move(result));
    pump();
  }

  // `notify`: answer the renders still waiting. Not when the io_context has stopped: then the
  // callers' state (and the threads their callbacks post to) may already be gone.
  void on_shutdown(bool notify) {
    if (browser->closed())
      return;
    browser->close();
    if (!notify) {
      active.clear();
      queue.clear();
      by_session.clear();
      return;
    }
    auto victims = active;
    auto waiting = queue;
    for (const auto& j : victims)
      finish_job(j, render_failed(failure_kind::shutting_down, "newsdesk is shutting down"));
    for (const auto& j : waiting)
      finish_job(j, render_failed(failure_kind::shutting_down, "newsdesk is shutting down"));
  }
};

chromium_renderer::chromium_renderer(net::io_context& ioc, chromium_options options)
    : state_(std::make_shared<state>(ioc, std::move(options))) {
  state_->init();
}

chromium_renderer::~chromium_renderer() {
  shutdown();
  // When the io_context stopped after shutdown() posted its strand part, that part never runs,
  // and the DevTools connection, whose callbacks hold the browser_process, would keep it (and
  // itself) alive for good. No thread runs the strand any more: release it here.
  if (state_->ioc.stopped())
    state_->on_shutdown(false);
}

void chromium_renderer::render(render_request request, std::function<void(render_result)> done) {
  auto j = std::make_shared<tab_job>(state_->strand, std::move(request), std::move(done),
                                     state_->job_owner());
  net::post(state_->strand, [s = state_, j] { s->enqueue(j); });
}

void chromium_renderer::warm_up() {
  net::post(state_->strand, [s = state_] {
    if (s->browser->stopped())
      s->browser->start();
  });
}

void chromium_renderer::shutdown() {
  if (!state_->browser->kill_for_good())
    return;
  if (state_->ioc.stopped())
    state_->on_shutdown(false); // no thread runs the strand any more
  else
    net::post(state_->strand, [s = state_] { s->on_shutdown(true); });
}

int chromium_renderer::browser_pid() const {
  return state_->browser->pid();
}
std::size_t chromium_renderer::browsers_started() const {
  return state_->browser->started();
}
std::size_t chromium_renderer::active_renders() const {
  return state_->active_count;
}
std::size_t chromium_renderer::peak_active_renders() const {
  return state_->peak_active;
}
std::size_t chromium_renderer::open_targets() const {
  return state_->browser->open_targets();
}

namespace {
constexpr std::string_view chromium_name = "chromium";
} // namespace

std::string_view chromium_renderer::name() const {
  return chromium_name;
}

const renderer_descriptor& chromium_descriptor() {
  static const renderer_descriptor descriptor{
      .name = chromium_name,
      .proper_name = "Chromium",
      .automatic = true,
      .available_when = "when installed",
      .options = chromium_options{},
      .rows = option_rows<chromium_options>({
          settings::field(&chromium_options::configured_path,
                          {.path = "chromium_path",
                           .flag = "--chromium-path P",
                           .help = "the Chromium to run; unset: chromium, chromium-browser or "
                                   "google-chrome on PATH"}),
          settings::field(&chromium_options::max_concurrent,
                          {.path = "chromium_max_concurrent",
                           .flag = "--chromium-max-concurrent N",
                           .min = 1,
                           .max = 64,
                           .help = "renders (tabs) at once in the one browser"}),
          settings::field(&chromium_options::recycle_after,
                          {.path = "chromium_recycle_after",
                           .flag = "--chromium-recycle-after N",
                           .min = 1,
                           .help = "renders before the browser is replaced by a fresh one"}),
      }),
      .resolve =
          [](renderer_options& all) {
            auto& options = all.of<chromium_options>();
            options.path = find_chromium(options.configured_path);
          },
      .missing =
          [](const renderer_options& all) {
            const auto& options = all.of<chromium_options>();
            if (!options.path.empty())
              return std::string();
            return "none was found" +
                   (options.configured_path.empty()
                        ? std::string(" (install the chromium package or set chromium_path / "
                                      "NEWSDESK_CHROMIUM_PATH)")
                        : " at '" + options.configured_path + "'");
          },
      .address = [](const renderer_options& all) { return all.of<chromium_options>().path; },
      .make = [](const renderer_context& context,
                 const renderer_options& all) -> std::unique_ptr<renderer> {
        return std::make_unique<chromium_renderer>(context.ioc, all.of<chromium_options>());
      },
  };
  return descriptor;
}

} // namespace newsdesk::server
