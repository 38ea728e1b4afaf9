// Pictures made from what a site serves: any JPEG, PNG, GIF or WebP, made at most
// picture_limits::width x max_height (never larger than it was) and saved as WebP without its
// metadata, so a card shows a small picture from newsdesk's own origin whatever the site sent.
//
// The bytes come from servers nobody here controls and are treated as hostile: the format is
// told by the first bytes (never by a Content-Type or a file name), libvips loads only those four
// formats (every other loader blocked, and the "untrusted" ones, at the first call), the header's
// pixels are checked against max_pixels before a single pixel is decoded (a decompression bomb is
// a small file declaring a huge image), and a file that fails to decode is refused. A refusal is
// a result with `error` naming what was wrong, never an exception, never a crash.
//
// Threads: make_picture may be called from any thread, several at once. It is CPU work (tens of
// milliseconds for a large JPEG): callers keep it off the network threads. libvips is set up on
// the first call to run each operation on the calling thread only (no threads of its own) and
// to cache nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace newsdesk::server {

struct picture_limits {
  // Bytes fetched for one picture. News sites' lead images are 50 KB to 1 MB as JPEG or WebP; a
  // 24-megapixel original straight from a camera is 5 to 10 MB. 5 MB keeps the originals a CDN
  // resizes for the page and stops a server that answers with a video or an archive.
  static constexpr std::size_t max_fetch_bytes = 5 * 1024 * 1024;
  // Pixels the header may declare. Decoding takes 3 to 4 bytes a pixel: 40 megapixels (a large
  // camera's full frame) are 160 MB at worst, while a 50 KB PNG declaring 100,000 x 100,000 (a
  // bomb) would be 40 GB.
  static constexpr std::uint64_t max_pixels = 40'000'000;
  // The picture made: a card is at most ~420 CSS pixels wide at 1280 px and a phone's is 358;
  // 480 x 480 at most (its shape kept) is sharp there at 1x and costs 15 to 40 KB as WebP.
  static constexpr int width = 480;
  static constexpr int max_height = 480;
  // WebP quality: 75 is libwebp's default, where photos show no artefacts at this size.
  static constexpr int quality = 75;
  // A picture is worth little waiting: a slow server's is tried no more.
  static constexpr std::chrono::seconds timeout{15};
  // An image URL on a CDN often redirects once (http -> https, a resized variant); more is a
  // loop or a trap.
  static constexpr int max_redirects = 3;
};

// A picture made, or why not.
struct made_picture {
  std::string body;         // WebP bytes; empty when refused
  std::string content_type; // "image/webp"
  std::string name;         // "<32 hex digits of its SHA-256>.webp": where it is served
  int width = 0, height = 0;
  std::string error; // why it was refused ("not an image: HTML", "40000 x 40000 pixels ...")

  bool ok() const { return error.empty(); }
};

// The picture `bytes` make (see above); never throws for any bytes.
made_picture make_picture(std::string_view bytes);

// The format `bytes` begin as ("JPEG", "PNG", "GIF", "WebP"); empty when none of those, and then
// `what` says what they look like instead ("HTML", "SVG", "an empty body", "unknown bytes").
std::string_view image_format(std::string_view bytes, std::string* what = nullptr);

// Whether `name` is one make_picture gives (32 hex digits and ".webp"): a served path's name
// is checked before the store is asked.
bool is_picture_name(std::string_view name);

} // namespace newsdesk::server
