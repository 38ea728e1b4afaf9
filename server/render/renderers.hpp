// The renderers newsdesk can use, listed once in renderers.cpp: adding a renderer is its own
// files (its class, its options struct and its renderer_descriptor) plus one line there. The
// list drives the settings table's renderer slices, the automatic choice of a renderer, the
// checks of the sites that use one, the renderers made at start and what the log says of them.
#pragma once

#include "server/core/settings.hpp"
#include "server/render/renderer.hpp"
#include "server/render/renderer_descriptor.hpp"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

class http_client;

// Every registered renderer, in registration order: the order of --help, and of preference for
// the automatic choice. Built on first use (any thread); the names are unique and some automatic
// renderer is always available, or it throws std::logic_error (a broken registration list).
const std::vector<const renderer_descriptor*>& registered_renderers();
// The renderer registered as `name`, or null.
const renderer_descriptor* find_renderer(std::string_view name);

// The renderer for sites that name none: the first automatic one whose options make it
// available (Splash when a URL is set, else an installed Chromium, else direct).
const renderer_descriptor& automatic_renderer(const renderer_options& options);
// The "renderer" setting's --help: the listed names and the automatic choice, from the list.
std::string renderer_choice_help();

// Every renderer's settings slice in registration order, then the settings they share: rows over
// renderer_options, for the server's settings table.
std::vector<settings::setting> renderer_settings();
// Runs each renderer's resolve step (after every setting is read). Throws settings::error naming
// the key.
void resolve_renderer_options(renderer_options& options);
// Where the renderer called `name` sends its work, for the first log lines; empty when no
// renderer has that name.
std::string renderer_address(const renderer_options& options, std::string_view name);

// Owns the renderers whose options make them available (direct and feed always are). Renderers
// are made once and live as long as the set: a reload may move a site to any renderer made at
// startup.
class renderer_set {
 public:
  renderer_set(boost::asio::io_context& ioc, const renderer_options& options);
  ~renderer_set();
  renderer_set(const renderer_set&) = delete;
  renderer_set& operator=(const renderer_set&) = delete;

  // The renderer called `name`, or null when it was not made.
  renderer* find(std::string_view name) const;
  // Every renderer made, by name (what news_service takes).
  std::map<std::string, renderer*> by_name() const;
  // The HTTP(S) client the renderers share (for other fetches: sites' icons).
  http_client& client() const { return *client_; }
  // Calls shutdown() on each (after the io_context has stopped).
  void shutdown();

 private:
  std::unique_ptr<http_client> client_; // shared by the renderers that fetch over HTTP
  std::map<std::string, std::unique_ptr<renderer>, std::less<>> renderers_;
};

} // namespace newsdesk::server
