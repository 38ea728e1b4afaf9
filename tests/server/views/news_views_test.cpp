#include "server/views/news_views.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;

TEST_CASE("chips=all is a view of its own: its cache key and its target say so") {
  news_query query;
  const auto plain = view_key("/news", query, "");
  query.all_chips = true;
  CHECK(view_key("/news", query, "") != plain);
  CHECK(view_target("/news", query) == "/news?chips=all");
  query.sites = {"cnn"};
  query.q = "a b";
  CHECK(view_target("/news", query) == "/news?site=cnn&q=a%20b&chips=all");
}
