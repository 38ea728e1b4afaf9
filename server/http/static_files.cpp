#include "server/http/static_files.hpp"

#include <chrono>
#include <fstream>
#include <stdexcept>

namespace newsdesk::server {

namespace fs = std::filesystem;

namespace {

// Decodes %XX; nullopt for malformed escapes or a decoded NUL.
std::optional<std::string> percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size())
      return std::nullopt;
    int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
      return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// Every segment must be a plain name: not empty, not "." or "..", not hidden, no backslash.
bool safe_relative_path(std::string_view path) {
  if (path.empty())
    return false;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    auto segment = path.substr(start, end - start);
    if (segment.empty() || segment.front() == '.' || segment.find('\\') != std::string_view::npos)
      return false;
    start = end + 1;
  }
  return true;
}

} // namespace

std::string_view mime_type_for(std::string_view filename) {
  auto dot = filename.rfind('.');
  auto ext = dot == std::string_view::npos ? std::string_view{} : filename.substr(dot + 1);
  static constexpr std::pair<std::string_view, std::string_view> types[] = {
      {"css", "text/css; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"html", "text/html; charset=utf-8"},
      {"txt", "text/plain; charset=utf-8"},
      {"json", "application/json"},
      {"webmanifest", "application/manifest+json"},
      {"svg", "image/svg+xml"},
      {"png", "image/png"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"ico", "image/x-icon"},
      {"woff2", "font/woff2"},
      {"woff", "font/woff"},
      {"map", "application/json"},
  };
  for (const auto& [e, type] : types)
    if (iequals(e, ext))
      return type;
  return "application/octet-stream";
}

static_files::static_files(const fs::path& root) {
  std::error_code ec;
  root_ = fs::canonical(root, ec);
  if (ec || !fs::is_directory(root_))
    throw std::runtime_error("static folder " + root.string() +
                             " does not exist (set --static or NEWSDESK_STATIC_DIR)");
}

http_response static_files::serve(std::string_view relative, const http_request& request) const {
  auto decoded = percent_decode(relative);
  if (!decoded || !safe_relative_path(*decoded))
    return text_response(404);
  std::error_code ec;
  auto path = fs::canonical(root_ / *decoded, ec);
  // canonical() resolves symlinks: the result must still lie inside the folder.
  if (ec)
    return text_response(404);
  auto rel = path.lexically_relative(root_);
  if (rel.empty() || *rel.begin() == "..")
    return text_response(404);
  auto status = fs::status(path, ec);
  if (ec || !fs::is_regular_file(status))
    return text_response(404);
  auto size = fs::file_size(path, ec);
  auto mtime = fs::last_write_time(path, ec);
  if (ec || size > max_file_bytes)
    return text_response(404);

  // Each file is read and compressed once, and again only when its size or time changes (an
  // edited stylesheet is served at once, without a reload).
  std::shared_ptr<const representation> r;
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(path.string());
        it != cache_.end() && it->second.size == size && it->second.mtime == mtime)
      r = it->second.bytes;
  }
  if (!r) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return text_response(404);
    std::string bytes(size, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<std::size_t>(in.gcount()));
    const auto modified = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::file_clock::to_sys(mtime).time_since_epoch())
                              .count();
    r = representation::make(std::string(mime_type_for(path.filename().string())), bytes, modified,
                             "public, max-age=300");
    std::lock_guard lock(mutex_);
    if (cache_.size() >= max_cached_files)
      cache_.clear();
    cache_[path.string()] = {size, mtime, r};
  }
  return r->respond(request);
}

} // namespace newsdesk::server
