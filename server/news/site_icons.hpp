// Sites' icons (favicons): fetched once a day per site, directly, after a refresh of the site
// succeeded on this instance (so in a cluster only the instance that refreshed the site fetches
// and writes), checked to be a real image, kept in the store and served from it
// (GET /sites/NAME/icon).
//
// Icons come from servers we do not control and are served from our origin, so a fetch is
// bounded (size, time, redirects) and only PNG, ICO, GIF, JPEG and WebP are kept, told by their
// first bytes, never by what the server claims: SVG could carry script, and an HTML error page
// answered 200 is no icon. A refused or failed icon is logged (one line per URL tried, naming the
// site and what was wrong), recorded as tried, and tried again a day later; it never touches the
// site's headlines or any other site.
//
// Threads: every member may be called from any thread. Fetches run on the HTTP client's
// io_context; the store is read and written on `pool` only. Icons served are held in memory
// (at most one per site, site_icon_limits::max_bytes each), dropped when the store says a site's
// icon changed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class thread_pool;
}

namespace newsdesk::server {

class headline_store;
class http_client;
struct http_request;
struct http_response;
struct site_icon;

struct site_icon_limits {
  // Real favicons are 1 to 20 KB (a 64 px PNG, a multi-size ICO); 100 KB keeps a page's worth of
  // icons small and stops a server that answers with a large file.
  static constexpr std::size_t max_bytes = 100 * 1024;
  // An icon is worth little waiting: a slow server is tried again tomorrow.
  static constexpr std::chrono::seconds timeout{10};
  // http -> https -> a CDN is the usual chain; more is a loop or a trap.
  static constexpr int max_redirects = 3;
  // How often an icon is fetched again, whether the last attempt worked or not.
  static constexpr std::chrono::hours refetch{24};
  // Pixels on a side, as the image's header declares them. Icons are drawn at 16 to 64 px and
  // the largest made (apple-touch, PWA) are 512; a browser decodes a served icon whole, so a
  // small file declaring 100,000 x 100,000 pixels would cost every reader 40 GB to show.
  static constexpr std::uint32_t max_side = 1024;
};

// What the first bytes of `body` say it is: "image/png", "image/x-icon", "image/gif",
// "image/jpeg" or "image/webp"; else an empty type and `error` saying what it is instead. An
// image is also refused when its header (PNG IHDR, GIF logical screen, JPEG frame header, each
// ICO entry and a PNG it embeds, WebP VP8/VP8L/VP8X) is missing or cut short, or declares 0 or
// more than site_icon_limits::max_side pixels on a side; `error` then names the size.
struct icon_check {
  std::string content_type;
  std::string error;
};
icon_check check_icon(std::string_view body);

// A strong ETag ("\"<16 hex digits>\"") for the icon's bytes: the same on every instance.
std::string icon_etag(std::string_view body);

// The site named by an icon path ("/sites/NAME/icon"): NAME when it is a valid site name
// ([a-z0-9_-], at most 100 bytes), else empty.
std::string icon_path_site(std::string_view path);

// The answer to a request for an icon: 404 without one; else 200 with its stored Content-Type,
// X-Content-Type-Options: nosniff, its ETag and a day's Cache-Control, or 304 when If-None-Match
// names its ETag.
http_response icon_response(const site_icon* icon, const http_request& request);

class site_icons {
 public:
  // `on_icon(site, etag)` is called on `pool` when a site's icon is known to be stored (at
  // load(), after a fetch, after reload()). `store` may be null (nothing is fetched); the
  // client, store and pool must outlive this object's last fetch (stop() first).
  site_icons(http_client& client, headline_store* store, boost::asio::thread_pool& pool,
             std::function<void(const std::string&, const std::string&)> on_icon);
  ~site_icons();
  site_icons(const site_icons&) = delete;
  site_icons& operator=(const site_icons&) = delete;

  // Reads which sites have an icon and when each was tried. Blocks on the store: off the
  // network threads. Store errors are logged, not thrown (icons are decoration).
  void load();
  // load() again, for a shared store's events (another instance may have fetched one).
  void reload() { load(); }

  // A refresh of `site` (at `site_url`) succeeded on this instance and found `urls`
  // (scrapers::icon_urls): fetches its icon unless it was tried within
  // site_icon_limits::refetch. Returns at once. As the direct renderer does, it connects to
  // internal addresses only when `site_url` is an internal IP (names_internal_address).
  void refreshed(const std::string& site, const std::string& site_url,
                 std::vector<std::string> urls, std::int64_t now_ms);

  // `site`'s icon as served: from memory after the first time (icons are served on every page
  // view, and a page names every site's), read from the store when not yet held. Blocks on the
  // store the first time: off the network threads. nullptr: none. Throws store_error.
  std::shared_ptr<const site_icon> served(const std::string& site);
  // The icon in memory, if held: answers without a trip to the pool.
  std::shared_ptr<const site_icon> held(const std::string& site) const;

  // Stops: fetches in flight end without writing.
  void stop();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace newsdesk::server
