// Renders pages through Splash's HTTP API: POST /execute with a short Lua script (the main
// document's status and errors, subframes ignored), or GET /render.html where Splash runs without
// Lua. See ../shared/splash-api.md for how a real Splash answers; every case there becomes a
// render_result with a notice.
#pragma once

#include "server/render/renderer.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

namespace newsdesk::server {

class http_client;
struct http_fetch_result;
struct renderer_descriptor;

// Its settings (splash_url, splash_max_timeout), declared in its descriptor.
struct splash_options {
  std::string url; // the service's base, e.g. "http://splash:8050"; empty: no Splash
  // Splash's own --max-timeout: it answers 400 to longer renders, so sites may not ask for them.
  // 90 s is Splash's default.
  double max_timeout = 90;
};

// Its registration (renderers.cpp): made when a URL is set, the first automatic choice.
const renderer_descriptor& splash_descriptor();

class splash_renderer final : public renderer {
 public:
  // `splash_url` is the service's base, e.g. "http://splash:8050".
  splash_renderer(http_client& client, std::string splash_url);

  std::string_view name() const override;
  void render(render_request request, std::function<void(render_result)> done) override;

  // Splash answers 504 itself when `timeout` passes; our own deadline waits a little longer
  // (1 s plus a tenth of the timeout, for queueing and transfer) so a hung Splash or network
  // is still cut off.
  static constexpr std::chrono::milliseconds grace_for(std::chrono::milliseconds timeout) {
    return std::chrono::milliseconds{1'000} + timeout / 10;
  }

 private:
  bool use_execute() const;
  void render_html(render_request request, std::function<void(render_result)> done);
  void finish(http_fetch_result answer, const render_request& request,
              const std::function<void(render_result)>& done,
              render_result (*interpret)(unsigned, std::string, const render_request&)) const;

  http_client& client_;
  std::string base_; // without a trailing '/'
  // When /execute last answered 404 (steady clock ticks), 0 while it works: renders then go
  // through render.html, trying /execute again after a while.
  std::atomic<std::chrono::steady_clock::rep> execute_missing_since_{0};
};

// The render.html URL for a request, with the target URL percent-encoded.
std::string splash_render_url(std::string_view splash_url, const render_request& request);

// The JSON body of a POST /execute for a request: the render script and its arguments.
std::string splash_execute_body(const render_request& request);

// Turns one /execute answer into a result: the page, the site's own HTTP error ("the site
// answered HTTP 404"), the main document's network error, or Splash's own error.
render_result interpret_splash_execute_answer(unsigned status, std::string body,
                                              const render_request& request);

// Turns one render.html answer into a result: a page, or a notice naming what went wrong.
render_result interpret_splash_answer(unsigned status, std::string body,
                                      const render_request& request);

// RFC 3986 percent-encoding of everything but unreserved characters.
std::string percent_encode(std::string_view text);

} // namespace newsdesk::server
