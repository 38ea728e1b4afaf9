// What a view of the headlines is (/news, /news.json, /news.atom, /news.feed.json, /opml, each
// with its query): its bytes from a snapshot, the key and version the representation cache
// keeps it under, and the target a feed names itself by. Pure functions, callable from any
// thread; routes.cpp decides when to build and serve them.
#pragma once

#include "server/news/news_query.hpp"
#include "server/views/representation_cache.hpp"

#include <cstdint>
#include <string>

namespace newsdesk::server {

class news_page;

// The view at `path` of `snapshot` cut by `query`, with its headers and cache policy. `base` is
// the absolute URL feed links start with (feeds and OPML only); `target` is the view's own
// path and query as view_target spells it (feeds name it as their self link).
representation_cache::content build_view(const news_page& page, const news_snapshot& snapshot,
                                         const std::string& path, const news_query& query,
                                         const std::string& base, const std::string& target);

// A view's cache key: the path, the query in one spelling whatever order it came in, and the
// base URL for the feeds (their links are absolute).
std::string view_key(const std::string& path, const news_query& query, const std::string& base);

// The version of the headlines a view shows: a view of some sites changes only when one of them
// does (a site's report says when it last did), any other view with every change. So a change
// of one site rebuilds only the views that show it.
std::uint64_t view_version(const news_snapshot& snapshot, const news_query& query);

// `path` with `query` in its canonical spelling (never a request's raw text).
std::string view_target(const std::string& path, const news_query& query);

} // namespace newsdesk::server
