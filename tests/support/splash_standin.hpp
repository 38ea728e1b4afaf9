// A Splash-compatible stand-in for tests (no Docker engine runs here). It answers
// GET /render.html?url=..&timeout=..&wait=.. the way ../shared/splash-api.md records a real
// Splash answering: pages by URL, optional delays, Splash's real JSON error bodies, hangs,
// empty pages; /_ping; 404 HTML for unknown paths. POST /execute (JSON arguments) answers as
// newsdesk's render script would on a real Splash: {html, url, status, error}; with Lua
// disabled (set_lua(false)) /execute is a 404, as on a Splash started with --disable-lua. It also
// serves plain pages under /origin/ (with redirects) for tests of the direct renderer.
//
// Runs on 127.0.0.1:<any port> on its own thread; all members are thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace newsdesk::testing {

struct standin_page {
  enum class kind {
    page,         // 200 with `html`
    splash_error, // `status` with Splash's JSON body for that status (400, 502, 504, 520)
    hang,         // never answers
  };
  kind what = kind::page;
  std::string html;
  unsigned status = 200;
  std::chrono::milliseconds delay{0};
  // The site's own HTTP status for a page (0: 200). render.html hides it (Splash's trap: the
  // error page comes back as a 200); /execute reports it.
  unsigned site_status = 0;
  // A frame inside the page (an advert) fails to load: render.html answers 502 for the whole
  // page, /execute renders it.
  bool failing_subframe = false;
  // A 502's error text from render.html (empty: "Connection refused").
  std::string error_text;

  static standin_page page(std::string html, std::chrono::milliseconds delay = {}) {
    return {kind::page, std::move(html), 200, delay};
  }
  static standin_page error(unsigned status, std::chrono::milliseconds delay = {}) {
    return {kind::splash_error, {}, status, delay};
  }
  static standin_page hang() { return {kind::hang, {}, 0, {}}; }
  // The site answers `site_status` with `html` as its error page.
  static standin_page site_error(unsigned site_status, std::string html) {
    standin_page p = page(std::move(html));
    p.site_status = site_status;
    return p;
  }
  static standin_page with_failing_subframe(std::string html) {
    standin_page p = page(std::move(html));
    p.failing_subframe = true;
    return p;
  }
};

class splash_standin {
 public:
  splash_standin();
  ~splash_standin();

  unsigned short port() const;
  std::string base_url() const; // "http://127.0.0.1:PORT"

  // What a render of `target_url` returns. Unknown URLs get Splash's DNS-failure 502.
  void set(const std::string& target_url, standin_page page);
  // Plain page served at /origin/<name> (for the direct and feed renderers), with an ETag; a
  // request naming it in If-None-Match gets 304. Names ending in .xml are served as
  // application/xml. "redirect" names are set with set_origin_redirect.
  void set_origin(const std::string& name, std::string html);
  void set_origin_redirect(const std::string& name, std::string location, unsigned status = 302);
  // Serves `body` at exactly `path` ("/favicon.ico": what a site's origin has at its root).
  void set_root_file(const std::string& path, std::string body);
  // Requests for `path` (a root file, or "/origin/NAME") so far.
  std::size_t requests(const std::string& path) const;

  // Whether /execute exists (Splash's Lua scripting; on by default).
  void set_lua(bool enabled);

  // How many renders (render.html or /execute requests) named `target_url`.
  std::size_t renders(const std::string& target_url) const;
  // How many /origin/ requests were answered 304 (their If-None-Match named the page's ETag).
  std::size_t origin_not_modified() const;
  // The most pages that were being rendered (delayed before their answer) at one time.
  std::size_t peak_concurrent_renders() const;

  // Splash's --max-timeout.
  static constexpr double max_timeout = 90;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Reads a whole file (tests' fixtures). Returns nullopt-like empty string when missing, and
// sets `found`.
std::string read_file(const std::string& path, bool* found = nullptr);

// Serves each "URL=FILE" argument's file as the page for URL (the stand-in programs' command
// line). Returns the first argument it cannot use, or an empty string.
std::string serve_files(splash_standin& standin, int argc, char** argv);

} // namespace newsdesk::testing
