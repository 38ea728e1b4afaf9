#include "server/news/site_icons.hpp"

#include "scrapers/registry.hpp"
#include "scrapers/url.hpp"
#include "server/core/log.hpp"
#include "server/http/http_message.hpp"
#include "server/http/representation.hpp"
#include "server/news/headline_store.hpp"
#include "server/render/http_client.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace newsdesk::server {

namespace {

std::string lower_prefix(std::string_view body, std::size_t n) {
  std::string out(body.substr(0, n));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Pixels an image's header declares.
struct image_size {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

std::uint32_t byte_at(std::string_view b, std::size_t at) {
  return static_cast<unsigned char>(b[at]);
}
std::uint32_t big_endian16(std::string_view b, std::size_t at) {
  return byte_at(b, at) << 8 | byte_at(b, at + 1);
}
std::uint32_t big_endian32(std::string_view b, std::size_t at) {
  return big_endian16(b, at) << 16 | big_endian16(b, at + 2);
}
std::uint32_t little_endian16(std::string_view b, std::size_t at) {
  return byte_at(b, at) | byte_at(b, at + 1) << 8;
}
std::uint32_t little_endian24(std::string_view b, std::size_t at) {
  return little_endian16(b, at) | byte_at(b, at + 2) << 16;
}
std::uint32_t little_endian32(std::string_view b, std::size_t at) {
  return little_endian16(b, at) | little_endian16(b, at + 2) << 16;
}

using namespace std::string_view_literals;
constexpr auto png_signature = "\x89PNG\r\n\x1a\n"sv;

// The IHDR chunk comes first in every PNG (ISO 15948 11.2.2).
std::optional<image_size> png_size(std::string_view b) {
  if (b.size() < 24 || b.substr(12, 4) != "IHDR"sv)
    return std::nullopt;
  return image_size{big_endian32(b, 16), big_endian32(b, 20)};
}

// The logical screen descriptor follows the 6-byte signature (GIF89a section 18).
std::optional<image_size> gif_size(std::string_view b) {
  if (b.size() < 10)
    return std::nullopt;
  return image_size{little_endian16(b, 6), little_endian16(b, 8)};
}

// The first frame header (SOF0-SOF15 but DHT, JPG and DAC), found by walking the segments from
// SOI (ITU T.81 B.2); none before the scan starts is no image.
std::optional<image_size> jpeg_size(std::string_view b) {
  std::size_t at = 2;
  while (at + 4 <= b.size()) {
    if (byte_at(b, at) != 0xff)
      return std::nullopt;
    const auto marker = byte_at(b, at + 1);
    if (marker == 0xff) { // fill byte
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { // no length follows
      at += 2;
      continue;
    }
    if (marker == 0xda || marker == 0xd9) // start of scan, end of image
      return std::nullopt;
    const bool frame =
        marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (frame) {
      if (at + 9 > b.size())
        return std::nullopt;
      return image_size{big_endian16(b, at + 7), big_endian16(b, at + 5)};
    }
    at += 2 + big_endian16(b, at + 2);
  }
  return std::nullopt;
}

// The largest of an ICO's entries: each says its size in a byte (0 meaning 256), and may hold a
// whole PNG whose own header is what a browser believes.
std::optional<image_size> ico_size(std::string_view b) {
  const auto entries = little_endian16(b, 4);
  if (entries == 0 || b.size() < 6 + std::size_t{16} * entries)
    return std::nullopt;
  image_size largest;
  for (std::size_t i = 0; i < entries; ++i) {
    const auto entry = 6 + 16 * i;
    image_size size{byte_at(b, entry) == 0 ? 256 : byte_at(b, entry),
                    byte_at(b, entry + 1) == 0 ? 256 : byte_at(b, entry + 1)};
    const std::size_t offset = little_endian32(b, entry + 12);
    if (offset < b.size() && b.substr(offset).starts_with(png_signature)) {
      auto embedded = png_size(b.substr(offset));
      if (!embedded)
        return std::nullopt;
      size = *embedded;
    }
    largest.width = std::max(largest.width, size.width);
    largest.height = std::max(largest.height, size.height);
  }
  return largest;
}

// The first chunk after "WEBP" says which coding and where its size is (RFC 9649 2.5-2.7).
std::optional<image_size> webp_size(std::string_view b) {
  if (b.size() < 30)
    return std::nullopt;
  const auto chunk = b.substr(12, 4);
  if (chunk == "VP8 "sv && b.substr(23, 3) == "\x9d\x01\x2a"sv)
    return image_size{little_endian16(b, 26) & 0x3fff, little_endian16(b, 28) & 0x3fff};
  if (chunk == "VP8L"sv && byte_at(b, 20) == 0x2f) {
    const auto bits = little_endian32(b, 21);
    return image_size{(bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1};
  }
  if (chunk == "VP8X"sv)
    return image_size{little_endian24(b, 24) + 1, little_endian24(b, 27) + 1};
  return std::nullopt;
}

// `type` when `size` is within the limits, else the reason it is refused; `name`: the format's.
icon_check sized(std::string type, std::string_view name, std::optional<image_size> size) {
  if (!size)
    return {"", "its " + std::string(name) + " header is missing or cut short"};
  if (size->width == 0 || size->height == 0 || size->width > site_icon_limits::max_side ||
      size->height > site_icon_limits::max_side)
    return {"", "it declares " + std::to_string(size->width) + " x " +
                    std::to_string(size->height) + " pixels (at most " +
                    std::to_string(site_icon_limits::max_side) + " on a side)"};
  return {std::move(type), ""};
}

} // namespace

icon_check check_icon(std::string_view body) {
  if (body.empty())
    return {"", "the answer is empty"};
  if (body.starts_with(png_signature))
    return sized("image/png", "PNG", png_size(body));
  if (body.starts_with("\0\0\1\0"sv) && body.size() >= 6)
    return sized("image/x-icon", "ICO", ico_size(body));
  if (body.starts_with("GIF87a"sv) || body.starts_with("GIF89a"sv))
    return sized("image/gif", "GIF", gif_size(body));
  if (body.starts_with("\xff\xd8\xff"sv))
    return sized("image/jpeg", "JPEG", jpeg_size(body));
  if (body.size() >= 12 && body.starts_with("RIFF"sv) && body.substr(8, 4) == "WEBP"sv)
    return sized("image/webp", "WebP", webp_size(body));
  // What it is instead, for the log: past a BOM and whitespace, markup says which.
  auto start = body.find_first_not_of(" \t\r\n\xef\xbb\xbf"sv);
  const auto head = lower_prefix(start == std::string_view::npos ? ""sv : body.substr(start), 512);
  if (head.find("<svg") != std::string::npos)
    return {"", "it is an SVG image (refused: it could carry script)"};
  if (head.starts_with("<!doctype html") || head.find("<html") != std::string::npos ||
      head.find("<head") != std::string::npos || head.find("<body") != std::string::npos)
    return {"", "it is an HTML page, not an image"};
  if (head.starts_with("<"))
    return {"", "it is markup, not an image"};
  return {"", "it is not a PNG, ICO, GIF, JPEG or WebP image"};
}

std::string icon_etag(std::string_view body) {
  // FNV-1a, 64 bits: stable across instances and builds, unlike std::hash.
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "\"";
  for (int shift = 60; shift >= 0; shift -= 4)
    out += digits[(h >> shift) & 15];
  return out + "\"";
}

std::string icon_path_site(std::string_view path) {
  constexpr std::string_view prefix = "/sites/", suffix = "/icon";
  if (!path.starts_with(prefix) || !path.ends_with(suffix) ||
      path.size() <= prefix.size() + suffix.size())
    return {};
  auto name = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  if (name.size() > 100 || !scrapers::is_valid_site_name(name))
    return {};
  return std::string(name);
}

http_response icon_response(const site_icon* icon, const http_request& request) {
  if (!icon || !icon->has_image())
    return text_response(404).with_header("Cache-Control", "no-cache");
  const auto cache =
      "public, max-age=" + std::to_string(std::chrono::seconds(std::chrono::hours(24)).count());
  return image_response(request, icon->content_type, icon->body, icon->etag, cache);
}

struct site_icons::impl : std::enable_shared_from_this<impl> {
  http_client& client;
  headline_store* store;
  boost::asio::thread_pool& pool;
  std::function<void(const std::string&, const std::string&)> on_icon;

  std::atomic<bool> stopped{false};
  std::mutex mutex;                          // guards everything below
  std::map<std::string, std::int64_t> tried; // site -> the latest attempt (Unix ms)
  std::map<std::string, std::string> shown;  // site -> the ETag passed to on_icon
  std::map<std::string, std::shared_ptr<const site_icon>> held; // served, by site

  impl(http_client& c, headline_store* s, boost::asio::thread_pool& p,
       std::function<void(const std::string&, const std::string&)> o)
      : client(c)
      , store(s)
      , pool(p)
      , on_icon(std::move(o)) {}

  // One site's attempt: the URLs to try, in order.
  struct attempt {
    std::string site;
    std::vector<std::string> urls;
    std::size_t next = 0;
    int redirects = 0;
    std::int64_t now_ms = 0;
    bool public_only = true; // connect to public addresses only
    std::string error;       // the last URL's failure
  };

  void load() {
    if (!store)
      return;
    std::vector<site_icon> icons;
    try {
      icons = store->icons();
    } catch (const std::exception& e) {
      log_warn("msg=\"cannot read site icons\" error=" + logfmt_quoted(e.what()));
      return;
    }
    std::vector<std::pair<std::string, std::string>> fresh;
    {
      std::lock_guard lock(mutex);
      for (const auto& icon : icons) {
        auto& t = tried[icon.site];
        t = std::max(t, icon.checked_ms);
        if (icon.has_image() && shown[icon.site] != icon.etag) {
          shown[icon.site] = icon.etag;
          fresh.emplace_back(icon.site, icon.etag);
        }
        if (auto h = held.find(icon.site); h != held.end() && h->second->etag != icon.etag)
          held.erase(h); // another instance stored a newer one
      }
    }
    for (const auto& [site, etag] : fresh)
      on_icon(site, etag);
  }

  void fetch(std::shared_ptr<attempt> a, std::string url) {
    http_fetch_options options;
    options.timeout = site_icon_limits::timeout;
    options.max_body_bytes = site_icon_limits::max_bytes;
    options.headers.emplace_back("Accept", "image/png,image/x-icon,image/*;q=0.8");
    options.public_addresses_only = a->public_only;
    options.progress_bytes = 1024; // an icon trickled is not worth its wait
    client.get(url, options, [self = shared_from_this(), a, url](http_fetch_result r) {
      self->on_fetched(a, url, std::move(r));
    });
  }

  void try_next(std::shared_ptr<attempt> a) {
    if (stopped)
      return;
    if (a->next >= a->urls.size())
      return finish(a, {});
    a->redirects = 0;
    auto url = a->urls[a->next++];
    fetch(a, std::move(url));
  }

  // `absent`: the address has no icon (404, 410), which most sites' /favicon.ico fallback
  // says; a note, not a warning, or every such site warns once a day.
  void refuse(const std::shared_ptr<attempt>& a, const std::string& url, std::string why,
              bool absent = false) {
    const auto line = "msg=\"site icon refused\" site=" + a->site + " url=" + logfmt_quoted(url) +
                      " error=" + logfmt_quoted(why);
    if (absent)
      log_info(line);
    else
      log_warn(line);
    a->error = std::move(why);
    try_next(a);
  }

  void on_fetched(const std::shared_ptr<attempt>& a, const std::string& url, http_fetch_result r) {
    if (stopped)
      return;
    if (!r.ok()) {
      if (r.failure == fetch_failure::too_large)
        return refuse(a, url,
                      "the icon is larger than " +
                          std::to_string(site_icon_limits::max_bytes / 1024) + " KB");
      return refuse(a, url, "cannot fetch the icon: " + r.error);
    }
    if (r.status >= 300 && r.status < 400) {
      auto location = r.header("Location");
      if (location.empty())
        return refuse(a, url, "redirected without a Location");
      if (++a->redirects > site_icon_limits::max_redirects)
        return refuse(a, url, "too many redirects");
      auto next = scrapers::url::resolve(url, location);
      if (!next || !scrapers::url::is_http_url(*next))
        return refuse(a, url, "redirected to a non-http(s) address");
      return fetch(a, *next);
    }
    if (r.status != 200)
      return refuse(a, url, "the server answered HTTP " + std::to_string(r.status),
                    r.status == 404 || r.status == 410);
    auto check = check_icon(r.body);
    if (check.content_type.empty())
      return refuse(a, url, std::move(check.error));
    site_icon icon{a->site, check.content_type, std::move(r.body), "", a->now_ms, ""};
    icon.etag = icon_etag(icon.body);
    finish(a, std::move(icon));
  }

  // On the pool: records the attempt (an icon, or the last failure) and passes a new icon on.
  void finish(const std::shared_ptr<attempt>& a, site_icon icon) {
    if (!icon.has_image()) {
      icon.site = a->site;
      icon.checked_ms = a->now_ms;
      icon.error = a->error.empty() ? "no icon address" : a->error;
    }
    boost::asio::post(pool, [self = shared_from_this(), icon = std::move(icon)] {
      if (self->stopped)
        return;
      try {
        self->store->record_icon(icon);
      } catch (const std::exception& e) {
        log_warn("msg=\"cannot store site icon\" site=" + icon.site +
                 " error=" + logfmt_quoted(e.what()));
        return;
      }
      if (!icon.has_image())
        return;
      log_info("msg=\"site icon stored\" site=" + icon.site + " type=" + icon.content_type +
               " bytes=" + std::to_string(icon.body.size()));
      {
        std::lock_guard lock(self->mutex);
        self->shown[icon.site] = icon.etag;
        self->held[icon.site] = std::make_shared<const site_icon>(icon);
      }
      self->on_icon(icon.site, icon.etag);
    });
  }
};

site_icons::site_icons(http_client& client, headline_store* store, boost::asio::thread_pool& pool,
                       std::function<void(const std::string&, const std::string&)> on_icon)
    : impl_(std::make_shared<impl>(client, store, pool, std::move(on_icon))) {}

site_icons::~site_icons() {
  stop();
}

void site_icons::load() {
  impl_->load();
}

void site_icons::refreshed(const std::string& site, const std::string& site_url,
                           std::vector<std::string> urls, std::int64_t now_ms) {
  auto& d = *impl_;
  if (!d.store || urls.empty() || d.stopped)
    return;
  {
    std::lock_guard lock(d.mutex);
    auto& t = d.tried[site];
    if (t != 0 && now_ms - t < std::chrono::milliseconds(site_icon_limits::refetch).count())
      return;
    t = now_ms; // taken: a second refresh meanwhile does not fetch again
  }
  auto a = std::make_shared<impl::attempt>();
  a->site = site;
  a->urls = std::move(urls);
  a->now_ms = now_ms;
  a->public_only = !names_internal_address(site_url);
  d.try_next(std::move(a));
}

std::shared_ptr<const site_icon> site_icons::held(const std::string& site) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  auto it = d.held.find(site);
  return it == d.held.end() ? nullptr : it->second;
}

std::shared_ptr<const site_icon> site_icons::served(const std::string& site) {
  if (auto icon = held(site))
    return icon;
  auto& d = *impl_;
  if (!d.store)
    return nullptr;
  auto stored = d.store->icon(site);
  if (!stored || !stored->has_image())
    return nullptr; // not held: a site without an icon may get one
  auto icon = std::make_shared<const site_icon>(std::move(*stored));
  std::lock_guard lock(d.mutex);
  return d.held.try_emplace(site, icon).first->second;
}

void site_icons::stop() {
  impl_->stopped = true;
}

} // namespace newsdesk::server
