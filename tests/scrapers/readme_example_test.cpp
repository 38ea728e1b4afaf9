// The README's worked C++ scraper ("Adding a site in C++"), which tests/scrapers/CMakeLists.txt
// copies out of README.md into this test binary: it must build against the current interface and
// do what the README says it does.
#include "scrapers/scraper.hpp"

#include <doctest/doctest.h>

#include <memory>

namespace newsdesk::scrapers::sites {
std::unique_ptr<scraper> make_example(); // defined by the README's code
}

using newsdesk::scrapers::headline;

TEST_CASE("the README's C++ scraper example builds and finds the headlines it describes") {
  auto example = newsdesk::scrapers::sites::make_example();
  CHECK(example->site().name == "example");
  CHECK(example->site().display_name == "Example News");
  const auto found = example->parse(R"html(
      <h2 class="story"><a href="/world/first.html"> First
        story </a></h2>
      <h2 class="teaser"><a href="/not-a-story">Not a story</a></h2>
      <h2 class="story lead"><a href="https://other.example.org/second">Second story</a></h2>
      <h2 class="story"><a href="javascript:alert(1)">Unsafe</a></h2>
      <h2 class="story"><a href="/world/first.html">First story again</a></h2>)html",
                                    "https://news.example.com/");
  CHECK(found == std::vector<headline>{
                     {"First story", "https://news.example.com/world/first.html", "example"},
                     {"Second story", "https://other.example.org/second", "example"}});
}
