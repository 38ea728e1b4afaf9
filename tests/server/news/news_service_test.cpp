#include "server/news/news_service.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;

TEST_CASE("headlines sort by title ignoring case and leading quotes, then by site") {
  std::vector<news_item> list = {{{"beta", "https://a/1", "x"}},
                                 {{"'Alpha' quoted", "https://a/2", "x"}},
                                 {{"\xE2\x80\x9C"
                                   "Gamma\xE2\x80\x9D curly",
                                   "https://a/3", "x"}},
                                 {{"Alpha", "https://a/4", "z"}},
                                 {{"alpha", "https://a/5", "y"}},
                                 {{"...zeta", "https://a/6", "x"}}};
  sort_items(list);
  std::vector<std::string> urls;
  for (const auto& h : list)
    urls.push_back(h.headline.url);
  // "alpha" (y) and "Alpha" (z) tie on the key and order by site; "'alpha' quoted" sorts after
  // them.
  CHECK(urls == std::vector<std::string>{"https://a/5", "https://a/4", "https://a/2", "https://a/1",
                                         "https://a/3", "https://a/6"});
}
