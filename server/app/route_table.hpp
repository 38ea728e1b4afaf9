// newsdesk's routes, each declared once: its path, the methods it takes and its label in the
// metrics. Dispatch, the 404 and 405 answers (with Allow) and the metrics' set of route labels
// all read route_table below; adding a route is one row here and one handler bound to it.
//
// Handlers are bound by route_id (router::bind): the routes class binds the pages and endpoints
// it answers itself, the application those other components answer (/events, /api/broker,
// /metrics, /readyz, /mqtt). A route nobody bound (the broker or the metrics turned off) is
// answered 404, as an unknown path is.
#pragma once

#include "server/http/http_message.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace newsdesk::server {

enum class route_id {
  root,
  news,
  news_json,
  news_atom,
  news_feed_json,
  opml,
  refresh,
  events,
  broker_stats,
  mqtt_websocket,
  healthz,
  readyz,
  metrics,
  site_icon,
  picture,
  static_files,
};

// What a route takes. Reading routes take GET and HEAD (HEAD is answered as GET, headers only);
// anything else is answered 405 with the route's Allow.
enum class route_methods { read, post };

struct route {
  route_id id;
  // The exact path; ending in '/' (and longer than "/"), every path under it.
  std::string_view path;
  route_methods methods;
  // Its `route` label in newsdesk_http_requests_total. Paths under a prefix share one label, so
  // the label set stays fixed whatever clients ask for.
  std::string_view label;
};

// Rows in route_id's order (a static_assert in route_table.cpp checks it).
inline constexpr auto route_table = std::to_array<route>({
    // 302 to /news.
    {route_id::root, "/", route_methods::read, "/"},
    // The headlines: the page, JSON, Atom 1.0, JSON Feed 1.1 (each takes ?site=a,b&q=words&
    // limit=N), and each site's own feed as OPML.
    {route_id::news, "/news", route_methods::read, "/news"},
    {route_id::news_json, "/news.json", route_methods::read, "/news.json"},
    {route_id::news_atom, "/news.atom", route_methods::read, "/news.atom"},
    {route_id::news_feed_json, "/news.feed.json", route_methods::read, "/news.feed.json"},
    {route_id::opml, "/opml", route_methods::read, "/opml"},
    // Refresh now, ?site=NAME or every site (rate limited per site).
    {route_id::refresh, "/api/refresh", route_methods::post, "/api/refresh"},
    // New headlines as Server-Sent Events.
    {route_id::events, "/events", route_methods::read, "/events"},
    // The broker's counters (when the broker runs).
    {route_id::broker_stats, "/api/broker", route_methods::read, "/api/broker"},
    // MQTT over WebSocket (subprotocol mqtt), when the broker's MQTT runs; else 404.
    {route_id::mqtt_websocket, "/mqtt", route_methods::read, "/mqtt"},
    // {"status":"ok"} while the process serves; /readyz: whether it should get traffic.
    {route_id::healthz, "/healthz", route_methods::read, "/healthz"},
    {route_id::readyz, "/readyz", route_methods::read, "/readyz"},
    // Prometheus metrics (when turned on).
    {route_id::metrics, "/metrics", route_methods::read, "/metrics"},
    // A site's icon, /sites/NAME/icon (server/news/site_icons.hpp); 404 when none is stored.
    {route_id::site_icon, "/sites/", route_methods::read, "/sites"},
    // A card's picture, /pictures/NAME (server/pictures/site_pictures.hpp); 404 when none.
    {route_id::picture, "/pictures/", route_methods::read, "/pictures"},
    // Files from the static folder.
    {route_id::static_files, "/static/", route_methods::read, "/static"},
});

// The row of `id` (rows follow route_id's order).
constexpr const route& route_of(route_id id) {
  return route_table[static_cast<std::size_t>(id)];
}

// The metrics label of a request for no route.
inline constexpr std::string_view unrouted_label = "other";

// The row of `path` (without its query), or null when no route has it.
const route* find_route(std::string_view path);

// The Allow header's value for `methods`: "GET, HEAD" or "POST".
std::string_view allow_of(route_methods methods);

// Answers requests by the table: a path no bound route has gets 404, a method its route does
// not take 405 with Allow, anything else goes to the route's handler.
//
// Threads: bind() while building, before the first request; handle() then from any thread.
class router {
 public:
  // `handler` answers `id` from now on (replacing an earlier one).
  void bind(route_id id, request_handler handler);
  void handle(http_request request, responder respond) const;

 private:
  std::array<request_handler, route_table.size()> handlers_;
};

} // namespace newsdesk::server
