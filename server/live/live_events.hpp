// GET /events: new headlines as Server-Sent Events, for the open /news page.
//
// Each new headline is an `event: headline` whose data is the headline's JSON. One that joined a
// story another headline started is followed by an `event: story` (no id of its own) whose data
// is {"story": ID, "headline": <the same JSON>, "sources": N}, N the sites telling that story
// after the change (headline_update::story_sources), so an open page updates the story's cards
// in place. Story
// events are not replayed: a page that reconnects shows the stories of its next load. A site whose
// state changes (it fails, recovers, looks broken) is told to every client as an `event: site`
// (publish_status).
//
// The feed is whatever calls publish(): in newsdesk, the news service's updates, as typed
// headlines (nothing published on the broker by a network client reaches a page). Every event's
// `id:` is "EPOCH:ID": the store's epoch (made when the store was created) and the headline's id,
// which grows in commit order. A client that reconnects with Last-Event-ID (or ?after=ID) first
// gets what it missed, replayed from the store, on any instance sharing it; an id from another
// store, or one older than what pruning kept, gets an `event: reset` whose data is the current
// headlines its page would show (at most page_size), and goes on from there; that reset is made
// once per snapshot (and filter) and shared by every client starting over meanwhile, so a storm
// of reconnects costs one reset's bytes. A client may name the same site= and q= filters as the
// page (news_query.hpp): it is sent only the headlines that page would list, in its replay and
// reset as well. Each client has a bounded backlog: one that stops reading is cut off (it will
// reconnect and replay), never slowing the others; its backlog is the bytes it has yet to be
// sent, shared with the other clients where they are the same (a batch, a reset), so a stream
// costs its connection and a few hundred bytes, not a copy of every event. Comments (": ping")
// every 15 s keep proxies from closing idle streams and reveal clients that left.
//
// Threads: all members may be called from any thread. publish() only queues: the batch is
// turned into events and sent on a strand of the worker pool, in the order publish() was called.
#pragma once

#include "server/http/http_message.hpp"
#include "server/news/headline.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
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

  // Sends a batch of new headlines to every client whose filter they pass, with a story event
  // after each whose story is in `story_sources` (how many sites tell it: the stories they
  // joined). Headlines of unknown sites, without a title or with a link that is not http(s) are
  // skipped. Returns at once: the events are made and sent on the worker pool.
  void publish(std::vector<news_item> items,
               std::unordered_map<std::int64_t, std::size_t> story_sources = {});

  // Tells every client how each of `sites` stands now (a failure, a recovery, a health verdict):
  // an `event: site` (no id, not replayed: a page missing one shows the state of its next load)
  // whose data
  // is {"site", "display_name", "state", "state_text", "quiet", "problem"} in the page's words
  // (site_status.hpp, status_of). Returns at once, sent after the batches published before it.
  void publish_status(const std::vector<site_report>& sites);

  // Tells every client the picture each of `items` has now: an `event: picture` (no id, not
  // replayed: a page missing one shows it on its next load) whose data is {"id", "picture":
  // {"name", "width", "height"}} ("picture" null once dropped). A headline's picture is made
  // after it arrived, so a card that becomes one on an open page gets it this way. Returns at
  // once, sent after the batches published before it.
  void publish_pictures(const std::vector<news_item>& items);

  // What a client starting over gets in its reset event: the headlines shown now (the newest
  // page_size of them its filter passes, as the page), and the newest id held (where its stream
  // goes on from). Set before start().
  void set_snapshot_source(std::function<std::shared_ptr<const news_snapshot>()> source);

  // The /events route.
  void handle(http_request request, responder respond);

  void start(); // heartbeats
  void stop();  // closes every stream; later batches are dropped

  // Open streams (a refused one is never counted: it is answered 503 before it is one).
  std::size_t clients() const;

  static constexpr std::chrono::seconds heartbeat{15};
  // A stream with no event for this long is closed (at a heartbeat); the browser reconnects in
  // 3 s and replays what it missed, so readers lose nothing while idle streams free their slots.
  static constexpr std::chrono::minutes max_idle{10};
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
