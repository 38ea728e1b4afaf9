// One resource's bytes, built once and served many times the way a CDN edge serves them:
// kept as identity, gzip and brotli (compressed once, by zlib and libbrotli), each with a strong
// ETag, chosen per request by Accept-Encoding (q-values, RFC 9110 section 12.5.3), revalidated
// with If-None-Match / If-Modified-Since (304, no body), and sent with sendfile(2) from memory
// files. Nothing here runs per request but the negotiation and the header checks.
#pragma once

#include "server/http/http_message.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace newsdesk::server {

enum class content_coding { identity, gzip, br };

// How hard to compress: `best` for bytes served many times over before they change (gzip -9,
// brotli 11), `quick` for bytes that change often or are asked for rarely (gzip -6, brotli 5:
// tens of times faster than brotli 11, for a body a few per cent larger).
enum class compression { best, quick };

class representation {
 public:
  // Compresses `bytes` both ways (an encoding that does not make the body smaller is left out).
  // `last_modified_ms` (Unix ms) is when these bytes last changed. CPU-heavy for large bodies
  // (brotli at its best quality): build off the network threads. Every answer carries
  // `cache_control`; a 200 also carries `extra` (a header that could split the response is left
  // out and logged). Both are formatted here, once: respond() copies no header.
  static std::shared_ptr<const representation>
  make(std::string content_type, std::string_view bytes, std::int64_t last_modified_ms,
       std::string_view cache_control = "no-cache", const header_list& extra = {},
       compression effort = compression::best);

  // The strong ETag bytes would get (to tell whether a rebuild changed anything).
  static std::string tag_of(std::string_view bytes);

  const std::string& content_type() const { return content_type_; }
  // The strong ETag of the identity bytes ("\"1a2b...\""); the encoded bodies' tags add "-gz"
  // or "-br" inside the quotes ("-gzq", "-brq" when compressed quick), so a cache never mixes
  // them up.
  const std::string& etag() const { return etag_; }
  std::string etag(content_coding coding) const;
  std::int64_t last_modified_ms() const { return last_modified_ms_; }
  // The body for `coding`; null when that encoding was left out.
  const std::shared_ptr<const memory_file>& body(content_coding coding) const;
  // Bytes held, all encodings together (for caches that count memory).
  std::size_t bytes() const;
  // Whether it was compressed `quick`; polished() is then the same representation compressed
  // at the best effort (same identity bytes and headers; the encoded bodies' tags change). As
  // CPU-heavy as make().
  bool quick() const { return effort_ == compression::quick; }
  std::shared_ptr<const representation> polished() const;

  // The answer to `request`: 200 with the best acceptable encoding, 304 when a validator
  // matches, 406 when no encoding is acceptable. Always with Vary: Accept-Encoding, the ETag,
  // Last-Modified and the Cache-Control given to make(); its extra headers go with a 200 only
  // (a 304 carries just what a cache needs to update its copy).
  http_response respond(const http_request& request) const;

 private:
  representation() = default;
  void format_header_lines(std::string_view cache_control, const header_list& extra);
  struct prepared_lines {
    std::shared_ptr<const std::string> full, not_modified; // for a 200, for a 304
  };
  prepared_lines header_lines_[3]; // by content_coding
  std::string content_type_;
  std::string etag_, etag_gzip_, etag_br_;
  std::int64_t last_modified_ms_ = 0;
  std::string last_modified_; // as an HTTP-date: formatted once, sent many times
  std::shared_ptr<const memory_file> identity_, gzip_, br_;
  compression effort_ = compression::best;
  std::string cache_control_; // as given to make(), for polished()
  header_list extra_;
};

// The coding to send for an Accept-Encoding header value (absent: identity), among those
// available: br before gzip before identity when the client rates them alike, a higher q-value
// first otherwise; "*" covers codings not named; identity is acceptable unless refused
// ("identity;q=0", or "*;q=0" without identity named). Nullopt: nothing acceptable (406).
std::optional<content_coding> negotiate_coding(std::optional<std::string_view> accept_encoding,
                                               bool gzip_available, bool br_available);

// RFC 9110 HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT") for Unix ms, and back (seconds
// precision; nullopt for anything else).
std::string http_date(std::int64_t unix_ms);
std::optional<std::int64_t> parse_http_date(std::string_view text);

// Whether an If-None-Match value ("*", or a list of entity tags, weak or strong) matches `etag`
// (weak comparison, as RFC 9110 section 13.1.2 asks for GET and HEAD).
bool none_match(std::string_view if_none_match, std::string_view etag);

// An image newsdesk keeps and serves itself (a site's icon, a picture): `body` with its `etag`
// and `cache_control`, or 304 when If-None-Match names the ETag; nosniff, and a
// Content-Security-Policy under which the image, opened on its own, runs nothing (its bytes
// were checked; this says it again).
http_response image_response(const http_request& request, std::string_view content_type,
                             std::string_view body, const std::string& etag,
                             const std::string& cache_control);

} // namespace newsdesk::server
