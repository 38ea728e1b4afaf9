#include "server/pictures/site_pictures.hpp"

#include "scrapers/url.hpp"
#include "server/core/log.hpp"
#include "server/http/http_message.hpp"
#include "server/http/representation.hpp"
#include "server/news/headline_store.hpp"
#include "server/news/news_query.hpp"
#include "server/pictures/picture_codec.hpp"
#include "server/render/address_rules.hpp"
#include "server/render/http_client.hpp"
#include "server/views/news_page.hpp"
#include "server/views/story_view.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <unordered_set>

namespace newsdesk::server {

namespace {

constexpr std::string_view pictures_prefix = "/pictures/";

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::vector<const news_item*> picture_candidates(const news_snapshot& snapshot) {
  const auto front = apply_query(snapshot, {});
  std::vector<const news_item*> out;
  std::size_t stories_seen = 0;
  for (const auto& story : stories_of(front.headlines)) {
    if (story.sources < 2 || stories_seen++ == 2 * max_top_stories)
      break; // most sources first
    std::set<std::string_view> sites;
    for (const auto* item : story.headlines)
      if (sites.insert(item->headline.site).second)
        out.push_back(item);
  }
  return out;
}

std::string picture_path_name(std::string_view path) {
  if (!path.starts_with(pictures_prefix))
    return {};
  path.remove_prefix(pictures_prefix.size());
  return is_picture_name(path) ? std::string(path) : std::string();
}

http_response picture_response(const stored_picture* picture, const http_request& request) {
  if (!picture || !picture->has_image())
    return text_response(404).with_header("Cache-Control", "no-cache");
  const auto etag = "\"" + picture->name.substr(0, picture->name.find('.')) + "\"";
  // Its name is its bytes' hash: what is served under it never changes.
  return image_response(request, picture->content_type, picture->body, etag,
                        "public, max-age=31536000, immutable");
}

struct site_pictures::impl : std::enable_shared_from_this<impl> {
  http_client& client;
  headline_store* store;
  boost::asio::thread_pool& pool;
  const std::size_t site_bytes;
  std::function<std::string(const std::string&)> site_url_of;
  pictures_callback on_pictures;
  std::atomic<bool> stopped{false};

  // One image's fetch.
  struct job {
    std::string source; // the image URL its headline named
    std::string site;
    std::string url; // where it is fetched now (after redirects)
    int redirects = 0;
    bool public_only = true;
  };

  std::mutex mutex;                      // guards the fields below; never held while calling out
  std::unordered_set<std::string> known; // image URLs tried, being tried or waiting
  std::deque<std::shared_ptr<job>> waiting;
  std::size_t in_flight = 0;

  impl(http_client& c, headline_store* s, boost::asio::thread_pool& p, std::size_t b,
       std::function<std::string(const std::string&)> u, pictures_callback o)
      : client(c)
      , store(s)
      , pool(p)
      , site_bytes(b)
      , site_url_of(std::move(u))
      , on_pictures(std::move(o)) {}

  void load() {
    if (!store)
      return;
    std::vector<stored_picture> records;
    try {
      records = store->pictures();
    } catch (const std::exception& e) {
      log_warn("msg=\"cannot read pictures\" error=" + logfmt_quoted(e.what()));
      return;
    }
    std::vector<std::pair<std::string, picture_ref>> shown;
    {
      std::lock_guard lock(mutex);
      for (const auto& p : records) {
        known.insert(p.source);
        if (p.has_image())
          shown.emplace_back(p.source, picture_ref{p.name, p.width, p.height});
      }
    }
    on_pictures(shown);
  }

  void consider(const news_snapshot& snapshot) {
    if (!store || stopped)
      return;
    std::vector<std::shared_ptr<job>> fresh;
    for (const auto* item : picture_candidates(snapshot)) {
      const auto& h = item->headline;
      if (h.image.empty() || !item->picture.name.empty())
        continue;
      {
        std::lock_guard lock(mutex);
        if (waiting.size() + fresh.size() >= max_waiting || known.contains(h.image))
          continue;
        known.insert(h.image);
      }
      auto j = std::make_shared<job>();
      j->source = j->url = h.image;
      j->site = h.site;
      fresh.push_back(std::move(j));
    }
    if (fresh.empty())
      return;
    for (auto& j : fresh)
      j->public_only = !names_internal_address(site_url_of(j->site));
    {
      std::lock_guard lock(mutex);
      for (auto& j : fresh)
        waiting.push_back(std::move(j));
    }
    pump();
  }

  // Starts waiting fetches while fewer than max_in_flight run.
  void pump() {
    for (;;) {
      std::shared_ptr<job> next;
      {
        std::lock_guard lock(mutex);
        if (stopped || waiting.empty() || in_flight >= max_in_flight)
          return;
        next = std::move(waiting.front());
        waiting.pop_front();
        ++in_flight;
      }
      fetch(std::move(next));
    }
  }

