// A renderer turns a site's URL into the HTML its scraper reads: through Splash (JavaScript
// run), or fetched directly (no JavaScript). Failures come back as short, human-readable
// notices for the page ("Splash timed out after 30 s"), never as exceptions.
#pragma once

#include "server/core/failure.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace newsdesk::server {

struct render_request {
  std::string url;
  std::chrono::milliseconds wait{500};       // after the load event, for scripts to fill the page
  std::chrono::milliseconds timeout{30'000}; // the whole render
};

struct render_result {
  failure_kind failure = failure_kind::none; // what went wrong (server/core/failure.hpp)
  std::string message; // set when failure != none, e.g. "Splash timed out after 30 s"
  std::string html;    // the rendered (or fetched) page, UTF-8 from Splash
  std::string url;     // the page's final URL (after redirects): the base for its links
  // The response's Content-Type when the page was fetched directly (the direct and feed
  // renderers); empty from a browser. A feed's charset is read from it (RFC 7303).
  std::string content_type;
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return failure == failure_kind::none; }
};

class renderer {
 public:
  virtual ~renderer() = default;
  virtual std::string_view name() const = 0; // as its descriptor registers it
  // Starts a render; `done` runs exactly once, on some io_context thread.
  virtual void render(render_request request, std::function<void(render_result)> done) = 0;
  // Prepares for the first render now (a browser starts its process). Default: nothing.
  virtual void warm_up() {}
  // Stops what the renderer runs outside this process (a browser's process group), after the
  // io_context has stopped; renders in flight are dropped. Default: nothing.
  virtual void shutdown() {}
};

// True when the HTML has no content in its body: what a renderer returns for an empty, garbage or
// scheme-less URL (Splash answers 200 with "<html><head></head><body></body></html>").
bool is_empty_page(std::string_view html);

// Formats seconds for notices: 30 -> "30", 2.5 -> "2.5".
std::string format_seconds(double seconds);

} // namespace newsdesk::server
