// What newsdesk knows about a renderer, declared by the renderer itself (splash_descriptor() in
// splash_renderer.cpp, ...) and listed once in renderers.cpp: its name, its settings (a slice of
// the server's settings table), when it is available, how it is made, what it checks of a site
// and what the first log lines say of it. Nothing outside the renderer's own files spells its
// name or its options: the configuration, the log and the page read them from here.
//
// Descriptors are built once, on first use, and then only read: any thread may use one.
#pragma once

#include "server/core/settings.hpp"
#include "server/render/renderer.hpp"

#include <any>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

class http_client;

// The options of every registered renderer, each the struct its renderer declares
// (splash_options beside splash_renderer), held by type so that only the renderer names its own;
// plus what the renderers share. Default-constructed: every registered renderer's options at
// their defaults. A value type: copies are independent.
class renderer_options {
 public:
  renderer_options(); // renderers.cpp: one part per registered renderer

  // The options of type Options. Throws std::logic_error when no registered renderer declares
  // them (a programming error: a renderer's options used without its registration line).
  template <class Options> const Options& of() const {
    for (const auto& part : parts_)
      if (const auto* found = std::any_cast<Options>(&part))
        return *found;
    throw std::logic_error("renderer_options: no registered renderer has these options");
  }
  template <class Options> Options& of() {
    return const_cast<Options&>(std::as_const(*this).of<Options>());
  }

  // The HTTP client that direct, feed and Splash share checks TLS certificates.
  bool tls_verify = true;

 private:
  std::vector<std::any> parts_; // the registered renderers' options; empty for those with none
};

// What a renderer is made with: the io_context it runs on, and the HTTP client the renderers
// that fetch over HTTP share (owned by renderer_set, which outlives every renderer).
struct renderer_context {
  boost::asio::io_context& ioc;
  http_client& client;
};

// One renderer, as renderers.cpp registers it. Designated initializers keep a declaration
// readable; the functions receive every renderer's options and read their own by type. A
// function left empty means: nothing to do (resolve), always available (missing), any timeout
// (refuse_timeout).
struct renderer_descriptor {
  std::string_view name;             // what sites and the config call it (splash)
  std::string_view proper_name = {}; // how notices spell it (Splash); empty: the name
  // Sites that name no renderer get the first available automatic one, in registration order;
  // --help says "<name> <available_when>" for each ("splash when a Splash URL is set").
  bool automatic = false;
  std::string_view available_when = {};
  // Offered in --help as a value of the "renderer" setting (feed is not: feeds choose it).
  bool listed = true;
  std::any options = {}; // its options struct at its defaults; empty: it has none
  // Its slice of the settings table: rows over renderer_options (option_rows below), in the
  // order --help shows them.
  std::vector<settings::setting> rows = {};
  // Runs once after every setting is read (load_config): checks what one row's range cannot
  // and fills in what the settings point at (the Chromium found from chromium_path). Throws
  // settings::error whose message starts with the key.
  std::function<void(renderer_options&)> resolve = {};
  // What its options lack for it to be made ("no splash_url or SPLASH_URL is set"), or empty
  // when it is made; a site that names it then fails with "uses <display_name> but <this>".
  std::function<std::string(const renderer_options&)> missing = {};
  // Why it refuses a site's whole-render timeout (in seconds), or empty when it accepts it.
  std::function<std::string(const renderer_options&, double)> refuse_timeout = {};
  // Where it sends its work, for the first log lines.
  std::function<std::string(const renderer_options&)> address;
  // Makes it; called only when available().
  std::function<std::unique_ptr<renderer>(const renderer_context&, const renderer_options&)> make;

  std::string_view display_name() const { return proper_name.empty() ? name : proper_name; }
  bool available(const renderer_options& o) const { return !missing || missing(o).empty(); }
};

// Rows written for a renderer's own options struct (settings::field(&splash_options::url, ...)),
// as rows over renderer_options: a renderer's slice of the settings table.
template <class Options>
std::vector<settings::setting> option_rows(std::vector<settings::setting> rows) {
  for (auto& row : rows)
    row = settings::project_with<renderer_options>(
        std::move(row), [](auto& all) -> auto& { return all.template of<Options>(); });
  return rows;
}

} // namespace newsdesk::server
