// The routes whose answers come from the application's parts rather than from the views
// (server/app/routes.cpp): site icons and pictures, /events, the broker's stats and its MQTT
// WebSocket, /metrics and /readyz.
#include "server/app/application_parts.hpp"

#include "server/app/readiness.hpp"
#include "server/core/log.hpp"

#include <boost/asio/post.hpp>

#include <nlohmann/json.hpp>

namespace newsdesk::server {

namespace net = boost::asio;

void application::parts::add_routes() {
  // Held in memory once served; the first read is a query (a network round trip with
  // PostgreSQL): on the pool.
  routes.bind(route_id::site_icon, [this](http_request req, responder respond) {
    auto site = icon_path_site(req.path());
    if (site.empty())
      return respond(text_response(404));
    if (auto icon = icons.held(site))
      return respond(icon_response(icon.get(), req));
    net::post(worker_pool,
              [this, site = std::move(site), req = std::move(req), respond = std::move(respond)] {
                std::shared_ptr<const site_icon> icon;
                try {
                  icon = icons.served(site);
                } catch (const std::exception& e) {
                  log_warn("msg=\"cannot read site icon\" site=" + site +
                           " error=" + logfmt_quoted(e.what()));
                  return respond(text_response(503));
                }
                respond(icon_response(icon.get(), req));
              });
  });
  // Pictures are read from the store on the pool; browsers keep them (immutable names).
  routes.bind(route_id::picture, [this](http_request req, responder respond) {
    auto name = picture_path_name(req.path());
    if (name.empty())
      return respond(text_response(404));
    net::post(worker_pool,
              [this, name = std::move(name), req = std::move(req), respond = std::move(respond)] {
                std::optional<stored_picture> picture;
                try {
                  picture = pictures.served(name);
                } catch (const std::exception& e) {
                  log_warn("msg=\"cannot read a picture\" name=" + name +
                           " error=" + logfmt_quoted(e.what()));
                  return respond(text_response(503));
                }
                respond(picture_response(picture ? &*picture : nullptr, req));
              });
  });
  routes.bind(route_id::events, [this](http_request req, responder res) {
    live.handle(std::move(req), std::move(res));
  });
  if (pubsub)
    routes.bind_json(route_id::broker_stats,
                     [this] { return nlohmann::json(pubsub->stats()).dump() + "\n"; });
  if (pubsub && cfg.broker.mqtt.enabled)
    routes.bind(route_id::mqtt_websocket, [this](http_request req, responder respond) {
      broker::websocket_request upgrade{req.method, req.target, std::move(req.headers)};
      if (auto refused = broker::check_websocket_request(upgrade)) {
        auto res = text_response(refused->status, refused->text);
        if (refused->status == 426)
          res.with_header("Upgrade", "websocket");
        return respond(std::move(res));
      }
      http_response res;
      res.status = 101; // written by the broker, which answers the upgrade
      res.take_over = [this, upgrade = std::move(upgrade)](int fd) mutable {
        pubsub->serve_websocket(fd, std::move(upgrade));
      };
      respond(std::move(res));
    });
  if (cfg.metrics)
    routes.bind(route_id::metrics, [this](http_request, responder respond) {
      std::optional<broker::stats_snapshot> broker_stats;
      if (pubsub)
        broker_stats = pubsub->stats();
      http_response res;
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      const auto queue = news.refresh_queue();
      const auto foreign = news.foreign_sites();
      res.body =
          counters.render(
              news.snapshot()->sites, broker_stats ? &*broker_stats : nullptr,
              {live.clients(), http->open_connections(), http->refused()},
              {queue.waiting, std::chrono::duration<double>(queue.oldest_wait).count(),
               queue.behind, queue.parse_pages, queue.parse_bytes, queue.parse_full,
               queue.not_modified},
              {.degraded = changes && (!news.store_unreachable().empty() || !changes->connected()),
               .shared = changes != nullptr,
               .sites_elsewhere = foreign.elsewhere.size(),
               .sites_orphaned = foreign.orphaned.size()}) +
          routes.cache_metrics() + render_fetch_metrics(renderers.client().stats()) +
          render_alert_metrics(alert_rules.stats());
      res.with_header("Cache-Control", "no-store");
      respond(std::move(res));
    });
  // Answered from state, on the network thread: the store's verdict is what its checks last
  // found (a shared store's probe, a file's watch), never a call made for this request, which a
  // balancer's probes would multiply and a hung database would hold.
  routes.bind(route_id::readyz, [this](http_request, responder respond) {
    store_check check{.shared = store->cluster() != nullptr};
    if (changes) {
      if (auto unreachable = news.store_unreachable(); !unreachable.empty())
        check.error = std::move(unreachable);
      else if (!changes->connected())
        check.error = "not listening for changes from the other instances (reconnecting)";
    } else if (auto problem = local_store_problem(); !problem.empty()) {
      check.error = std::move(problem);
    }
    if (!check.error)
      if (auto write = news.store_write_error(); !write.empty())
        check.error = "the store cannot be written: " + write;
    auto verdict = decide_readiness(*news.snapshot(), news.sites(), cfg.refresh.jitter,
                                    unix_ms_now(), check, routes.views_built());
    http_response res;
    res.status = verdict.ready ? 200 : 503;
    res.content_type = json_content_type;
    res.body = verdict.to_json();
    res.with_header("Cache-Control", "no-store");
    respond(std::move(res));
  });
}

} // namespace newsdesk::server
