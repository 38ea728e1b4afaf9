#include "server/render/renderers.hpp"

#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

using namespace newsdesk::server;

TEST_CASE("renderer_set makes direct and feed always, and each other renderer only when its "
          "options say where it is") {
  boost::asio::io_context ioc;
  {
    renderer_set none(ioc, renderer_options{});
    CHECK(none.by_name().size() == 2);
    REQUIRE(none.find("direct"));
    CHECK(none.find("direct")->name() == "direct");
    REQUIRE(none.find("feed"));
    CHECK(none.find("feed")->name() == "feed");
    CHECK(none.find("splash") == nullptr);
    CHECK(none.find("chromium") == nullptr);
    CHECK(none.find("browserless") == nullptr);
  }
  renderer_options options;
  options.splash_url = "http://127.0.0.1:8050";
  options.browserless_url = "http://127.0.0.1:3000";
  options.chromium.path = "/nonexistent/chromium"; // made, not started: it starts on first use
  renderer_set all(ioc, options);
  auto names = all.by_name();
  CHECK(names.size() == 5);
  for (const auto& [name, r] : names) {
    REQUIRE(r);
    CHECK(r->name() == name);
    CHECK(all.find(name) == r);
  }
  all.shutdown(); // stops nothing that never started
}
