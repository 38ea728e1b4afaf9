// GET /events: new headlines as Server-Sent Events, for the open /news page.
//
// The feed is the broker's /topic/headlines channel: live_events subscribes to it like any
// broker client, so headlines published there by newsdesk or anyone else reach the page. Every
// event carries the headline's store id as `id:`; a client that reconnects with Last-Event-ID
// (or ?after=ID) first gets what it missed, replayed from the store. Each client has a bounded
// backlog: one that stops reading is cut off (it will reconnect and replay), never slowing the
// others. Comments (": ping") every 15 s keep proxies from closing idle streams and reveal
// clients that left.
//
// Threads: all members may be called from any thread.
#pragma once

#include "server/http/http_message.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
class thread_pool;
} // namespace boost::asio

namespace newsdesk::server {

class headline_store;

class live_events {
 public:
  struct site_look {
    std::string display_name;
    std::string colour;
  };

  // `sites`: the configured sites; events for other sites are ignored. `store` may be null (no
  // replay).
  live_events(boost::asio::io_context& ioc, boost::asio::thread_pool& pool, headline_store* store,
              std::map<std::string, site_look> sites);
  ~live_events();

  // Replaces the configured sites (a reload). Thread-safe.
  void set_sites(std::map<std::string, site_look> sites);

  // Follows /topic/headlines on the broker at address:port, reconnecting after failures.
  void follow_broker(std::string address, unsigned short port);
  // Sends a batch (a JSON array of {"id","title","url","site",...}) to every client. Entries that
  // are malformed, for unknown sites or with non-http(s) URLs are skipped.
  void publish(std::string_view batch_json);

  // The /events route.
  void handle(http_request request, responder respond);

  void start(); // heartbeats
  void stop();  // closes every stream and stops following the broker

  std::size_t clients() const;

  static constexpr std::chrono::seconds heartbeat{15};
  // A client may fall this far behind before it is cut off: a few hundred headlines, far more
  // than a refresh of every site produces at once.
  static constexpr std::size_t max_backlog_bytes = 256 * 1024;
  // Replay after a reconnect sends at most this many headlines.
  static constexpr std::size_t max_replay = 1000;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

} // namespace newsdesk::server
