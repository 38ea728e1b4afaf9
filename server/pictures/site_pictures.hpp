// Pictures for the front page's cards: the image a headline's source gives (its card's <img>, a
// feed item's media) fetched once per image URL, made small by make_picture (picture_codec.hpp),
// stored with its site's other pictures within a bound of bytes, and served from newsdesk's own
// origin (GET /pictures/NAME): a reader's browser never asks a news site or its CDN for anything.
//
// Which images are fetched: those of headlines that lead a Top stories card or may come to (see
// picture_candidates): a site's other headlines stay text, and cost nothing.
//
// Each image URL is tried once: a picture made, a refusal (not an image, a bomb, too large, a
// server's error) and a picture dropped to keep its site within site_bytes are all recorded in
// the store, logged (one line naming the site, the URL and what was wrong) and never tried
// again; nothing of it touches the site's headlines or any other site.
//
// Threads: every member may be called from any thread. Fetches run on the HTTP client (at most
// max_in_flight at once, at most max_waiting waiting; more are not asked for until a later
// change); making a picture and the store's reads and writes run on `pool`, never on a network
// thread. `on_pictures` is called on `pool`.
#pragma once

#include "server/news/headline.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::asio {
class thread_pool;
}

namespace newsdesk::server {

class headline_store;
class http_client;
struct http_request;
struct http_response;
struct stored_picture;

// The headlines whose pictures are wanted in `snapshot`: of the stories that two sites or more
// tell among the front page's headlines (its first page_size, as the page sees them), the first
// 2 x max_top_stories (the cards shown and those next in line), and of each, every site's first
// headline (a card's lead is its story's first headline in the page's order, and any site's may
// become that when it changes). O(page_size).
std::vector<const news_item*> picture_candidates(const news_snapshot& snapshot);

// The answer to GET /pictures/NAME: 404 without one; else 200 with its bytes, its type,
// X-Content-Type-Options: nosniff, an ETag and a year's immutable Cache-Control (the name is its
// bytes' hash: a NAME never changes), or 304 when If-None-Match names its ETag.
http_response picture_response(const stored_picture* picture, const http_request& request);

// The NAME of a picture path ("/pictures/NAME"), when it is one make_picture gives; else empty.
std::string picture_path_name(std::string_view path);

class site_pictures {
 public:
  // Fetches at once: pictures are decoration, and a site's CDN is shared with its readers.
  static constexpr std::size_t max_in_flight = 2;
  // Images waiting for a fetch; past it, candidates are asked for again with a later change.
  static constexpr std::size_t max_waiting = 200;

  using pictures_callback =
      std::function<void(const std::vector<std::pair<std::string, picture_ref>>&)>;

  // `site_url_of(site)` gives a site's address (its images may come from internal addresses
  // only when it is on one itself, as the direct renderer's rule). `store` null: nothing is
  // fetched. The client, store and pool must outlive this object's last fetch (stop() first).
  site_pictures(http_client& client, headline_store* store, boost::asio::thread_pool& pool,
                std::size_t site_bytes, std::function<std::string(const std::string&)> site_url_of,
                pictures_callback on_pictures);
  ~site_pictures();
  site_pictures(const site_pictures&) = delete;
  site_pictures& operator=(const site_pictures&) = delete;

  // Reads what was tried and which pictures are stored, and tells on_pictures the stored ones.
  // Blocks on the store: off the network threads. Store errors are logged, not thrown.
  void load();

  // Asks for the pictures of `snapshot`'s picture_candidates not tried yet. Returns at once.
  void consider(const news_snapshot& snapshot);

  // The picture served as `name`, from the store. Blocks on it: off the network threads.
  // nullopt: none. Throws store_error.
  std::optional<stored_picture> served(std::string_view name) const;

  // Stops: fetches in flight end without writing.
  void stop();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace newsdesk::server
