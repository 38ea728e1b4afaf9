// A Splash-compatible stand-in for tests (no Docker engine runs here). It answers
// GET /render.html?url=..&timeout=..&wait=.. the way ../shared/splash-api.md records a real
// Splash answering: pages by URL, optional delays, Splash's real JSON error bodies, hangs,
// empty pages; /_ping; 404 HTML for unknown paths. It also serves plain pages under /origin/
// (with redirects) for tests of the direct renderer.
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

  static standin_page page(std::string html, std::chrono::milliseconds delay = {}) {
    return {kind::page, std::move(html), 200, delay};
  }
  static standin_page error(unsigned status, std::chrono::milliseconds delay = {}) {
    return {kind::splash_error, {}, status, delay};
  }
  static standin_page hang() { return {kind::hang, {}, 0, {}}; }
};

class splash_standin {
 public:
  splash_standin();
  ~splash_standin();

  unsigned short port() const;
  std::string base_url() const; // "http://127.0.0.1:PORT"

  // What a render of `target_url` returns. Unknown URLs get Splash's DNS-failure 502.
  void set(const std::string& target_url, standin_page page);
  // Plain page served at /origin/<name> (for the direct renderer); "redirect" names are set
  // with set_origin_redirect.
  void set_origin(const std::string& name, std::string html);
  void set_origin_redirect(const std::string& name, std::string location, unsigned status = 302);

  // How many render.html requests named `target_url`.
  std::size_t renders(const std::string& target_url) const;
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
