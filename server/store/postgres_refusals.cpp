#include "server/store/postgres_refusals.hpp"

#include <array>

namespace newsdesk::server {

bool out_of_connection_slots(std::string_view libpq_message) {
  // PostgreSQL's texts for SQLSTATE 53300: the server is full ("sorry, too many clients
  // already"), only superuser slots are left (the wording changed in PostgreSQL 16, both start
  // the same), or a role's or a database's CONNECTION LIMIT is reached.
  static constexpr std::array<std::string_view, 4> texts{
      "too many clients already", "remaining connection slots are reserved",
      "too many connections for role", "too many connections for database"};
  for (auto text : texts)
    if (libpq_message.find(text) != std::string_view::npos)
      return true;
  return false;
}

std::string out_of_slots_message(std::string_view cause, std::size_t budget) {
  const auto queries = std::to_string(budget - 1);
  return "PostgreSQL has no connection slot left for newsdesk (" + std::string(cause) +
         "): each instance opens up to store_max_connections = " + std::to_string(budget) +
         " connections (" + queries +
         " for queries, 1 to LISTEN); raise the server's max_connections (or the role's or "
         "database's CONNECTION LIMIT) to that many per instance plus every other client, or "
         "lower store_max_connections (NEWSDESK_STORE_MAX_CONNECTIONS, at least 2)";
}

std::string privilege_hint() {
  return " (newsdesk's role creates and alters its tables: it must own the database, or have "
         "CREATE on schema public, e.g. GRANT CREATE ON SCHEMA public TO newsdesk; see README, "
         "\"Several instances on PostgreSQL\")";
}

} // namespace newsdesk::server
