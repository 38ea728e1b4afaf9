#include "server/core/log.hpp"
#include "server/news/headline_store.hpp"
#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

namespace newsdesk::server {

std::unique_ptr<headline_store> open_store(const std::string& location, store_options options) {
  if (is_postgres_url(location))
    return postgres_store::open(location, std::move(options));
  auto store = sqlite_store::open(location, std::move(options));
  // A new file where a store was expected (moved, deleted, a typo in the path) starts every
  // site's headlines over with new first_seen times: said at once, not found out later.
  if (store->created())
    log_warn("msg=\"created a new, empty store: no store file was there\" store=" +
             logfmt_quoted(location) +
             " hint=\"if one was expected there, it was moved or deleted; headlines start over\"");
  return store;
}

} // namespace newsdesk::server
