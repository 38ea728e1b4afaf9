// Fetches a site's page itself, without running JavaScript: for machines without Splash and
// for sites that serve their headlines in plain HTML. Follows redirects (http and https only),
// all within the request's one deadline.
//
// The same fetch reads feeds (the "feed" renderer), asking for feed types first. Both ask
// conditionally when the request carries the validators of a copy its caller still holds
// (render_request::known): an unchanged page or feed answers 304, costing its server no body
// and newsdesk no parse.
#pragma once

#include "server/render/renderer.hpp"

#include <string>

namespace newsdesk::server {

class http_client;
struct renderer_descriptor;

// Its registrations (renderers.cpp): direct, always made, the automatic choice when nothing else
// is available; and feed, always made, which feed sites choose.
const renderer_descriptor& direct_descriptor();
const renderer_descriptor& feed_descriptor();

class direct_renderer final : public renderer {
 public:
  enum class mode { page, feed };
  explicit direct_renderer(http_client& client, mode m = mode::page)
      : client_(client)
      , mode_(m) {}

  std::string_view name() const override;
  void render(render_request request, std::function<void(render_result)> done) override;

  // Browsers stop at 20; news sites use one or two (http -> https -> www). Five catches loops
  // without giving up on a real chain.
  static constexpr int max_redirects = 5;
  // Feed mode asks for feed types first (Accept).
  bool reads_feeds() const { return mode_ == mode::feed; }

 private:
  http_client& client_;
  mode mode_;
};

} // namespace newsdesk::server
