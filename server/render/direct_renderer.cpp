#include "server/render/direct_renderer.hpp"

#include "server/render/render_support.hpp"

#include "scrapers/url.hpp"
#include "server/render/http_client.hpp"
#include "server/render/renderer_descriptor.hpp"

#include <memory>
#include <optional>

namespace newsdesk::server {

namespace {
using clock_type = std::chrono::steady_clock;

constexpr std::string_view direct_name = "direct";
constexpr std::string_view feed_name = "feed";

// Feed types first; servers that only know XML or HTML still answer.
constexpr const char* feed_accept = "application/rss+xml, application/atom+xml, "
                                    "application/rdf+xml;q=0.9, application/xml;q=0.8, "
                                    "text/xml;q=0.8, */*;q=0.5";

// The state of one render across redirect hops.
struct direct_fetch : std::enable_shared_from_this<direct_fetch> {
  direct_renderer& owner;
  http_client& client;
  render_request request;
  std::optional<direct_renderer::remembered_feed> known; // what the last full poll returned
  std::function<void(render_result)> done;
  clock_type::time_point deadline;
  clock_type::time_point started = clock_type::now();
  int redirects = 0;

  direct_fetch(direct_renderer& o, http_client& c, render_request r,
               std::function<void(render_result)> d)
      : owner(o)
      , client(c)
      , request(std::move(r))
      , done(std::move(d))
      , deadline(clock_type::now() + request.timeout) {}

  void fetch(std::string url) {
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (remaining <= std::chrono::milliseconds{0})
      return finish_timeout();
    http_fetch_options options;
    options.timeout = remaining;
    // Internal addresses only for a site the operator put on one (its URL an internal IP);
    // every hop is checked, so a redirect cannot lead there either.
    options.public_addresses_only = !names_internal_address(request.url);
    // A site that trickles its page holds a render slot: cut it once it falls under 4 KiB in
    // 5 s (a real page arrives at hundreds of KiB a second; a trickle of 300 B/s never ends).
    options.progress_bytes = 4096;
    if (owner.conditional()) {
      options.headers.emplace_back("Accept", feed_accept);
      // Validators belong to the URL asked for; a redirect's target is asked plainly.
      if (redirects == 0 && (known = owner.recall(url))) {
        if (!known->etag.empty())
          options.headers.emplace_back("If-None-Match", known->etag);
        if (!known->last_modified.empty())
          options.headers.emplace_back("If-Modified-Since", known->last_modified);
      }
    }
    client.get(url, std::move(options), [self = shared_from_this(), url](http_fetch_result answer) {
      self->on_answer(url, std::move(answer));
    });
  }

  void on_answer(const std::string& url, http_fetch_result answer) {
    switch (answer.failure) {
    case fetch_failure::none:
      break;
    case fetch_failure::timeout:
      return finish_timeout();
    case fetch_failure::too_large:
      return finish(failure_kind::too_large, "page too large: " + answer.error);
    case fetch_failure::bad_url:
      return finish(failure_kind::bad_address, answer.error);
    case fetch_failure::too_slow:
      return finish(failure_kind::timeout, "site too slow: " + answer.error);
    case fetch_failure::refused_address:
      return finish(failure_kind::bad_address, "refused " + url + ": " + answer.error);
    default:
      return finish(failure_kind::site_unreachable, "cannot fetch " + url + ": " + answer.error);
    }
    if (answer.status == 304 && known && redirects == 0) {
      owner.count_not_modified();
      render_result same;
      same.html = known->body;
      same.url = known->url;
      same.content_type = known->content_type;
      return complete(std::move(same));
    }
    if (answer.status >= 300 && answer.status < 400 && answer.status != 304) {
      auto location = answer.header("Location");
      if (location.empty())
        return finish(failure_kind::redirect, "site redirected without a Location");
      if (++redirects > direct_renderer::max_redirects)
        return finish(failure_kind::redirect, "too many redirects (more than " +
                                                  std::to_string(direct_renderer::max_redirects) +
                                                  ")");
      auto next = scrapers::url::resolve(url, location);
      if (!next || !scrapers::url::is_http_url(*next))
        return finish(failure_kind::redirect, "site redirected to a non-http(s) address");
      return fetch(*next);
    }
    if (answer.status != 200)
      return finish(answer.status == 404 ? failure_kind::not_found : failure_kind::site_error,
                    "site answered HTTP " + std::to_string(answer.status));
    if (owner.conditional()) {
      direct_renderer::remembered_feed feed{answer.header("ETag"),
                                            answer.header("Last-Modified"),
                                            {},
                                            url,
                                            answer.header("Content-Type")};
      if (!feed.etag.empty() || !feed.last_modified.empty()) {
        feed.body = answer.body;
        owner.remember(request.url, std::move(feed));
      }
    }
    render_result ok;
    ok.html = std::move(answer.body);
    ok.url = url;
    ok.content_type = answer.header("Content-Type");
    complete(std::move(ok));
  }

  void finish_timeout() {
    finish(failure_kind::timeout,
           "site did not answer within " +
               format_seconds(static_cast<double>(request.timeout.count()) / 1000.0) + " s");
  }

  void finish(failure_kind kind, std::string message) {
    complete(render_failed(kind, std::move(message)));
  }

  void complete(render_result r) {
    r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);
    done(std::move(r));
  }
};
} // namespace

void direct_renderer::render(render_request request, std::function<void(render_result)> done) {
  auto url = request.url;
  std::make_shared<direct_fetch>(*this, client_, std::move(request), std::move(done))
      ->fetch(std::move(url));
}

std::optional<direct_renderer::remembered_feed>
direct_renderer::recall(const std::string& url) const {
  std::lock_guard lock(mutex_);
  auto it = feeds_.find(url);
  if (it == feeds_.end())
    return std::nullopt;
  return it->second;
}

void direct_renderer::remember(const std::string& url, remembered_feed feed) {
  std::lock_guard lock(mutex_);
  if (feeds_.size() >= max_remembered_feeds && !feeds_.count(url))
    feeds_.erase(feeds_.begin());
  feeds_[url] = std::move(feed);
}

std::string_view direct_renderer::name() const {
  return mode_ == mode::feed ? feed_name : direct_name;
}

namespace {
std::string own_url(const renderer_options&) {
  return "each site's own URL";
}
} // namespace

const renderer_descriptor& direct_descriptor() {
  static const renderer_descriptor descriptor{
      .name = direct_name,
      .automatic = true,
      .address = own_url,
      .make = [](const renderer_context& context,
                 const renderer_options&) -> std::unique_ptr<renderer> {
        return std::make_unique<direct_renderer>(context.client);
      },
  };
  return descriptor;
}

const renderer_descriptor& feed_descriptor() {
  static const renderer_descriptor descriptor{
      .name = feed_name,
      .listed = false,
      .address = own_url,
      .make = [](const renderer_context& context,
                 const renderer_options&) -> std::unique_ptr<renderer> {
        return std::make_unique<direct_renderer>(context.client, direct_renderer::mode::feed);
      },
  };
  return descriptor;
}

} // namespace newsdesk::server
