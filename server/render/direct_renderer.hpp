// Fetches a site's page itself, without running JavaScript: for machines without Splash and
// for sites that serve their headlines in plain HTML. Follows redirects (http and https only),
// all within the request's one deadline.
#pragma once

#include "server/render/renderer.hpp"

namespace newsdesk::server {

class http_client;

class direct_renderer final : public renderer {
 public:
  explicit direct_renderer(http_client& client)
      : client_(client) {}

  std::string_view name() const override { return "direct"; }
  void render(render_request request, std::function<void(render_result)> done) override;

  // Browsers stop at 20; news sites use one or two (http -> https -> www). Five catches loops
  // without giving up on a real chain.
  static constexpr int max_redirects = 5;

 private:
  http_client& client_;
};

} // namespace newsdesk::server