  void fetch(std::shared_ptr<job> j) {
    http_fetch_options options;
    options.timeout = picture_limits::timeout;
    options.max_body_bytes = picture_limits::max_fetch_bytes;
    // The formats make_picture reads; a CDN that negotiates then sends one of them.
    options.headers.emplace_back("Accept", "image/webp,image/jpeg,image/png,image/gif;q=0.9");
    options.public_addresses_only = j->public_only;
    options.progress_bytes = 4096; // a picture trickled is not worth its wait
    const auto url = j->url;
    client.get(url, options, [self = shared_from_this(), j](http_fetch_result r) {
      self->on_fetched(j, std::move(r));
    });
  }

  void on_fetched(const std::shared_ptr<job>& j, http_fetch_result r) {
    if (stopped)
      return done();
    if (!r.ok())
      return refuse(j, r.failure == fetch_failure::too_large
                           ? "larger than " +
                                 std::to_string(picture_limits::max_fetch_bytes / 1024 / 1024) +
                                 " MB"
                           : "cannot fetch it: " + r.error);
    if (r.status >= 300 && r.status < 400) {
      auto location = r.header("Location");
      if (location.empty())
        return refuse(j, "redirected without a Location");
      if (++j->redirects > picture_limits::max_redirects)
        return refuse(j, "too many redirects");
      auto next = scrapers::url::resolve(j->url, location);
      if (!next || !scrapers::url::is_http_url(*next))
        return refuse(j, "redirected to a non-http(s) address");
      j->url = *next;
      return fetch(j);
    }
    if (r.status != 200)
      return refuse(j, "the server answered HTTP " + std::to_string(r.status));
    // Decoding is CPU work: on the pool, never on the thread that called back.
    boost::asio::post(pool, [self = shared_from_this(), j, body = std::move(r.body)] {
      if (self->stopped)
        return self->done();
      auto made = make_picture(body);
      if (!made.ok())
        return self->refuse(j, std::move(made.error));
      stored_picture p{j->source,
                       j->site,
                       made.name,
                       made.content_type,
                       std::move(made.body),
                       made.width,
                       made.height,
                       unix_ms_now(),
                       ""};
      self->record(j, std::move(p));
    });
  }

  void refuse(const std::shared_ptr<job>& j, std::string why) {
    log_warn("msg=\"picture refused\" site=" + j->site + " url=" + logfmt_quoted(j->source) +
             " error=" + logfmt_quoted(why));
    stored_picture p;
    p.source = j->source;
    p.site = j->site;
    p.tried_ms = unix_ms_now();
    p.error = std::move(why);
    boost::asio::post(pool, [self = shared_from_this(), j, p = std::move(p)]() mutable {
      self->record(j, std::move(p));
    });
  }

  // On the pool: records the attempt, tells what the page shows now, starts the next fetch.
  void record(const std::shared_ptr<job>& j, stored_picture p) {
    if (stopped)
      return done();
    std::vector<std::pair<std::string, picture_ref>> changed;
    try {
      for (auto& source : store->record_picture(p, site_bytes))
        changed.emplace_back(std::move(source), picture_ref{});
    } catch (const std::exception& e) {
      log_warn("msg=\"cannot store a picture\" site=" + j->site +
               " url=" + logfmt_quoted(j->source) + " error=" + logfmt_quoted(e.what()));
      return done();
    }
    if (p.has_image()) {
      log_info("msg=\"picture stored\" site=" + j->site + " url=" + logfmt_quoted(j->source) +
               " name=" + p.name + " size=" + std::to_string(p.width) + "x" +
               std::to_string(p.height) + " bytes=" + std::to_string(p.body.size()));
      // Dropped at once (larger than the site's bytes alone): not shown.
      if (std::none_of(changed.begin(), changed.end(),
                       [&](const auto& c) { return c.first == p.source; }))
        changed.emplace_back(p.source, picture_ref{p.name, p.width, p.height});
    }
    if (!changed.empty())
      on_pictures(changed);
    done();
  }

  void done() {
    {
      std::lock_guard lock(mutex);
      --in_flight;
    }
    pump();
  }
};

site_pictures::site_pictures(http_client& client, headline_store* store,
                             boost::asio::thread_pool& pool, std::size_t site_bytes,
                             std::function<std::string(const std::string&)> site_url_of,
                             pictures_callback on_pictures)
    : impl_(std::make_shared<impl>(client, store, pool, site_bytes, std::move(site_url_of),
                                   std::move(on_pictures))) {}

site_pictures::~site_pictures() {
  stop();
}

void site_pictures::load() {
  impl_->load();
}

void site_pictures::consider(const news_snapshot& snapshot) {
  impl_->consider(snapshot);
}

std::optional<stored_picture> site_pictures::served(std::string_view name) const {
  if (!impl_->store || !is_picture_name(name))
    return std::nullopt;
  auto stored = impl_->store->picture(name);
  if (!stored || !stored->has_image())
    return std::nullopt;
  return stored;
}

void site_pictures::stop() {
  impl_->stopped = true;
}

} // namespace newsdesk::server
