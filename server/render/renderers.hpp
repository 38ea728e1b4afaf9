// The renderers newsdesk can use, made from their options by one registration table
// (renderers.cpp): adding a renderer is its own file plus one line there.
#pragma once

#include "server/render/chromium_options.hpp"
#include "server/render/renderer.hpp"

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

// Each renderer's own options: what the configuration fills in.
struct renderer_options {
  std::string splash_url;      // empty: no Splash
  std::string browserless_url; // empty: no browserless
  chromium_options chromium;   // chromium.path empty: no Chromium was found
  bool tls_verify = true;      // direct fetches check certificates
};

// Owns the renderers whose options are set ("direct" is always there). Renderers are made once
// and live as long as the set: a reload may move a site to any renderer made at startup.
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
  // Calls shutdown() on each (after the io_context has stopped).
  void shutdown();

 private:
  std::unique_ptr<http_client> client_; // shared by the renderers that fetch over HTTP
  std::map<std::string, std::unique_ptr<renderer>, std::less<>> renderers_;
};

} // namespace newsdesk::server
