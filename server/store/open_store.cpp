#include "server/news/headline_store.hpp"
#include "server/store/postgres_store.hpp"
#include "server/store/sqlite_store.hpp"

namespace newsdesk::server {

std::unique_ptr<headline_store> open_store(const std::string& location, store_options options) {
  if (is_postgres_url(location))
    return postgres_store::open(location, std::move(options));
  return sqlite_store::open(location, std::move(options));
}

} // namespace newsdesk::server
