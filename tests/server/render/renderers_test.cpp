#include "server/render/renderers.hpp"

#include "scrapers/scraper.hpp"
#include "server/render/browserless_renderer.hpp"
#include "server/render/chromium_renderer.hpp"
#include "server/render/splash_renderer.hpp"

#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

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
  options.of<splash_options>().url = "http://127.0.0.1:8050";
  options.of<browserless_options>().url = "http://127.0.0.1:3000";
  options.of<chromium_options>().path =
      "/nonexistent/chromium"; // made, not started: it starts on first use
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

TEST_CASE("the registered renderers are the names site files may ask for, in the same order") {
  // scrapers/ cannot see the registry (dependencies run one way), so it keeps its own list of
  // names for site files; this keeps the two from drifting apart.
  std::vector<std::string_view> registered;
  for (const auto* r : registered_renderers())
    registered.push_back(r->name);
  CHECK(std::equal(registered.begin(), registered.end(), newsdesk::scrapers::renderer_names.begin(),
                   newsdesk::scrapers::renderer_names.end()));
  for (auto name : registered)
    CHECK(find_renderer(name)->name == name);
  CHECK(find_renderer("phantomjs") == nullptr);
}

TEST_CASE("the automatic renderer is the first automatic one its options make available") {
  renderer_options options;
  CHECK(automatic_renderer(options).name == "direct");
  options.of<browserless_options>().url = "http://127.0.0.1:3000"; // never chosen automatically
  CHECK(automatic_renderer(options).name == "direct");
  options.of<chromium_options>().path = "/usr/bin/chromium";
  CHECK(automatic_renderer(options).name == "chromium");
  options.of<splash_options>().url = "http://127.0.0.1:8050";
  CHECK(automatic_renderer(options).name == "splash");
  // --help says the same, from the same list.
  CHECK(renderer_choice_help() ==
        "for sites that name none: splash, chromium, browserless or direct; unset: splash when a "
        "Splash URL is set, else chromium when installed, else direct");
}

TEST_CASE("a renderer's options are found by their type; a type no renderer declares is a "
          "programming error") {
  renderer_options options;
  options.of<splash_options>().max_timeout = 60;
  const renderer_options copy = options;
  CHECK(copy.of<splash_options>().max_timeout == 60);
  options.of<splash_options>().max_timeout = 30;
  CHECK(copy.of<splash_options>().max_timeout == 60); // a copy is its own
  struct undeclared {};
  CHECK_THROWS_AS(copy.of<undeclared>(), std::logic_error);
}
