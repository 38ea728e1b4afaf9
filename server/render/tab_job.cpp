#include "server/render/tab_job.hpp"
#include "server/render/render_support.hpp"

#include "server/core/log.hpp"
#include "server/render/browser_process.hpp"
#include "server/render/cdp_client.hpp"

#include <nlohmann/json.hpp>

namespace newsdesk::server {

using json = nlohmann::json;
using std::chrono::milliseconds;

namespace {

// The same cap as the direct renderer's body limit: a front page runs to ~4 MB.
constexpr std::size_t max_page_bytes = 16 * 1024 * 1024;

// One expression reads the page, its final URL and the main document's HTTP status
// (PerformanceNavigationTiming.responseStatus, Chromium 109+; 0 when unknown).
constexpr const char* read_page_expression =
    "({html: document.documentElement ? document.documentElement.outerHTML : '',"
    " url: location.href,"
    " status: ((performance.getEntriesByType('navigation')[0] || {}).responseStatus) || 0})";

} // namespace

tab_job::tab_job(boost::asio::any_io_executor strand, render_request request,
                 std::function<void(render_result)> done, owner hooks)
    : request_(std::move(request))
    , done_(std::move(done))
    , owner_(std::move(hooks))
    , deadline_(strand)
    , wait_(strand) {}

void tab_job::end(render_result result) {
  owner_.end(shared_from_this(), std::move(result));
}

void tab_job::arm_deadline() {
  deadline_.expires_after(request_.timeout);
  deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_)
      return;
    self->end(render_failed(failure_kind::timeout,
                            "Chromium timed out after " +
                                format_seconds(seconds_of(self->request_.timeout)) + " s"));
  });
}

void tab_job::run(std::shared_ptr<browser_process> browser) {
  browser_ = std::move(browser);
  generation_ = browser_->generation();
  browser_->open_target([self = shared_from_this()](cdp::reply r) {
    auto target = string_field(r.result, "targetId");
    if (self->finished_) { // abandoned while the tab was opening: close it now
      if (!target.empty())
        self->browser_->close_target(self->generation_, target);
      return;
    }
    if (!r.ok) {
      if (!self->browser_->alive(self->generation_))
        return; // the browser died: its owner reports that
      return self->end(render_failed(failure_kind::browser_crashed,
                                     "Chromium could not open a tab: " + r.error));
    }
    self->target_id_ = target;
    self->attach();
  });
}

bool tab_job::accept(const cdp::reply& r, failure_kind kind, std::string_view what) {
  if (finished_)
    return false;
  if (r.ok)
    return true;
  if (browser_->alive(generation_))
    end(render_failed(kind, std::string(what) + r.error));
  return false;
}

void tab_job::attach() {
  if (!browser_->alive(generation_))
    return;
  browser_->connection().call("Target.attachToTarget",
                              {{"targetId", target_id_}, {"flatten", true}}, {},
                              [self = shared_from_this()](cdp::reply r) {
                                if (!self->accept(r, failure_kind::browser_crashed,
                                                  "Chromium could not attach to the tab: "))
                                  return;
                                self->session_id_ = string_field(r.result, "sessionId");
                                self->owner_.attached(self);
                                self->navigate();
                              });
}

void tab_job::navigate() {
  if (!browser_->alive(generation_))
    return;
  auto& cdp = browser_->connection();
  auto ignore = [](cdp::reply) {};
  cdp.call("Page.enable", json::object(), session_id_, ignore);
  cdp.call("Page.setLifecycleEventsEnabled", {{"enabled", true}}, session_id_, ignore);
  cdp.call("Inspector.enable", json::object(), session_id_, ignore);
  cdp.call("Page.navigate", {{"url", request_.url}}, session_id_,
           [self = shared_from_this()](cdp::reply r) {
             if (!self->accept(r, failure_kind::bad_address, "Chromium refused the URL: "))
               return;
             if (auto error = string_field(r.result, "errorText"); !error.empty())
               return self->end(render_failed(failure_kind::site_unreachable,
                                              "Chromium could not load the page: " + error));
             self->navigated_ = true;
             self->loader_id_ = string_field(r.result, "loaderId");
             if (self->loader_id_.empty() || self->loaded_.count(self->loader_id_))
               self->after_load();
           });
}

void tab_job::on_event(const std::string& method, const json& params, const std::string& session) {
  if (finished_)
    return;
  if (method == "Page.lifecycleEvent") {
    if (string_field(params, "name") != "load")
      return;
    auto loader = string_field(params, "loaderId");
    loaded_.insert(loader);
    if (navigated_ && loader == loader_id_)
      after_load();
  } else if (method == "Page.javascriptDialogOpening") {
    // alert() and friends block the page until answered; nobody is there to click.
    browser_->connection().call("Page.handleJavaScriptDialog", {{"accept", true}}, session,
                                [](cdp::reply) {});
  } else if (method == "Inspector.targetCrashed") {
    end(render_failed(failure_kind::browser_crashed, "the page crashed Chromium's renderer"));
  }
}

void tab_job::on_detached() {
  if (!finished_)
    end(render_failed(failure_kind::browser_crashed, "Chromium closed the tab unexpectedly"));
}

void tab_job::after_load() {
  if (reading_)
    return;
  reading_ = true;
  wait_.expires_after(request_.wait);
  wait_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_)
      return;
    self->read_page();
  });
}

void tab_job::read_page() {
  if (!browser_->alive(generation_))
    return;
  browser_->connection().call(
      "Runtime.evaluate", {{"expression", read_page_expression}, {"returnByValue", true}},
      session_id_, [self = shared_from_this()](cdp::reply r) {
        if (!self->accept(r, failure_kind::browser_crashed, "Chromium could not read the page: "))
          return;
        if (r.result.contains("exceptionDetails"))
          return self->end(render_failed(failure_kind::browser_crashed,
                                         "Chromium could not read the page (script error)"));
        const json& value = r.result.value("result", json::object()).value("value", json::object());
        auto html = string_field(value, "html");
        auto status = value.is_object() && value.contains("status") && value["status"].is_number()
                          ? value["status"].get<int>()
                          : 0;
        render_result out;
        if (status >= 400)
          out = render_failed(status == 404 ? failure_kind::not_found : failure_kind::site_error,
                              "site answered HTTP " + std::to_string(status));
        else if (html.size() > max_page_bytes)
          out = render_failed(failure_kind::too_large,
                              "page too large: " + std::to_string(html.size()) + " bytes");
        else if (is_empty_page(html))
          out = render_failed(failure_kind::empty, "Chromium rendered an empty page");
        else {
          out.html = std::move(html);
          out.url = string_field(value, "url");
          if (out.url.empty())
            out.url = self->request_.url;
        }
        self->end(std::move(out));
      });
}

void tab_job::finish(render_result result) {
  if (finished_)
    return;
  finished_ = true;
  deadline_.cancel();
  wait_.cancel();
  if (browser_)
    browser_->close_target(generation_, target_id_);
  result.elapsed =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started_);
  if (!result.ok())
    log_info("msg=\"chromium render failed\" url=" + logfmt_quoted(request_.url) +
             " error=" + logfmt_quoted(result.message));
  auto done = std::move(done_);
  done(std::move(result));
}

} // namespace newsdesk::server
