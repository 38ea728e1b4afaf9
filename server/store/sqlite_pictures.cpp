// The SQLite store's pictures (server/pictures/): one record per source URL, bodies kept within
// each site's bytes. Pictures are a few per refresh at most: statements are prepared per call.
#include "server/store/sqlite_store_impl.hpp"

namespace newsdesk::server {

namespace {

// The columns every picture read selects, in this order (picture_of reads them); the last is the
// body or its length.
constexpr const char* picture_columns =
    "source, site, name, content_type, width, height, tried_ms, error";

std::string text(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : std::string();
}

stored_picture picture_of(sqlite3_stmt* s, bool with_body) {
  stored_picture p;
  p.source = text(s, 0);
  p.site = text(s, 1);
  p.name = text(s, 2);
  p.content_type = text(s, 3);
  p.width = sqlite3_column_int(s, 4);
  p.height = sqlite3_column_int(s, 5);
  p.tried_ms = sqlite3_column_int64(s, 6);
  p.error = text(s, 7);
  if (with_body) {
    const auto* bytes = sqlite3_column_blob(s, 8);
    p.body.assign(bytes ? static_cast<const char*>(bytes) : "",
                  static_cast<std::size_t>(sqlite3_column_bytes(s, 8)));
  }
  return p;
}

} // namespace

std::vector<std::string> sqlite_store::record_picture(const stored_picture& picture,
                                                      std::size_t site_bytes) {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  if (picture.site.empty() || picture.site.size() > store_limits::max_site_bytes)
    throw store_error("headline store " + d.file.string() + ": site name must be 1 to " +
                      std::to_string(store_limits::max_site_bytes) + " bytes");
  return d.transaction([&] {
    {
      impl::statement s;
      d.prepare(s, "INSERT INTO pictures (source, site, name, content_type, body, width, height, "
                   "tried_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT "
                   "(source) DO UPDATE SET site = excluded.site, name = excluded.name, "
                   "content_type = excluded.content_type, body = excluded.body, width = "
                   "excluded.width, height = excluded.height, tried_ms = excluded.tried_ms, "
                   "error = excluded.error");
      d.bind(s.stmt, 1, picture.source);
      d.bind(s.stmt, 2, picture.site);
      d.bind(s.stmt, 3, picture.name);
      d.bind(s.stmt, 4, picture.content_type);
      if (sqlite3_bind_blob64(s.stmt, 5, picture.body.data(), picture.body.size(),
                              SQLITE_TRANSIENT) != SQLITE_OK)
        d.fail("cannot bind a value");
      d.bind(s.stmt, 6, std::int64_t{picture.width});
      d.bind(s.stmt, 7, std::int64_t{picture.height});
      d.bind(s.stmt, 8, picture.tried_ms);
      d.bind(s.stmt, 9, picture.error);
      d.step(s.stmt, "cannot record a picture");
    }
    // The newest first: those past the site's bytes lose their bodies.
    impl::statement s;
    d.prepare(s, "UPDATE pictures SET name = '', content_type = '', body = x'', width = 0, "
                 "height = 0, error = ?3 WHERE source IN (SELECT source FROM (SELECT source, "
                 "sum(length(body)) OVER (ORDER BY tried_ms DESC, source) AS total FROM pictures "
                 "WHERE site = ?1 AND name <> '') WHERE total > ?2) RETURNING source");
    d.bind(s.stmt, 1, picture.site);
    d.bind(s.stmt, 2, static_cast<std::int64_t>(site_bytes));
    d.bind(s.stmt, 3,
           "dropped: the site's pictures were over " + std::to_string(site_bytes) + " bytes");
    std::vector<std::string> dropped;
    while (d.step(s.stmt, "cannot keep pictures within their bytes"))
      dropped.push_back(impl::text_column(s.stmt, 0));
    return dropped;
  });
}

std::optional<stored_picture> sqlite_store::picture(std::string_view name) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::statement s;
  d.prepare(s, std::string("SELECT ") + picture_columns +
                   ", body FROM pictures WHERE name = ?1 LIMIT 1");
  d.bind(s.stmt, 1, name);
  if (name.empty() || !d.step(s.stmt, "cannot read a picture"))
    return std::nullopt;
  return picture_of(s.stmt, true);
}

std::vector<stored_picture> sqlite_store::pictures() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::statement s;
  d.prepare(s, std::string("SELECT ") + picture_columns + " FROM pictures");
  std::vector<stored_picture> out;
  while (d.step(s.stmt, "cannot read pictures"))
    out.push_back(picture_of(s.stmt, false));
  return out;
}

} // namespace newsdesk::server
