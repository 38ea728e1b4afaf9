// Renders pages through a browserless server (https://www.browserless.io/, self-hosted as a
// container): POST {base}/content with {"url": ..., "gotoOptions": {...}, "waitForTimeout": ...}
// answers the rendered HTML; the target page's own HTTP status comes back in the
// X-Response-Code header. For operators who already run browserless instead of letting
// newsdesk start a Chromium itself.
//
// Only http:// base URLs (a local container); a token goes in the base URL's query
// ("http://browserless:3000?token=..."). Thread-safe; `done` runs on an io_context thread,
// exactly once.
#pragma once

#include "server/http/http_message.hpp"
#include "server/render/renderer.hpp"

#include <chrono>
#include <string>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

struct renderer_descriptor;

// Its setting (browserless_url), declared in its descriptor.
struct browserless_options {
  std::string url; // e.g. "http://browserless:3000" (token in the query); empty: none
};

// Its registration (renderers.cpp): made when a URL is set; never chosen automatically (an
// operator who runs browserless says which sites use it).
const renderer_descriptor& browserless_descriptor();

class browserless_renderer final : public renderer {
 public:
  browserless_renderer(boost::asio::io_context& ioc, std::string base_url);

  std::string_view name() const override;
  void render(render_request request, std::function<void(render_result)> done) override;

  // browserless ends the session itself at `timeout` (the timeout query parameter); our own
  // deadline waits a little longer, as for Splash, so a hung server is still cut off.
  static constexpr std::chrono::milliseconds grace_for(std::chrono::milliseconds timeout) {
    return std::chrono::milliseconds{1'000} + timeout / 10;
  }

 private:
  boost::asio::io_context& ioc_;
  std::string base_;
};

// {base}/content?timeout=MS, keeping the base's query (the token).
std::string browserless_content_url(const std::string& base_url, const render_request& request);
// The JSON body for one render.
std::string browserless_request_body(const render_request& request);
// Turns one answer into a page or a notice.
render_result interpret_browserless_answer(unsigned status, const header_list& headers,
                                           std::string body, const render_request& request);

} // namespace newsdesk::server
