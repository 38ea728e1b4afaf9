// The PostgreSQL store's pictures (server/pictures/): one record per source URL, bodies kept
// within each site's bytes. Bodies travel as hex text (to_hex).
#include "server/store/postgres_store_impl.hpp"

namespace newsdesk::server {

using namespace detail;

namespace {

// The columns every picture read selects, in this order (picture_at reads them).
constexpr const char* picture_columns =
    "source, site, name, content_type, width, height, tried_ms, error";

stored_picture picture_at(const result& r, int row) {
  stored_picture p;
  p.source = text_at(r, row, 0);
  p.site = text_at(r, row, 1);
  p.name = text_at(r, row, 2);
  p.content_type = text_at(r, row, 3);
  p.width = static_cast<int>(int_at(r, row, 4));
  p.height = static_cast<int>(int_at(r, row, 5));
  p.tried_ms = int_at(r, row, 6);
  p.error = text_at(r, row, 7);
  return p;
}

} // namespace

std::vector<std::string> postgres_store::record_picture(const stored_picture& picture,
                                                        std::size_t site_bytes) {
  auto& d = *impl_;
  if (picture.site.empty() || picture.site.size() > store_limits::max_site_bytes)
    throw store_error("headline store " + d.location + ": site name must be 1 to " +
                      std::to_string(store_limits::max_site_bytes) + " bytes");
  return d.transaction([&](PGconn* c) {
    d.run(c,
          "INSERT INTO pictures (source, site, name, content_type, body, width, height, "
          "tried_ms, error) VALUES ($1, $2, $3, $4, decode($5, 'hex'), $6, $7, $8, $9) ON "
          "CONFLICT (source) DO UPDATE SET site = excluded.site, name = excluded.name, "
          "content_type = excluded.content_type, body = excluded.body, width = excluded.width, "
          "height = excluded.height, tried_ms = excluded.tried_ms, error = excluded.error",
          {without_nul(picture.source), picture.site, picture.name, picture.content_type,
           to_hex(picture.body), std::to_string(picture.width), std::to_string(picture.height),
           std::to_string(picture.tried_ms), without_nul(picture.error)},
          "cannot record a picture");
    // The newest first: those past the site's bytes lose their bodies.
    auto r =
        d.run(c,
              "UPDATE pictures SET name = '', content_type = '', body = '', width = 0, "
              "height = 0, error = $3 WHERE source IN (SELECT source FROM (SELECT source, "
              "sum(length(body)) OVER (ORDER BY tried_ms DESC, source) AS total FROM "
              "pictures WHERE site = $1 AND name <> '') AS kept WHERE total > $2::bigint) "
              "RETURNING source",
              {picture.site, std::to_string(site_bytes),
               "dropped: the site's pictures were over " + std::to_string(site_bytes) + " bytes"},
              "cannot keep pictures within their bytes");
    std::vector<std::string> dropped;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      dropped.push_back(text_at(r, i, 0));
    return dropped;
  });
}

std::optional<stored_picture> postgres_store::picture(std::string_view name) const {
  auto& d = *impl_;
  if (name.empty())
    return std::nullopt;
  return d.with_connection([&](PGconn* c) -> std::optional<stored_picture> {
    auto r = d.run(c,
                   (std::string("SELECT ") + picture_columns +
                    ", encode(body, 'hex') FROM pictures WHERE name = $1 LIMIT 1")
                       .c_str(),
                   {without_nul(name)}, "cannot read a picture");
    if (PQntuples(r.get()) == 0)
      return std::nullopt;
    auto p = picture_at(r, 0);
    p.body = from_hex(text_at(r, 0, 8));
    return p;
  });
}

std::vector<stored_picture> postgres_store::pictures() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    auto r = d.run(c, (std::string("SELECT ") + picture_columns + " FROM pictures").c_str(),
                   "cannot read pictures");
    std::vector<stored_picture> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(picture_at(r, i));
    return out;
  });
}

} // namespace newsdesk::server
