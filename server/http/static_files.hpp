// Serves files under one folder for GET/HEAD /static/<path>: no path traversal (no "..", no
// hidden files, no symlinks out of the folder), MIME types by extension, and, like every
// representation (representation.hpp), precompressed gzip and brotli bodies, strong ETags,
// Last-Modified and 304s, and Cache-Control.
#pragma once

#include "server/http/http_message.hpp"
#include "server/http/representation.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace newsdesk::server {

class static_files {
 public:
  // Throws std::runtime_error naming the folder when it does not exist.
  explicit static_files(const std::filesystem::path& root);

  // `relative` is the part after "/static/", still percent-encoded.
  http_response serve(std::string_view relative, const http_request& request) const;

  // Static assets are small (CSS, JS, icons); 8 MiB stops a stray large file from being read
  // into memory per request.
  static constexpr std::uintmax_t max_file_bytes = 8 * 1024 * 1024;
  // Files kept read and compressed; past it the cache starts over (a static folder holds a
  // stylesheet and a script).
  static constexpr std::size_t max_cached_files = 256;

 private:
  struct cached {
    std::uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    std::shared_ptr<const representation> bytes;
  };
  std::filesystem::path root_;
  mutable std::mutex mutex_; // guards cache_
  mutable std::map<std::string, cached> cache_;
};

// "text/css; charset=utf-8" for "news.css"; "application/octet-stream" when unknown.
std::string_view mime_type_for(std::string_view filename);

} // namespace newsdesk::server
